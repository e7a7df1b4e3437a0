package e2e

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"samsa/internal/testutil"
)

// samsaBin is the path of the samsa binary built once by TestMain.
var samsaBin string

// moduleRoot is the directory holding go.mod.
var moduleRoot string

func TestMain(m *testing.M) {
	tmp, err := os.MkdirTemp("", "samsa-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
	if samsaBin, moduleRoot, err = testutil.SamsaBinary(tmp); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.RemoveAll(tmp)
		os.Exit(1)
	}
	goleak.VerifyTestMain(m, goleak.Cleanup(func(int) { os.RemoveAll(tmp) }))
}
