package testutil

import (
	"os/exec"
	"syscall"
)

// DieWithParent makes cmd's process get SIGKILL when the test process
// dies, so that a test binary stopped by its -timeout (which exits
// without running cleanups) leaves no broker, etcd or client process
// behind. Call it before cmd.Start.
//
// NB: Linux sends the signal when the thread that started the child
// exits; Go keeps its threads unless a goroutine locked to one ends, and
// test code locks none.
func DieWithParent(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}
