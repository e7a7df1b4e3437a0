package config

import (
	"errors"
	"strings"
	"testing"
)

func TestDefaultLoads(t *testing.T) {
	b, err := Load("", nil)
	if err != nil {
		t.Fatal(err)
	}
	if b.NodeID != 0 || len(b.Listeners) != 1 || b.Listeners[0] != (Listener{Name: "PLAINTEXT", Host: "127.0.0.1", Port: 9092}) {
		t.Fatalf("node %d listeners %v", b.NodeID, b.Listeners)
	}
	if b.LogRetentionMs != 168*3600000 || b.LogRollMs != 168*3600000 {
		t.Fatalf("retention %d roll %d", b.LogRetentionMs, b.LogRollMs)
	}
	if b.LogFlushIntervalMs != -1 || b.LogFlushIntervalMessages != 1 {
		t.Fatalf("flush %d %d", b.LogFlushIntervalMs, b.LogFlushIntervalMessages)
	}
	if len(b.Raw) != 0 {
		t.Fatalf("raw %v", b.Raw)
	}
}

func TestUnknownNameMentionsName(t *testing.T) {
	_, err := Load("", []string{"no.such.config=1"})
	if !errors.Is(err, ErrUnknownConfig) || !strings.Contains(err.Error(), "no.such.config") {
		t.Fatalf("err %v", err)
	}
}
