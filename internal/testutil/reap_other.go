//go:build !linux

package testutil

import "os/exec"

// DieWithParent does nothing on this system: it has no parent-death
// signal, so a test binary stopped by its -timeout can leave its child
// processes running.
func DieWithParent(cmd *exec.Cmd) {}
