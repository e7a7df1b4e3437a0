package vfs

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// eachFS runs f on the OS FS (in a temp dir) and on a MemFS.
func eachFS(t *testing.T, f func(t *testing.T, fs FS, dir string)) {
	t.Run("fs=os", func(t *testing.T) { f(t, Default, t.TempDir()) })
	t.Run("fs=mem", func(t *testing.T) {
		fs := NewMemFS()
		if err := fs.MkdirAll("/data", 0o755); err != nil {
			t.Fatal(err)
		}
		f(t, fs, "/data")
	})
	t.Run("fs=volatile", func(t *testing.T) { f(t, NewVolatile(), t.TempDir()) })
}

func write(t *testing.T, f File, s string) {
	t.Helper()
	if n, err := f.Write([]byte(s)); err != nil || n != len(s) {
		t.Fatalf("Write(%q) = %d, %v", s, n, err)
	}
}

func readAll(t *testing.T, fs FS, name string) string {
	t.Helper()
	f, err := fs.Open(name)
	if err != nil {
		t.Fatalf("Open(%s): %v", name, err)
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		t.Fatalf("read %s: %v", name, err)
	}
	return string(b)
}

func TestFSBehavesLikeTheOS(t *testing.T) {
	eachFS(t, func(t *testing.T, fs FS, dir string) {
		p := filepath.Join(dir, "00.log")
		f, err := fs.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		write(t, f, "hello ")
		write(t, f, "world")
		buf := make([]byte, 5)
		if n, err := f.ReadAt(buf, 6); n != 5 || err != nil || string(buf) != "world" {
			t.Fatalf("ReadAt = %d %v %q", n, err, buf)
		}
		if n, err := f.ReadAt(buf, 8); n != 3 || err != io.EOF {
			t.Fatalf("ReadAt past the end = %d %v", n, err)
		}
		if fi, err := f.Stat(); err != nil || fi.Size() != 11 || fi.IsDir() || fi.Name() != "00.log" {
			t.Fatalf("Stat = %v %v", fi, err)
		}
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
		if err := f.Truncate(5); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		if got := readAll(t, fs, p); got != "hello" {
			t.Fatalf("after truncate %q", got)
		}

		// OpenReadWrite appends and does not truncate.
		f, err = fs.OpenReadWrite(p)
		if err != nil {
			t.Fatal(err)
		}
		write(t, f, "!")
		f.Close()
		if got := readAll(t, fs, p); got != "hello!" {
			t.Fatalf("after append %q", got)
		}
		// Create truncates an existing file.
		f, _ = fs.Create(p)
		write(t, f, "x")
		f.Close()
		if got := readAll(t, fs, p); got != "x" {
			t.Fatalf("after re-create %q", got)
		}

		// Read-only handles refuse writes.
		ro, _ := fs.Open(p)
		if _, err := ro.Write([]byte("no")); err == nil {
			t.Fatal("write on a read-only file succeeded")
		}
		ro.Close()

		if err := fs.MkdirAll(filepath.Join(dir, "sub", "deeper"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := fs.Rename(p, filepath.Join(dir, "sub", "01.log")); err != nil {
			t.Fatal(err)
		}
		names, err := fs.List(dir)
		if err != nil || len(names) != 1 || names[0] != "sub" {
			t.Fatalf("List = %v %v", names, err)
		}
		names, _ = fs.List(filepath.Join(dir, "sub"))
		if len(names) != 2 || names[0] != "01.log" || names[1] != "deeper" {
			t.Fatalf("List sub = %v", names)
		}
		if _, err := fs.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("Stat of renamed-away file: %v", err)
		}
		if _, err := fs.Open(p); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("Open of renamed-away file: %v", err)
		}
		if err := fs.Remove(filepath.Join(dir, "sub")); err == nil {
			t.Fatal("Remove of a non-empty directory succeeded")
		}
		if err := fs.Remove(filepath.Join(dir, "sub", "01.log")); err != nil {
			t.Fatal(err)
		}
		if err := fs.Remove(filepath.Join(dir, "sub", "01.log")); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("second Remove: %v", err)
		}
		if err := fs.SyncDir(dir); err != nil {
			t.Fatal(err)
		}
		if err := fs.RemoveAll(filepath.Join(dir, "sub")); err != nil {
			t.Fatal(err)
		}
		if err := fs.RemoveAll(filepath.Join(dir, "missing")); err != nil {
			t.Fatalf("RemoveAll of a missing dir: %v", err)
		}
		if names, _ := fs.List(dir); len(names) != 0 {
			t.Fatalf("List after RemoveAll = %v", names)
		}
		if _, err := fs.Create(filepath.Join(dir, "nodir", "x")); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("Create in a missing dir: %v", err)
		}
	})
}

