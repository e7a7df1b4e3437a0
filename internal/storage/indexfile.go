package storage

import (
	"bytes"
	"fmt"
	"os"
	"sync"

	"samsa/internal/vfs"
)

// indexFile is a segment's .index or .timeindex file. The entries live in
// memory (offsetIndex, timeIndex) and the file only mirrors them, so it
// holds a descriptor only between the first write after it was opened and
// the next release: a sealed segment's index files are released when the
// flusher syncs them, and an idle active segment's by the retention pass.
// A broker with many idle partitions thus holds one descriptor per
// segment (its .log), not three (Kafka opens its index files lazily and
// closes idle ones too).
//
// It is safe for concurrent use: mu guards f and is a leaf lock. Writes
// and truncations are serialised by the owning Log's appendMu as before.
type indexFile struct {
	fs   vfs.FS
	path string // the file's name once the segment is in place

	mu sync.Mutex
	f  vfs.File // nil while released
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
	return nil
}

// create makes the file empty (creating it) and releases it.
func (x *indexFile) create() error {
	x.mu.Lock()
	defer x.mu.Unlock()
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

// write appends b, opening the file first when it is released.
func (x *indexFile) write(b []byte) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if err := x.openLocked(); err != nil {
		return err
	}
	if _, err := x.f.Write(b); err != nil {
		return fmt.Errorf("storage: write %s: %w", x.path, err)
	}
	return nil
}

// truncate changes the file's size, opening it first when it is released.
func (x *indexFile) truncate(size int64) error {
	x.mu.Lock()
	defer x.mu.Unlock()
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

// readAllLocked is readAll with mu held; a missing file reads as nil.
func (x *indexFile) readAllLocked() ([]byte, error) {
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

// sync fsyncs the file if it is open; a released file was synced when it
// was released.
func (x *indexFile) sync() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.f == nil {
		return nil
	}
	if err := x.f.Sync(); err != nil {
		return fmt.Errorf("storage: sync %s: %w", x.path, err)
	}
	return nil
}

// release fsyncs and closes the file if it is open. The next write opens
// it again. An error leaves it open: the caller takes the log dir offline.
func (x *indexFile) release() error {
	x.mu.Lock()
	defer x.mu.Unlock()
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

// close closes the file without syncing it.
func (x *indexFile) close() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.f == nil {
		return nil
	}
	err := x.f.Close()
	x.f = nil
	return err
}
