package storage

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"

	"samsa/internal/vfs"
)

// indexFile is a segment's .index or .timeindex file. The entries live in
// memory (offsetIndex, timeIndex) and the file only mirrors them, so new
// entries wait in pending, and go to the file when pendingMax bytes of them
// are there (the file opened, written and closed again), when the segment
// is sealed or released, and before any other change of the file. An
// active segment's index files thus hold no descriptor while it takes
// appends, and a broker writing to every one of many partitions holds one
// descriptor per segment (its .log), not three (Kafka opens its index
// files lazily and closes idle ones too). The file lags the entries by at
// most pendingMax bytes; nothing relies on an active segment's index files
// before they are synced (recovery rebuilds them from the log after a
// crash, and a clean close writes them out).
//
// A file the broker cannot open for want of descriptors (EMFILE, ENFILE)
// keeps its entries pending, to be written on a later try: that is a
// shortage of the process, not a fault of the disk, and it must not take
// the log dir offline.
//
// It is safe for concurrent use: mu guards f and pending and is a leaf
// lock. Writes and truncations are serialised by the owning Log's
// appendMu as before.
type indexFile struct {
	fs   vfs.FS
	path string // the file's name once the segment is in place

	mu      sync.Mutex
	f       vfs.File // nil while released
	pending []byte   // entries not yet written to the file
}

// pendingMax is how many bytes of entries wait before they are written: 512
// offset entries, about 2 MiB of log at the default index.interval.bytes.
const pendingMax = 4 << 10

// flushPendingLocked writes the pending entries to the file. A released
// file is opened for it and, unless keep, closed again.
func (x *indexFile) flushPendingLocked(keep bool) error {
	if len(x.pending) == 0 {
		return nil
	}
	opened := false
	if x.f == nil {
		if err := x.openLocked(); err != nil {
			return err
		}
		opened = true
	}
	if _, err := x.f.Write(x.pending); err != nil {
		return fmt.Errorf("storage: write %s: %w", x.path, err)
	}
	x.pending = x.pending[:0]
	if opened && !keep {
		err := x.f.Close()
		x.f = nil
		if err != nil {
			return fmt.Errorf("storage: close %s: %w", x.path, err)
		}
	}
	return nil
}

// outOfDescriptors reports whether err is the process or the system
// running out of file descriptors.
func outOfDescriptors(err error) bool {
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE)
}

// openLocked opens the file for appending, creating it when missing.
func (x *indexFile) openLocked() error {
	if x.f != nil {
		return nil
	}
	f, err := x.fs.OpenReadWrite(x.path)
	if err != nil {
		return fmt.Errorf("storage: %w", err)
	}
	x.f = f
	return nil
}

// openAs opens name (a .cleaned file the cleaner writes before it renames
// it to path) empty and keeps it open until the next release.
func (x *indexFile) openAs(name string) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	f, err := x.fs.OpenReadWrite(name)
	if err != nil {
		return fmt.Errorf("storage: create %s: %w", name, err)
	}
	if err := f.Truncate(0); err != nil {
		f.Close()
		return fmt.Errorf("storage: create %s: %w", name, err)
	}
	x.f = f
	x.pending = x.pending[:0]
	return nil
}

// create makes the file empty (creating it) and releases it.
func (x *indexFile) create() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.pending = x.pending[:0]
	if err := x.openLocked(); err != nil {
		return err
	}
	err := x.f.Truncate(0)
	if cerr := x.f.Close(); err == nil {
		err = cerr
	}
	x.f = nil
	if err != nil {
		return fmt.Errorf("storage: create %s: %w", x.path, err)
	}
	return nil
}

// write appends b: to the pending entries, and those to the file once
// they reach pendingMax.
func (x *indexFile) write(b []byte) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.pending = append(x.pending, b...)
	if len(x.pending) < pendingMax {
		return nil
	}
	if err := x.flushPendingLocked(false); err != nil && !outOfDescriptors(err) {
		return err
	}
	return nil
}

// truncate changes the file's size, opening it first when it is released.
func (x *indexFile) truncate(size int64) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if err := x.flushPendingLocked(true); err != nil {
		return err
	}
	if err := x.openLocked(); err != nil {
		return err
	}
	return x.f.Truncate(size)
}

// rewrite replaces the file's contents with data. A file that already
// holds data is left alone (and closed): recovery rebuilds the indexes
// of every segment it scans, and after a crash most of them were right.
func (x *indexFile) rewrite(data []byte) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if cur, err := x.readAllLocked(); err == nil && bytes.Equal(cur, data) && (len(data) > 0 || cur != nil) {
		return nil
	}
	x.pending = x.pending[:0]
	if err := x.openLocked(); err != nil {
		return err
	}
	if err := x.f.Truncate(0); err != nil {
		return fmt.Errorf("storage: rewrite %s: %w", x.path, err)
	}
	if _, err := x.f.Write(data); err != nil {
		return fmt.Errorf("storage: rewrite %s: %w", x.path, err)
	}
	return nil
}

// readAll returns the file's contents; a missing file reads as empty.
func (x *indexFile) readAll() ([]byte, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.readAllLocked()
}

// readAllLocked is readAll with mu held: the file and the entries pending;
// a missing file without pending entries reads as nil.
func (x *indexFile) readAllLocked() ([]byte, error) {
	b, err := x.readFileLocked()
	if err != nil || len(x.pending) == 0 {
		return b, err
	}
	return append(b, x.pending...), nil
}

func (x *indexFile) readFileLocked() ([]byte, error) {
	if x.f != nil {
		return readAllAt(x.f)
	}
	f, err := x.fs.Open(x.path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("storage: %w", err)
	}
	defer f.Close()
	return readAllAt(f)
}

// sync writes the pending entries and fsyncs the file if it is open; a
// released file without pending entries was synced when it was released.
func (x *indexFile) sync() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if err := x.flushPendingLocked(true); err != nil {
		return err
	}
	if x.f == nil {
		return nil
	}
	if err := x.f.Sync(); err != nil {
		return fmt.Errorf("storage: sync %s: %w", x.path, err)
	}
	return nil
}

// release writes the pending entries, and fsyncs and closes the file if
// it is open. The next write opens it again. An error leaves it open: the
// caller takes the log dir offline.
func (x *indexFile) release() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if err := x.flushPendingLocked(true); err != nil {
		return err
	}
	if x.f == nil {
		return nil
	}
	if err := x.f.Sync(); err != nil {
		return fmt.Errorf("storage: sync %s: %w", x.path, err)
	}
	err := x.f.Close()
	x.f = nil
	if err != nil {
		return fmt.Errorf("storage: close %s: %w", x.path, err)
	}
	return nil
}

// isOpen reports whether the file holds a descriptor.
func (x *indexFile) isOpen() bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.f != nil
}

// close writes the pending entries and closes the file without syncing
// it.
func (x *indexFile) close() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	perr := x.flushPendingLocked(true)
	if x.f == nil {
		return perr
	}
	err := x.f.Close()
	x.f = nil
	return errors.Join(perr, err)
}
