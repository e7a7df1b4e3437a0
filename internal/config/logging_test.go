package config

import (
	"errors"
	"log/slog"
	"testing"
)

func TestLogConfigsResolve(t *testing.T) {
	b, err := Load("", []string{"log.format=json", "log.level=WARN", "log.level.overrides=replica=debug, group=error", "log.slow.request.ms=0"})
	if err != nil {
		t.Fatal(err)
	}
	if b.LogFormat != "json" || b.LogLevel != slog.LevelWarn || b.LogSlowRequestMs != 0 {
		t.Fatalf("got format %q level %v slow %d", b.LogFormat, b.LogLevel, b.LogSlowRequestMs)
	}
	if len(b.LogLevelOverrides) != 2 || b.LogLevelOverrides["replica"] != slog.LevelDebug || b.LogLevelOverrides["group"] != slog.LevelError {
		t.Fatalf("overrides %v", b.LogLevelOverrides)
	}
	d, err := Load("", nil)
	if err != nil {
		t.Fatal(err)
	}
	if d.LogFormat != "text" || d.LogLevel != slog.LevelInfo || d.LogSlowRequestMs != 1000 || d.LogLevelOverrides != nil {
		t.Fatalf("defaults: %q %v %d %v", d.LogFormat, d.LogLevel, d.LogSlowRequestMs, d.LogLevelOverrides)
	}
}

func TestLogConfigsRefuseBadValues(t *testing.T) {
	for _, set := range []string{
		"log.format=xml",
		"log.level=loud",
		"log.level.overrides=replica",
		"log.level.overrides=replicas=debug",
		"log.level.overrides=replica=chatty",
		"log.slow.request.ms=-1",
	} {
		if _, err := Load("", []string{set}); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%s: got %v, want ErrInvalidConfig", set, err)
		}
	}
}
