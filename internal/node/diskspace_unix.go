//go:build unix

package node

import "syscall"

// diskSpace returns the free and total bytes of the file system holding
// dir, or zeros when they cannot be read.
func diskSpace(dir string) (free, size int64) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, 0
	}
	return int64(st.Bavail) * int64(st.Bsize), int64(st.Blocks) * int64(st.Bsize)
}
