package chaos

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

// samsaBin is the path of the samsa binary built once by TestMain.
var samsaBin string

func TestMain(m *testing.M) {
	tmp, err := os.MkdirTemp("", "samsa-chaos-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		os.Exit(1)
	}
	if err := buildSamsa(tmp); err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		os.RemoveAll(tmp)
		os.Exit(1)
	}
	goleak.VerifyTestMain(m, goleak.Cleanup(func(int) { os.RemoveAll(tmp) }))
}

// buildSamsa runs `go build -o <dir>/samsa ./cmd/samsa` in the module root,
// unless SAMSA_BIN names a binary to test instead.
func buildSamsa(dir string) error {
	if bin := os.Getenv("SAMSA_BIN"); bin != "" {
		abs, err := filepath.Abs(bin)
		if err != nil {
			return err
		}
		samsaBin = abs
		return nil
	}
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return fmt.Errorf("not inside a Go module")
	}
	samsaBin = filepath.Join(dir, "samsa")
	cmd := exec.Command("go", "build", "-o", samsaBin, "./cmd/samsa")
	cmd.Dir = filepath.Dir(gomod)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build ./cmd/samsa: %w\n%s", err, out)
	}
	return nil
}
