package vfs

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
)

// Volatile is the operating system's file system with the page cache
// moved into this process: data written to a file stays in memory until
// the file's Sync writes it to disk and fdatasyncs it. A process killed
// with SIGKILL therefore loses every write it had not synced, as a machine
// that loses power loses its page cache, and starts again on exactly what
// it had made durable. It lets a multi-process test cut the power of one
// broker, or of all of them at once, with kill -9 (TESTPLAN S-12, S-13).
//
// Only file contents are volatile: creating, renaming and removing files
// and directories, and truncating a file, reach the disk at once (a real
// file system may also persist them before a directory sync or fsync, so
// recovery must cope with them either way). File.Fd is not available,
// so reads never bypass the in-memory data with sendfile.
//
// It is for tests (`samsa serve` uses it when SAMSA_TEST_VOLATILE_WRITES
// is 1) and keeps every unsynced byte in memory.
type Volatile struct {
	mu    sync.Mutex
	files map[string]*volatileData // by cleaned path
}

// NewVolatile returns an empty Volatile file system.
func NewVolatile() *Volatile { return &Volatile{files: map[string]*volatileData{}} }

// volatileData is one file's contents: its first disk bytes on disk, then
// tail in memory. Files open on it share it; one that was removed or
// replaced keeps it, as an open file descriptor keeps an unlinked file.
type volatileData struct {
	mu   sync.Mutex
	path string // where it is now (renames move it)
	disk int64
	tail []byte
}

// data returns the state of name, loading its size from disk when this
// process has not opened it before. The caller holds v.mu.
func (v *Volatile) data(name string) (*volatileData, error) {
	name = filepath.Clean(name)
	if d := v.files[name]; d != nil {
		return d, nil
	}
	fi, err := os.Stat(name)
	if err != nil {
		return nil, err
	}
	d := &volatileData{path: name, disk: fi.Size()}
	v.files[name] = d
	return d, nil
}

func (v *Volatile) open(name string, flag int) (File, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	f, err := os.OpenFile(name, flag, 0o644)
	if err != nil {
		return nil, err
	}
	d, err := v.data(name)
	if err != nil {
		f.Close()
		return nil, err
	}
	if flag&os.O_TRUNC != 0 {
		d.mu.Lock()
		d.disk, d.tail = 0, nil
		d.mu.Unlock()
	}
	return &volatileFile{f: f, d: d, writable: flag&(os.O_RDWR|os.O_WRONLY) != 0}, nil
}

func (v *Volatile) Create(name string) (File, error) {
	return v.open(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC)
}

func (v *Volatile) Open(name string) (File, error) { return v.open(name, os.O_RDONLY) }

func (v *Volatile) OpenReadWrite(name string) (File, error) {
	return v.open(name, os.O_RDWR|os.O_CREATE)
}

// forget drops the state of name and of everything under it; files still
// open on it keep theirs.
func (v *Volatile) forget(name string) {
	name = filepath.Clean(name)
	for p := range v.files {
		if p == name || strings.HasPrefix(p, name+string(filepath.Separator)) {
			delete(v.files, p)
		}
	}
}

func (v *Volatile) Remove(name string) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if err := os.Remove(name); err != nil {
		return err
	}
	v.forget(name)
	return nil
}

func (v *Volatile) RemoveAll(name string) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if err := os.RemoveAll(name); err != nil {
		return err
	}
	v.forget(name)
	return nil
}

func (v *Volatile) Rename(oldname, newname string) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if err := os.Rename(oldname, newname); err != nil {
		return err
	}
	oldname, newname = filepath.Clean(oldname), filepath.Clean(newname)
	if d := v.files[newname]; d != nil {
		// The rename replaced it.
		v.forget(newname)
	}
	for p, d := range v.files {
		var to string
		switch {
		case p == oldname:
			to = newname
		case strings.HasPrefix(p, oldname+string(filepath.Separator)):
			to = newname + p[len(oldname):]
		default:
			continue
		}
		delete(v.files, p)
		d.mu.Lock()
		d.path = to
		d.mu.Unlock()
		v.files[to] = d
	}
	return nil
}

