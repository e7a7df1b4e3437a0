package testutil

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// SamsaBinary returns the samsa binary that the subprocess suites
// (test/e2e, test/chaos) run, and the module root: the binary named by
// SAMSA_BIN if set, else one built with `go build -o <dir>/samsa
// ./cmd/samsa` in the module root.
func SamsaBinary(dir string) (bin, moduleRoot string, err error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", "", fmt.Errorf("not inside a Go module")
	}
	moduleRoot = filepath.Dir(gomod)
	if b := os.Getenv("SAMSA_BIN"); b != "" {
		abs, err := filepath.Abs(b)
		return abs, moduleRoot, err
	}
	bin = filepath.Join(dir, "samsa")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/samsa")
	cmd.Dir = moduleRoot
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", "", fmt.Errorf("go build ./cmd/samsa: %w\n%s", err, out)
	}
	return bin, moduleRoot, nil
}
