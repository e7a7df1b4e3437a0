package vfs

import (
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// ErrInjected is the error an Injector injects, wrapped with the operation
// and the path.
var ErrInjected = errors.New("vfs: injected error")

// Op is a kind of operation an Injector can fail.
type Op int

const (
	OpWrite    Op = iota // File.Write
	OpSync               // File.Sync
	OpSyncDir            // FS.SyncDir
	OpCreate             // FS.Create and FS.OpenReadWrite
	OpRename             // FS.Rename
	OpRemove             // FS.Remove and FS.RemoveAll
	OpTruncate           // File.Truncate
	numOps
)

var opNames = [numOps]string{"write", "sync", "syncdir", "create", "rename", "remove", "truncate"}

func (o Op) String() string {
	if o >= 0 && o < numOps {
		return opNames[o]
	}
	return fmt.Sprintf("op(%d)", int(o))
}

// Injector decides which operations of a WithErrors FS fail. Each kind of
// operation is counted from 0; FailAfter(op, n) lets n more such operations
// through and fails every one after that until Reset, the way a disk that
// went bad stays bad. An Injector is safe for concurrent use, and one
// Injector may serve several FSs.
//
//	inj := vfs.NewInjector()
//	fs := vfs.WithErrors(vfs.NewMemFS(), inj)
//	inj.FailSyncAfter(3) // syncs 4, 5, ... fail with ErrInjected
type Injector struct {
	mu struct {
		sync.Mutex
		count [numOps]int64
		// failAt[op] is the count from which op fails; -1: never.
		failAt [numOps]int64
		// shortAt is the write count that is cut short, keeping shortKeep
		// bytes; writes after it fail. -1: never.
		shortAt   int64
		shortKeep int
		// syncMin, syncMax bound the delay before each File.Sync; rnd
		// draws it. syncMax 0: no delay.
		syncMin, syncMax time.Duration
		rnd              *rand.Rand
		// only, when not empty, is the directory whose paths the
		// Injector acts on (Only); others pass untouched and uncounted.
		only string
		// errno is what a failed operation fails with; nil: ErrInjected.
		errno error
	}
}

// Only limits the Injector to paths in dir and below it: operations on
// other paths are neither counted, failed nor delayed, as when one disk of
// several goes bad. An empty dir (the default) means every path. Reset
// keeps it.
func (inj *Injector) Only(dir string) {
	inj.mu.Lock()
	defer inj.mu.Unlock()
	if dir != "" {
		dir = filepath.Clean(dir)
	}
	inj.mu.only = dir
}

// FailWith makes failed operations fail with err (such as syscall.EROFS,
// syscall.EIO or syscall.ENOSPC), wrapped in an *os.PathError, instead of
// ErrInjected. nil restores ErrInjected. Reset keeps it.
func (inj *Injector) FailWith(err error) {
	inj.mu.Lock()
	defer inj.mu.Unlock()
	inj.mu.errno = err
}

// coversLocked reports whether the Injector acts on name.
func (inj *Injector) coversLocked(name string) bool {
	only := inj.mu.only
	if only == "" {
		return true
	}
	name = filepath.Clean(name)
	return name == only || strings.HasPrefix(name, only+string(filepath.Separator))
}

// failure returns the error of a failed op on name; the caller holds mu.
func (inj *Injector) failureLocked(op Op, name string) error {
	err := inj.mu.errno
	if err == nil {
		err = ErrInjected
	}
	return &os.PathError{Op: op.String(), Path: name, Err: err}
}

// NewInjector returns an Injector that injects nothing yet.
func NewInjector() *Injector {
	inj := &Injector{}
	inj.Reset()
	return inj
}

// Reset disarms every injection; the counts keep running.
func (inj *Injector) Reset() {
	inj.mu.Lock()
	defer inj.mu.Unlock()
	for i := range inj.mu.failAt {
		inj.mu.failAt[i] = -1
	}
	inj.mu.shortAt = -1
	inj.mu.syncMin, inj.mu.syncMax = 0, 0
}

// DelaySyncs makes every later File.Sync sleep for a time drawn uniformly
// from [min, max] (from a source seeded with seed) before it syncs: a slow
// disk. The sleep holds no lock of the Injector, so syncs of several
// files wait at once. max <= 0 stops the delays; Reset does too.
func (inj *Injector) DelaySyncs(min, max time.Duration, seed int64) {
	inj.mu.Lock()
	defer inj.mu.Unlock()
	inj.mu.syncMin, inj.mu.syncMax = min, max
	inj.mu.rnd = rand.New(rand.NewSource(seed))
}

// syncDelay draws the delay of one File.Sync of name.
func (inj *Injector) syncDelay(name string) time.Duration {
	inj.mu.Lock()
	defer inj.mu.Unlock()
	lo, hi := inj.mu.syncMin, inj.mu.syncMax
	if hi <= 0 || !inj.coversLocked(name) {
		return 0
	}
	if hi <= lo {
		return hi
	}
	return lo + time.Duration(inj.mu.rnd.Int63n(int64(hi-lo)+1))
}

// FailAfter lets n more operations of kind op succeed, then fails every
// later one with ErrInjected. A failed operation has no effect.
func (inj *Injector) FailAfter(op Op, n int) {
	inj.mu.Lock()
	defer inj.mu.Unlock()
	inj.mu.failAt[op] = inj.mu.count[op] + int64(n)
}

// FailWriteAfter is FailAfter(OpWrite, n).
func (inj *Injector) FailWriteAfter(n int) { inj.FailAfter(OpWrite, n) }

// FailSyncAfter is FailAfter(OpSync, n).
func (inj *Injector) FailSyncAfter(n int) { inj.FailAfter(OpSync, n) }

// ShortWriteAfter lets n more writes through, then cuts the next write
// short: only its first keep bytes (at most all but one) reach the file
// and it returns ErrInjected. Every later write fails with nothing written.
func (inj *Injector) ShortWriteAfter(n, keep int) {
	inj.mu.Lock()
	defer inj.mu.Unlock()
	inj.mu.shortAt = inj.mu.count[OpWrite] + int64(n)
	inj.mu.shortKeep = max(keep, 0)
}

// Count reports how many operations of kind op were attempted.
func (inj *Injector) Count(op Op) int64 {
	inj.mu.Lock()
	defer inj.mu.Unlock()
	return inj.mu.count[op]
}

// check counts one op and reports whether it fails.
func (inj *Injector) check(op Op, name string) error {
	inj.mu.Lock()
	defer inj.mu.Unlock()
	if !inj.coversLocked(name) {
		return nil
	}
	c := inj.mu.count[op]
	inj.mu.count[op]++
	if at := inj.mu.failAt[op]; at >= 0 && c >= at {
		return inj.failureLocked(op, name)
	}
	if op == OpWrite && inj.mu.shortAt >= 0 && c > inj.mu.shortAt {
		return inj.failureLocked(op, name)
	}
	return nil
}

// writeCut counts one write of size bytes and reports how many of them to
// pass on and the error to return.
func (inj *Injector) writeCut(name string, size int) (int, error) {
	inj.mu.Lock()
	c := inj.mu.count[OpWrite]
	short := inj.mu.shortAt >= 0 && c == inj.mu.shortAt && inj.coversLocked(name)
	keep := inj.mu.shortKeep
	failure := inj.failureLocked(OpWrite, name)
	inj.mu.Unlock()
	if err := inj.check(OpWrite, name); err != nil {
		return 0, err
	}
	if short {
		return min(keep, max(size-1, 0)), failure
	}
	return size, nil
}

// WithErrors returns fs with the failures inj decides injected into it.
func WithErrors(fs FS, inj *Injector) FS { return &errorFS{fs: fs, inj: inj} }

type errorFS struct {
	fs  FS
	inj *Injector
}

func (e *errorFS) Create(name string) (File, error) {
	if err := e.inj.check(OpCreate, name); err != nil {
		return nil, err
	}
	f, err := e.fs.Create(name)
	if err != nil {
		return nil, err
	}
	return &errorFile{File: f, inj: e.inj, name: name}, nil
}

func (e *errorFS) Open(name string) (File, error) {
	f, err := e.fs.Open(name)
	if err != nil {
		return nil, err
	}
	return &errorFile{File: f, inj: e.inj, name: name}, nil
}

func (e *errorFS) OpenReadWrite(name string) (File, error) {
	if err := e.inj.check(OpCreate, name); err != nil {
		return nil, err
	}
	f, err := e.fs.OpenReadWrite(name)
	if err != nil {
		return nil, err
	}
	return &errorFile{File: f, inj: e.inj, name: name}, nil
}

func (e *errorFS) Remove(name string) error {
	if err := e.inj.check(OpRemove, name); err != nil {
		return err
	}
	return e.fs.Remove(name)
}

func (e *errorFS) RemoveAll(name string) error {
	if err := e.inj.check(OpRemove, name); err != nil {
		return err
	}
	return e.fs.RemoveAll(name)
}

func (e *errorFS) Rename(oldname, newname string) error {
	if err := e.inj.check(OpRename, oldname); err != nil {
		return err
	}
	return e.fs.Rename(oldname, newname)
}

func (e *errorFS) MkdirAll(dir string, perm os.FileMode) error { return e.fs.MkdirAll(dir, perm) }
func (e *errorFS) List(dir string) ([]string, error)           { return e.fs.List(dir) }
func (e *errorFS) Stat(name string) (os.FileInfo, error)       { return e.fs.Stat(name) }

func (e *errorFS) SyncDir(dir string) error {
	if err := e.inj.check(OpSyncDir, dir); err != nil {
		return err
	}
	return e.fs.SyncDir(dir)
}

// errorFile passes reads through and puts writes, syncs and truncations
// past the Injector.
type errorFile struct {
	File
	inj  *Injector
	name string
}

func (f *errorFile) Write(p []byte) (int, error) {
	keep, ierr := f.inj.writeCut(f.name, len(p))
	if keep == 0 && ierr != nil {
		return 0, ierr
	}
	n, err := f.File.Write(p[:keep])
	if err != nil {
		return n, err
	}
	return n, ierr
}

func (f *errorFile) Sync() error {
	if d := f.inj.syncDelay(f.name); d > 0 {
		time.Sleep(d)
	}
	if err := f.inj.check(OpSync, f.name); err != nil {
		return err
	}
	return f.File.Sync()
}

func (f *errorFile) Truncate(size int64) error {
	if err := f.inj.check(OpTruncate, f.name); err != nil {
		return err
	}
	return f.File.Truncate(size)
}
