//go:build !unix

package cli

// openFileLimit is not read on this platform.
func openFileLimit() uint64 { return 0 }
