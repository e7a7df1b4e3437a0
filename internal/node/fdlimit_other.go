//go:build !unix

package node

// openFileLimit is not read on this platform.
func openFileLimit() uint64 { return 0 }