func TestMemFileHasNoFd(t *testing.T) {
	f, _ := NewMemFS().Create("a")
	if f.Fd() != ^uintptr(0) {
		t.Fatalf("Fd = %d", f.Fd())
	}
	f.Close()
	if _, err := f.Write([]byte("x")); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("Write after Close: %v", err)
	}
}

func TestCrashCloneKeepsOnlySyncedData(t *testing.T) {
	fs := NewMemFS()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(fs.MkdirAll("/d", 0o755))
	must(fs.SyncDir("/"))

	// synced: fully synced, entry durable.
	synced, _ := fs.Create("/d/synced")
	write(t, synced, "durable")
	must(synced.Sync())
	write(t, synced, " tail lost")
	// truncated after the sync: the clone keeps the synced content.
	trunc, _ := fs.Create("/d/trunc")
	write(t, trunc, "0123456789")
	must(trunc.Sync())
	must(fs.SyncDir("/d"))
	must(trunc.Truncate(2))
	write(t, trunc, "XY")

	// new: synced content but the directory entry never made durable.
	newf, _ := fs.Create("/d/new")
	write(t, newf, "gone")
	must(newf.Sync())
	// renamed: durable under its old name only.
	must(fs.Rename("/d/synced", "/d/renamed"))
	// removed after SyncDir: comes back.
	must(fs.Remove("/d/trunc"))
	// A directory made but not synced in its parent vanishes with its files.
	must(fs.MkdirAll("/e", 0o755))
	ef, _ := fs.Create("/e/f")
	write(t, ef, "x")
	must(ef.Sync())
	must(fs.SyncDir("/e"))

	c := fs.CrashClone()
	names, err := c.List("/d")
	if err != nil || len(names) != 2 || names[0] != "synced" || names[1] != "trunc" {
		t.Fatalf("clone /d = %v %v", names, err)
	}
	if got := readAll(t, c, "/d/synced"); got != "durable" {
		t.Fatalf("synced = %q", got)
	}
	if got := readAll(t, c, "/d/trunc"); got != "0123456789" {
		t.Fatalf("trunc = %q", got)
	}
	if names, _ := c.List("/"); len(names) != 1 || names[0] != "d" {
		t.Fatalf("clone / = %v", names)
	}
	// The source is unchanged.
	if got := readAll(t, fs, "/d/renamed"); got != "durable tail lost" {
		t.Fatalf("source renamed = %q", got)
	}
	if names, _ := fs.List("/d"); len(names) != 2 || names[0] != "new" || names[1] != "renamed" {
		t.Fatalf("source /d = %v", names)
	}
	// Clones are durable and independent: a second crash keeps them, and
	// writing to the clone does not reach the source.
	cf, _ := c.OpenReadWrite("/d/synced")
	write(t, cf, "+more")
	if got := readAll(t, c.CrashClone(), "/d/synced"); got != "durable" {
		t.Fatalf("clone of clone = %q", got)
	}
	if got := readAll(t, fs, "/d/renamed"); got != "durable tail lost" {
		t.Fatalf("source changed by a write to the clone: %q", got)
	}
}

