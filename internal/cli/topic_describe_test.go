package cli_test

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"samsa/internal/testutil"
)

// TestTopicDescribePrintsKafkaTopicIDAndNoEmptyConfigs checks the header of
// `topic describe` against a real broker: the topic id in the form Kafka's
// tools print (Uuid.toString: URL-safe base64 without padding), and a
// Configs line that says none are set rather than being empty.
func TestTopicDescribePrintsKafkaTopicIDAndNoEmptyConfigs(t *testing.T) {
	b := testutil.StartBroker(t)
	adm := b.Admin()
	testutil.CreateTopic(t, adm, "plain", 1)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	td, err := adm.ListTopics(ctx, "plain")
	if err != nil {
		t.Fatal(err)
	}
	id := td["plain"].ID
	want := base64.RawURLEncoding.EncodeToString(id[:])

	out := mustSamsa(t, b.Addr(), "topic", "describe", "plain")
	lines := strings.Split(out, "\n")
	if !strings.HasPrefix(lines[0], "Topic: plain\tID: "+want+"\t") {
		t.Fatalf("header %q, want the id %s", lines[0], want)
	}
	if strings.ContainsAny(want, "+/=") {
		t.Fatalf("id %s is not URL-safe", want)
	}
	if lines[1] != "Configs: (none)" {
		t.Fatalf("configs line %q, want %q", lines[1], "Configs: (none)")
	}
}
