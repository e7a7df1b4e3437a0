package vfs

import (
	"io"
	"os"
)

// File is an open file. Implementations are safe for concurrent ReadAt;
// Write, Truncate and Sync must be serialised by the caller.
type File interface {
	io.Reader
	io.ReaderAt
	io.Writer
	io.Closer
	// Sync makes the file's written data durable (fdatasync on the OS FS).
	Sync() error
	// Truncate changes the file's size.
	Truncate(size int64) error
	// Stat returns the file's info; Size is the current length.
	Stat() (os.FileInfo, error)
	// Fd returns the OS file descriptor, or ^uintptr(0) when the file is not
	// backed by one (memory FS). The fetch path uses it for sendfile.
	Fd() uintptr
}

// FS is the file system that storage uses. Every storage test runs against
// both the OS FS and the memory FS.
type FS interface {
	// Create creates or truncates the named file for reading and writing.
	Create(name string) (File, error)
	// Open opens the named file read-only.
	Open(name string) (File, error)
	// OpenReadWrite opens an existing file, or creates it, for reading and
	// writing without truncating. Writes go to the end of the file.
	OpenReadWrite(name string) (File, error)
	Remove(name string) error
	// RemoveAll removes a directory tree.
	RemoveAll(name string) error
	Rename(oldname, newname string) error
	MkdirAll(dir string, perm os.FileMode) error
	// List returns the names (not paths) of a directory's entries, sorted.
	List(dir string) ([]string, error)
	Stat(name string) (os.FileInfo, error)
	// SyncDir makes a directory's entries (creates, renames, removes) durable.
	SyncDir(dir string) error
}
