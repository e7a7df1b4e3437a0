//go:build !unix

package node

// diskSpace is not measured on this platform.
func diskSpace(string) (free, size int64) { return 0, 0 }
