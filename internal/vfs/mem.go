package vfs

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"
)

// MemFS is an in-memory FS that remembers what was made durable, so that
// tests can simulate a power cut with CrashClone. It is safe for concurrent
// use. Paths are slash separated; relative paths are taken from the root,
// so "a/b" and "/a/b" name the same file.
//
// Durability follows a strict POSIX reading, as pebble's strict MemFS
// does:
//   - a file's bytes are durable up to its last Sync (later writes,
//     truncations and overwrites are not);
//   - a directory's entries (files and directories created, renamed or
//     removed in it, MkdirAll included) are durable as of its last SyncDir.
//
// The root directory always exists.
type MemFS struct {
	// mu guards every node and every open file's position.
	mu   sync.Mutex
	root *memNode
	// cut is set by CutPower: every later change fails.
	cut bool
}

// ErrPowerCut is the error of every change to a MemFS after CutPower.
var ErrPowerCut = errors.New("vfs: power cut")

// memNode is a file or a directory (an inode). Its fields are guarded by
// MemFS.mu.
type memNode struct {
	dir     bool
	modTime time.Time
	// Files. synced is the content as of the last Sync; it may share its
	// backing array with data, so bytes below len(synced) are never
	// modified in place (see writableLocked).
	data   []byte
	synced []byte
	// Directories. durable is the set of entries as of the last SyncDir.
	children map[string]*memNode
	durable  map[string]*memNode
}

func newDir() *memNode {
	return &memNode{dir: true, children: map[string]*memNode{}, durable: map[string]*memNode{}, modTime: time.Now()}
}

// NewMemFS returns an empty MemFS.
func NewMemFS() *MemFS { return &MemFS{root: newDir()} }

var _ FS = (*MemFS)(nil)

// splitPath cleans name into its elements; the root has none.
func splitPath(name string) []string {
	p := path.Clean("/" + strings.ReplaceAll(name, "\\", "/"))
	if p == "/" {
		return nil
	}
	return strings.Split(p[1:], "/")
}

func pathErr(op, name string, err error) error { return &os.PathError{Op: op, Path: name, Err: err} }

// lookupLocked returns the node at name, or nil.
func (fs *MemFS) lookupLocked(name string) *memNode {
	n := fs.root
	for _, e := range splitPath(name) {
		if !n.dir {
			return nil
		}
		if n = n.children[e]; n == nil {
			return nil
		}
	}
	return n
}

// parentLocked returns the directory holding name and name's last element.
func (fs *MemFS) parentLocked(op, name string) (*memNode, string, error) {
	els := splitPath(name)
	if len(els) == 0 {
		return nil, "", pathErr(op, name, syscall.EINVAL)
	}
	dir := fs.root
	for _, e := range els[:len(els)-1] {
		next := dir.children[e]
		if next == nil {
			return nil, "", pathErr(op, name, os.ErrNotExist)
		}
		if !next.dir {
			return nil, "", pathErr(op, name, syscall.ENOTDIR)
		}
		dir = next
	}
	return dir, els[len(els)-1], nil
}

// Create creates or truncates the named file for reading and writing.
func (fs *MemFS) Create(name string) (File, error) {
	return fs.open("create", name, true, true, false)
}

// Open opens the named file read-only.
func (fs *MemFS) Open(name string) (File, error) {
	return fs.open("open", name, false, false, false)
}

// OpenReadWrite opens or creates the named file for reading and appending.
func (fs *MemFS) OpenReadWrite(name string) (File, error) {
	return fs.open("open", name, true, false, true)
}

func (fs *MemFS) open(op, name string, write, trunc, appendMode bool) (File, error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.cut && (write || trunc) {
		return nil, pathErr(op, name, ErrPowerCut)
	}
	dir, base, err := fs.parentLocked(op, name)
	if err != nil {
		return nil, err
	}
	n := dir.children[base]
	switch {
	case n == nil && !write:
		return nil, pathErr(op, name, os.ErrNotExist)
	case n == nil:
		n = &memNode{modTime: time.Now()}
		dir.children[base] = n
		dir.modTime = n.modTime
	case n.dir && write:
		return nil, pathErr(op, name, syscall.EISDIR)
	case trunc:
		n.truncateLocked(0)
	}
	return &memFile{fs: fs, n: n, name: name, write: write, appendMode: appendMode}, nil
}

// writableLocked makes bytes [from, len) of n.data safe to modify in place:
// when they are shared with n.synced, data gets its own copy.
func (n *memNode) writableLocked(from int) {
	if from < len(n.synced) && len(n.data) > 0 && len(n.synced) > 0 && &n.data[0] == &n.synced[0] {
		n.data = bytes.Clone(n.data)
	}
}

func (n *memNode) truncateLocked(size int) {
	if size < len(n.data) {
		n.writableLocked(size)
		n.data = n.data[:size]
	} else {
		n.data = append(n.data, make([]byte, size-len(n.data))...)
	}
	n.modTime = time.Now()
}