func (v *Volatile) MkdirAll(dir string, perm os.FileMode) error { return os.MkdirAll(dir, perm) }
func (v *Volatile) List(dir string) ([]string, error)           { return Default.List(dir) }
func (v *Volatile) SyncDir(dir string) error                    { return Default.SyncDir(dir) }

func (v *Volatile) Stat(name string) (os.FileInfo, error) {
	fi, err := os.Stat(name)
	if err != nil || fi.IsDir() {
		return fi, err
	}
	v.mu.Lock()
	d := v.files[filepath.Clean(name)]
	v.mu.Unlock()
	if d == nil {
		return fi, nil
	}
	return sizedInfo{fi, d.size()}, nil
}

func (d *volatileData) size() int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.disk + int64(len(d.tail))
}

// sizedInfo is a FileInfo with the size of the file's contents.
type sizedInfo struct {
	os.FileInfo
	n int64
}

func (i sizedInfo) Size() int64 { return i.n }

// volatileFile is an open file of a Volatile. f is its handle on disk,
// read for the bytes on disk; writes go to d's tail.
type volatileFile struct {
	f        *os.File
	d        *volatileData
	writable bool
	mu       sync.Mutex // guards pos
	pos      int64      // of Read
}

var errVolatileReadOnly = errors.New("vfs: write to a file opened read-only")

func (f *volatileFile) Write(p []byte) (int, error) {
	if !f.writable {
		return 0, errVolatileReadOnly
	}
	f.d.mu.Lock()
	f.d.tail = append(f.d.tail, p...)
	f.d.mu.Unlock()
	return len(p), nil
}

func (f *volatileFile) ReadAt(p []byte, off int64) (int, error) {
	d := f.d
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 0
	if off < d.disk {
		m := min(int64(len(p)), d.disk-off)
		k, err := f.f.ReadAt(p[:m], off)
		n += k
		if k < int(m) {
			if err == nil {
				err = io.ErrUnexpectedEOF
			}
			return n, err
		}
		off += m
	}
	if n < len(p) {
		t := off - d.disk
		if t >= int64(len(d.tail)) {
			return n, io.EOF
		}
		n += copy(p[n:], d.tail[t:])
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (f *volatileFile) Read(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n, err := f.ReadAt(p, f.pos)
	f.pos += int64(n)
	if err == io.EOF && n > 0 {
		err = nil
	}
	return n, err
}

// Sync writes the tail after the bytes on disk, through this file's own
// descriptor (which reaches the file even once it is renamed or removed),
// and fdatasyncs it.
func (f *volatileFile) Sync() error {
	d := f.d
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.tail) > 0 {
		if !f.writable {
			return errVolatileReadOnly
		}
		if _, err := f.f.WriteAt(d.tail, d.disk); err != nil {
			return err
		}
		d.disk += int64(len(d.tail))
		d.tail = nil
	}
	return syscall.Fdatasync(int(f.f.Fd()))
}

// Truncate reaches the disk at once when it cuts into the bytes there.
func (f *volatileFile) Truncate(size int64) error {
	d := f.d
	d.mu.Lock()
	defer d.mu.Unlock()
	switch {
	case size <= d.disk:
		truncate := f.f.Truncate
		if !f.writable {
			truncate = func(size int64) error { return os.Truncate(d.path, size) }
		}
		if err := truncate(size); err != nil {
			return err
		}
		d.disk, d.tail = size, nil
	case size-d.disk <= int64(len(d.tail)):
		d.tail = d.tail[:size-d.disk]
	default:
		d.tail = append(d.tail, make([]byte, size-d.disk-int64(len(d.tail)))...)
	}
	return nil
}

func (f *volatileFile) Stat() (os.FileInfo, error) {
	fi, err := f.f.Stat()
	if err != nil {
		return nil, err
	}
	return sizedInfo{fi, f.d.size()}, nil
}

func (f *volatileFile) Close() error { return f.f.Close() }

func (f *volatileFile) Fd() uintptr { return ^uintptr(0) }