func TestCrashCloneAfterRenameAndSyncDir(t *testing.T) {
	fs := NewMemFS()
	f, _ := fs.Create("x.tmp")
	write(t, f, "checkpoint")
	f.Sync()
	fs.SyncDir("/")
	fs.Rename("x.tmp", "x")
	fs.SyncDir("/")
	c := fs.CrashClone()
	if names, _ := c.List("/"); len(names) != 1 || names[0] != "x" {
		t.Fatalf("clone / = %v", names)
	}
	if got := readAll(t, c, "x"); got != "checkpoint" {
		t.Fatalf("x = %q", got)
	}
}

func TestMemFSConcurrentReadersAndWriter(t *testing.T) {
	fs := NewMemFS()
	w, _ := fs.Create("log")
	const chunk, n = 64, 500
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range n {
			w.Write(bytes.Repeat([]byte{byte(i)}, chunk))
			if i%50 == 0 {
				w.Sync()
			}
		}
	}()
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, _ := fs.Open("log")
			defer r.Close()
			buf := make([]byte, chunk)
			for i := 0; i < n; i++ {
				k, _ := r.ReadAt(buf, int64(i*chunk))
				for _, b := range buf[:k] {
					if b != byte(i) {
						t.Errorf("chunk %d holds byte %d", i, b)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	if fi, _ := w.Stat(); fi.Size() != chunk*n {
		t.Fatalf("size %d", fi.Size())
	}
}

func TestInjector(t *testing.T) {
	inj := NewInjector()
	mem := NewMemFS()
	fs := WithErrors(mem, inj)
	f, err := fs.Create("a")
	if err != nil {
		t.Fatal(err)
	}

	inj.FailWriteAfter(2)
	write(t, f, "1")
	write(t, f, "2")
	for range 2 {
		if n, err := f.Write([]byte("3")); n != 0 || !errors.Is(err, ErrInjected) {
			t.Fatalf("third write = %d, %v", n, err)
		}
	}
	inj.Reset()
	write(t, f, "4")
	if got := readAll(t, mem, "a"); got != "124" {
		t.Fatalf("content %q", got)
	}

	inj.FailSyncAfter(3)
	for i := range 3 {
		if err := f.Sync(); err != nil {
			t.Fatalf("sync %d: %v", i, err)
		}
	}
	if err := f.Sync(); !errors.Is(err, ErrInjected) {
		t.Fatalf("fourth sync: %v", err)
	}
	if inj.Count(OpSync) != 4 {
		t.Fatalf("sync count %d", inj.Count(OpSync))
	}
	inj.Reset()

	inj.ShortWriteAfter(1, 3)
	write(t, f, "5")
	if n, err := f.Write([]byte("abcdef")); n != 3 || !errors.Is(err, ErrInjected) {
		t.Fatalf("short write = %d, %v", n, err)
	}
	if n, err := f.Write([]byte("z")); n != 0 || !errors.Is(err, ErrInjected) {
		t.Fatalf("write after the short one = %d, %v", n, err)
	}
	if got := readAll(t, mem, "a"); got != "1245abc" {
		t.Fatalf("content after short write %q", got)
	}
	inj.Reset()

	ops := []struct {
		op Op
		do func() error
	}{
		{OpSyncDir, func() error { return fs.SyncDir("/") }},
		{OpCreate, func() error { _, err := fs.Create("b"); return err }},
		{OpCreate, func() error { _, err := fs.OpenReadWrite("b"); return err }},
		{OpRename, func() error { return fs.Rename("a", "c") }},
		{OpRemove, func() error { return fs.Remove("a") }},
		{OpTruncate, func() error { return f.Truncate(0) }},
	}
	for _, tt := range ops {
		t.Run(tt.op.String(), func(t *testing.T) {
			inj.FailAfter(tt.op, 0)
			if err := tt.do(); !errors.Is(err, ErrInjected) {
				t.Fatalf("%v: %v", tt.op, err)
			}
			inj.Reset()
		})
	}
	// None of the failed operations had an effect.
	if names, _ := mem.List("/"); len(names) != 1 || names[0] != "a" {
		t.Fatalf("names %v", names)
	}
	if got := readAll(t, mem, "a"); got != "1245abc" {
		t.Fatalf("content %q", got)
	}
}

func TestInjectedSyncFailureLeavesDataUndurable(t *testing.T) {
	mem := NewMemFS()
	inj := NewInjector()
	fs := WithErrors(mem, inj)
	f, _ := fs.Create("seg")
	fs.SyncDir("/")
	write(t, f, "acked")
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	write(t, f, "-not")
	inj.FailSyncAfter(0)
	if err := f.Sync(); !errors.Is(err, ErrInjected) {
		t.Fatalf("sync: %v", err)
	}
	if got := readAll(t, mem.CrashClone(), "seg"); got != "acked" {
		t.Fatalf("after crash %q", got)
	}
}

// TestCutPowerKeepsWhatWasSyncedAndRefusesEverythingAfter: the clone holds
// the synced content only; after the cut, every change of the old MemFS
// fails with ErrPowerCut and reads still work.
func TestCutPowerKeepsWhatWasSyncedAndRefusesEverythingAfter(t *testing.T) {
	fs := NewMemFS()
	if err := fs.MkdirAll("/d", 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := fs.Create("/d/f")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("synced")); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := fs.SyncDir("/d"); err != nil {
		t.Fatal(err)
	}
	if err := fs.SyncDir("/"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("-lost")); err != nil {
		t.Fatal(err)
	}
	clone := fs.CutPower()

	for name, err := range map[string]error{
		"write":    func() error { _, err := f.Write([]byte("x")); return err }(),
		"sync":     f.Sync(),
		"truncate": f.Truncate(0),
		"create":   func() error { _, err := fs.Create("/d/g"); return err }(),
		"rename":   fs.Rename("/d/f", "/d/h"),
		"remove":   fs.Remove("/d/f"),
		"mkdir":    fs.MkdirAll("/e", 0o755),
		"syncdir":  fs.SyncDir("/d"),
	} {
		if !errors.Is(err, ErrPowerCut) {
			t.Errorf("%s after the cut: %v, want ErrPowerCut", name, err)
		}
	}
	buf := make([]byte, 64)
	if n, _ := f.ReadAt(buf, 0); string(buf[:n]) != "synced-lost" {
		t.Errorf("read after the cut: %q", buf[:n])
	}
	g, err := clone.Open("/d/f")
	if err != nil {
		t.Fatalf("clone: %v", err)
	}
	if n, _ := g.ReadAt(buf, 0); string(buf[:n]) != "synced" {
		t.Errorf("clone holds %q, want the synced content", buf[:n])
	}
	if _, err := clone.Create("/d/g"); err != nil {
		t.Errorf("the clone refuses changes: %v", err)
	}
}

func TestDelaySyncsSlowsEverySyncWithinBoundsUntilReset(t *testing.T) {
	t.Parallel()
	inj := NewInjector()
	fs := WithErrors(NewMemFS(), inj)
	f, err := fs.Create("/f")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	inj.DelaySyncs(20*time.Millisecond, 40*time.Millisecond, 1)
	for i := 0; i < 3; i++ {
		start := time.Now()
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d < 20*time.Millisecond {
			t.Fatalf("sync %d took %v, want at least 20ms", i, d)
		}
	}
	inj.Reset()
	start := time.Now()
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d >= 20*time.Millisecond {
		t.Fatalf("sync after Reset took %v", d)
	}
}

// TestVolatileLosesWhatWasNotSyncedWhenTheProcessDies: a second Volatile
// on the same dir is the process started again after kill -9; it sees
// exactly the synced contents, while the first sees everything written.
func TestVolatileLosesWhatWasNotSyncedWhenTheProcessDies(t *testing.T) {
	dir := t.TempDir()
	v := NewVolatile()
	a, b, c := filepath.Join(dir, "a.log"), filepath.Join(dir, "b.log"), filepath.Join(dir, "c.log")
	f, err := v.Create(a)
	if err != nil {
		t.Fatal(err)
	}
	write(t, f, "synced")
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	write(t, f, " lost")
	if got := readAll(t, v, a); got != "synced lost" {
		t.Fatalf("this process reads %q", got)
	}
	if fi, err := v.Stat(a); err != nil || fi.Size() != 11 {
		t.Fatalf("Stat = %v, %v; want size 11", fi, err)
	}
	if fi, err := f.Stat(); err != nil || fi.Size() != 11 {
		t.Fatalf("File.Stat = %v, %v; want size 11", fi, err)
	}
	if f.Fd() != ^uintptr(0) {
		t.Fatalf("Fd = %d: sendfile would read the disk and miss unsynced data", f.Fd())
	}
	g, err := v.OpenReadWrite(b)
	if err != nil {
		t.Fatal(err)
	}
	write(t, g, "never synced")
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, v, b); got != "never synced" {
		t.Fatalf("after close this process reads %q (the page cache keeps it)", got)
	}
	if got := readAll(t, NewVolatile(), a); got != "synced" {
		t.Fatalf("after the process died: %q, want the synced part", got)
	}
	if got := readAll(t, NewVolatile(), b); got != "" {
		t.Fatalf("after the process died: %q, want an empty file", got)
	}

	// Unsynced data follows a rename; a sync after it makes it durable.
	if err := v.Rename(a, c); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, v, c); got != "synced lost" {
		t.Fatalf("after rename this process reads %q", got)
	}
	if got := readAll(t, NewVolatile(), c); got != "synced" {
		t.Fatalf("after rename and death: %q", got)
	}
	write(t, f, "!")
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, NewVolatile(), c); got != "synced lost!" {
		t.Fatalf("after sync: %q", got)
	}
	// A truncation into the synced part reaches the disk at once.
	if err := f.Truncate(3); err != nil {
		t.Fatal(err)
	}
	write(t, f, "c")
	if got := readAll(t, v, c); got != "sync" {
		t.Fatalf("after truncate this process reads %q", got)
	}
	if got := readAll(t, NewVolatile(), c); got != "syn" {
		t.Fatalf("after truncate and death: %q", got)
	}
	if err := v.Remove(c); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Stat(c); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Stat after Remove: %v", err)
	}
	f.Close()
}