// Remove removes a file or an empty directory.
func (fs *MemFS) Remove(name string) error {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.cut {
		return pathErr("remove", name, ErrPowerCut)
	}
	dir, base, err := fs.parentLocked("remove", name)
	if err != nil {
		return err
	}
	n := dir.children[base]
	if n == nil {
		return pathErr("remove", name, os.ErrNotExist)
	}
	if n.dir && len(n.children) > 0 {
		return pathErr("remove", name, syscall.ENOTEMPTY)
	}
	delete(dir.children, base)
	return nil
}

// RemoveAll removes name and everything below it. A missing name is not an
// error.
func (fs *MemFS) RemoveAll(name string) error {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.cut {
		return pathErr("removeall", name, ErrPowerCut)
	}
	if len(splitPath(name)) == 0 {
		clear(fs.root.children)
		return nil
	}
	dir, base, err := fs.parentLocked("removeall", name)
	if err != nil {
		if os.IsNotExist(err) {
			return nil
		}
		return err
	}
	delete(dir.children, base)
	return nil
}

// Rename moves oldname to newname, replacing a file there.
func (fs *MemFS) Rename(oldname, newname string) error {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.cut {
		return pathErr("rename", oldname, ErrPowerCut)
	}
	odir, obase, err := fs.parentLocked("rename", oldname)
	if err != nil {
		return err
	}
	n := odir.children[obase]
	if n == nil {
		return pathErr("rename", oldname, os.ErrNotExist)
	}
	ndir, nbase, err := fs.parentLocked("rename", newname)
	if err != nil {
		return err
	}
	if old := ndir.children[nbase]; old != nil && old != n {
		if old.dir && !n.dir {
			return pathErr("rename", newname, syscall.EISDIR)
		}
		if old.dir && len(old.children) > 0 {
			return pathErr("rename", newname, syscall.ENOTEMPTY)
		}
	}
	delete(odir.children, obase)
	ndir.children[nbase] = n
	return nil
}

// MkdirAll creates dir and any missing parents.
func (fs *MemFS) MkdirAll(dir string, _ os.FileMode) error {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.cut {
		return pathErr("mkdir", dir, ErrPowerCut)
	}
	n := fs.root
	for _, e := range splitPath(dir) {
		next := n.children[e]
		if next == nil {
			next = newDir()
			n.children[e] = next
		} else if !next.dir {
			return pathErr("mkdir", dir, syscall.ENOTDIR)
		}
		n = next
	}
	return nil
}

// MkdirAllDurable creates dir and its parents and makes every level's
// entry durable, as directories that existed on the disk before the
// program started: a test's log dir lives under paths (t.TempDir) that a
// program never creates itself, so a crash must not take them away.
func (fs *MemFS) MkdirAllDurable(dir string) error {
	if err := fs.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if err := fs.SyncDir(d); err != nil {
			return err
		}
		if d == filepath.Dir(d) {
			return nil
		}
	}
}

// List returns the sorted names of dir's entries.
func (fs *MemFS) List(dir string) ([]string, error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	n := fs.lookupLocked(dir)
	if n == nil {
		return nil, pathErr("open", dir, os.ErrNotExist)
	}
	if !n.dir {
		return nil, pathErr("readdirent", dir, syscall.ENOTDIR)
	}
	names := make([]string, 0, len(n.children))
	for name := range n.children {
		names = append(names, name)
	}
	sort.Strings(names)
	return names, nil
}

// Stat describes the named file or directory.
func (fs *MemFS) Stat(name string) (os.FileInfo, error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	n := fs.lookupLocked(name)
	if n == nil {
		return nil, pathErr("stat", name, os.ErrNotExist)
	}
	return n.infoLocked(name), nil
}

// SyncDir makes dir's current entries durable.
func (fs *MemFS) SyncDir(dir string) error {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.cut {
		return pathErr("sync", dir, ErrPowerCut)
	}
	n := fs.lookupLocked(dir)
	if n == nil {
		return pathErr("open", dir, os.ErrNotExist)
	}
	if !n.dir {
		return pathErr("sync", dir, syscall.ENOTDIR)
	}
	n.durable = make(map[string]*memNode, len(n.children))
	for k, v := range n.children {
		n.durable[k] = v
	}
	return nil
}

// CutPower is a power cut: atomically with respect to every other
// operation it returns CrashClone's copy and makes every later change of
// the receiver (a write, sync, truncate, create, rename, remove, mkdir or
// directory sync) fail with ErrPowerCut, so that nothing the program does
// after the cut becomes durable or is reported as such. Reads still
// work. Restart the program on the returned MemFS.
func (fs *MemFS) CutPower() *MemFS {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.cut = true
	return fs.crashCloneLocked()
}

