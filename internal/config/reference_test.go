package config

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite docs/configuration.md")

// TestReferenceDoc fails when docs/configuration.md is stale; -update
// rewrites it.
func TestReferenceDoc(t *testing.T) {
	path := filepath.Join("..", "..", "docs", "configuration.md")
	got := Reference()
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./internal/config -update)", err)
	}
	if string(want) != got {
		t.Fatalf("%s is stale; run go test ./internal/config -update", path)
	}
}