// An Injector limited to one directory fails only operations there, with
// the error it was given, and counts nothing elsewhere: one bad disk of
// several.
func TestInjectorOnlyFailsUnderItsDirWithTheGivenError(t *testing.T) {
	inj := NewInjector()
	mem := NewMemFS()
	for _, d := range []string{"/d1", "/d2"} {
		if err := mem.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	fs := WithErrors(mem, inj)
	inj.Only("/d2/")
	inj.FailWith(syscall.EROFS)
	inj.FailWriteAfter(0)
	inj.FailSyncAfter(0)
	f1, err := fs.Create("/d1/a")
	if err != nil {
		t.Fatal(err)
	}
	write(t, f1, "ok")
	if err := f1.Sync(); err != nil {
		t.Fatalf("sync outside the injector's dir: %v", err)
	}
	f2, err := fs.Create("/d2/a")
	if err != nil {
		t.Fatal(err)
	}
	if n, err := f2.Write([]byte("x")); n != 0 || !errors.Is(err, syscall.EROFS) || errors.Is(err, ErrInjected) {
		t.Fatalf("write in the injector's dir = %d, %v; want EROFS", n, err)
	}
	if err := f2.Sync(); !errors.Is(err, syscall.EROFS) {
		t.Fatalf("sync in the injector's dir: %v; want EROFS", err)
	}
	if err := fs.SyncDir("/d2"); err != nil {
		t.Fatalf("syncdir was not armed: %v", err)
	}
	if w, s := inj.Count(OpWrite), inj.Count(OpSync); w != 1 || s != 1 {
		t.Fatalf("counted %d writes, %d syncs; want only those under /d2 (1, 1)", w, s)
	}
	if got := readAll(t, mem, "/d1/a"); got != "ok" {
		t.Fatalf("/d1/a = %q", got)
	}
	inj.FailWith(nil)
	if _, err := f2.Write([]byte("x")); !errors.Is(err, ErrInjected) {
		t.Fatalf("after FailWith(nil): %v; want ErrInjected", err)
	}
}