// CrashClone returns a new MemFS holding only what a power cut would leave:
// directory entries as of each directory's last SyncDir (reached through
// durable entries from the root), and file contents as of their last Sync.
// Everything in the clone is durable. The receiver is unchanged, and the
// two share no state.
func (fs *MemFS) CrashClone() *MemFS {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.crashCloneLocked()
}

func (fs *MemFS) crashCloneLocked() *MemFS {
	seen := map[*memNode]*memNode{} // hard links are not possible, but renames race nothing
	var clone func(n *memNode) *memNode
	clone = func(n *memNode) *memNode {
		if c := seen[n]; c != nil {
			return c
		}
		c := &memNode{dir: n.dir, modTime: n.modTime}
		seen[n] = c
		if !n.dir {
			c.data = bytes.Clone(n.synced)
			c.synced = c.data[:len(c.data):len(c.data)]
			return c
		}
		c.children = make(map[string]*memNode, len(n.durable))
		c.durable = make(map[string]*memNode, len(n.durable))
		for k, v := range n.durable {
			cv := clone(v)
			c.children[k] = cv
			c.durable[k] = cv
		}
		return c
	}
	return &MemFS{root: clone(fs.root)}
}

func (n *memNode) infoLocked(name string) os.FileInfo {
	fi := memInfo{name: path.Base("/" + name), modTime: n.modTime, dir: n.dir}
	if !n.dir {
		fi.size = int64(len(n.data))
	}
	return fi
}

type memInfo struct {
	name    string
	size    int64
	dir     bool
	modTime time.Time
}

func (fi memInfo) Name() string       { return fi.name }
func (fi memInfo) Size() int64        { return fi.size }
func (fi memInfo) ModTime() time.Time { return fi.modTime }
func (fi memInfo) IsDir() bool        { return fi.dir }
func (fi memInfo) Sys() any           { return nil }
func (fi memInfo) Mode() os.FileMode {
	if fi.dir {
		return os.ModeDir | 0o755
	}
	return 0o644
}

// memFile is an open MemFS file. Its position is guarded by fs.mu.
type memFile struct {
	fs         *MemFS
	n          *memNode
	name       string
	write      bool
	appendMode bool
	pos        int64
	closed     bool
}

var _ File = (*memFile)(nil)

func (f *memFile) checkLocked(op string, write bool) error {
	if f.closed {
		return pathErr(op, f.name, os.ErrClosed)
	}
	if f.fs.cut && (write || op == "sync") {
		return pathErr(op, f.name, ErrPowerCut)
	}
	if write && !f.write {
		return pathErr(op, f.name, syscall.EBADF)
	}
	return nil
}

func (f *memFile) Read(p []byte) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.checkLocked("read", false); err != nil {
		return 0, err
	}
	if f.pos >= int64(len(f.n.data)) {
		return 0, io.EOF
	}
	k := copy(p, f.n.data[f.pos:])
	f.pos += int64(k)
	return k, nil
}

func (f *memFile) ReadAt(p []byte, off int64) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.checkLocked("read", false); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, pathErr("readat", f.name, syscall.EINVAL)
	}
	if off >= int64(len(f.n.data)) {
		return 0, io.EOF
	}
	k := copy(p, f.n.data[off:])
	if k < len(p) {
		return k, io.EOF
	}
	return k, nil
}

func (f *memFile) Write(p []byte) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.checkLocked("write", true); err != nil {
		return 0, err
	}
	n := f.n
	if f.appendMode {
		f.pos = int64(len(n.data))
	}
	end := int(f.pos) + len(p)
	n.writableLocked(int(f.pos))
	if end > len(n.data) {
		if int(f.pos) > len(n.data) {
			n.data = append(n.data, make([]byte, int(f.pos)-len(n.data))...)
		}
		n.data = append(n.data[:f.pos], p...)
	} else {
		copy(n.data[f.pos:], p)
	}
	f.pos = int64(end)
	n.modTime = time.Now()
	return len(p), nil
}

func (f *memFile) Close() error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if f.closed {
		return pathErr("close", f.name, os.ErrClosed)
	}
	f.closed = true
	return nil
}

// Sync makes the file's current content durable.
func (f *memFile) Sync() error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.checkLocked("sync", false); err != nil {
		return err
	}
	f.n.synced = f.n.data[:len(f.n.data):len(f.n.data)]
	return nil
}

func (f *memFile) Truncate(size int64) error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.checkLocked("truncate", true); err != nil {
		return err
	}
	if size < 0 {
		return pathErr("truncate", f.name, syscall.EINVAL)
	}
	f.n.truncateLocked(int(size))
	return nil
}

func (f *memFile) Stat() (os.FileInfo, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.checkLocked("stat", false); err != nil {
		return nil, err
	}
	return f.n.infoLocked(f.name), nil
}

// Fd returns ^uintptr(0): a MemFS file has no descriptor.
func (f *memFile) Fd() uintptr { return ^uintptr(0) }
