package chaos

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"samsa/internal/testutil"
)

// samsaBin is the path of the samsa binary built once by TestMain.
var samsaBin string

func TestMain(m *testing.M) {
	tmp, err := os.MkdirTemp("", "samsa-chaos-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		os.Exit(1)
	}
	if samsaBin, _, err = testutil.SamsaBinary(tmp); err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		os.RemoveAll(tmp)
		os.Exit(1)
	}
	goleak.VerifyTestMain(m, goleak.Cleanup(func(int) { os.RemoveAll(tmp) }))
}
