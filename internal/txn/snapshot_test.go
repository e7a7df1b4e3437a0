package txn

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"path"
	"reflect"
	"slices"
	"testing"

	"samsa/internal/vfs"
)

// sampleState returns a state with producers in several shapes: a full
// window, a wrapped sequence, a single batch.
func sampleState() *State {
	s := NewState()
	off := int64(0)
	add := func(pid int64, epoch int16, seq, n int32, now int64) {
		b := Batch{ProducerID: pid, Epoch: epoch, BaseSequence: seq, LastOffsetDelta: n - 1}
		s.Update(b, off, off+int64(n)-1, now-5, now)
		off += int64(n)
	}
	for i := range int32(7) {
		add(1, 0, 3*i, 3, 1000+int64(i))
	}
	add(42, 3, 2147483646, 4, 2000)
	add(7, 32767, 0, 1, 3000)
	// A producer in a transaction, after a marker set its coordinator epoch.
	s.ApplyMarker(Marker{ProducerID: 99, Epoch: 1, Commit: true, CoordinatorEpoch: 4}, off, 3500)
	off++
	s.Update(Batch{ProducerID: 99, Epoch: 1, BaseSequence: 0, LastOffsetDelta: 2, Transactional: true}, off, off+2, 3600, 3601)
	return s
}

func TestSnapshotRoundTrip(t *testing.T) {
	for _, s := range []*State{NewState(), sampleState()} {
		b := s.MarshalSnapshot()
		got, err := UnmarshalSnapshot(b)
		if err != nil {
			t.Fatalf("UnmarshalSnapshot: %v", err)
		}
		if !reflect.DeepEqual(got.Producers(), s.Producers()) {
			t.Fatalf("round trip:\n got %+v\nwant %+v", got.Producers(), s.Producers())
		}
		if again := got.MarshalSnapshot(); !bytes.Equal(again, b) {
			t.Fatalf("re-marshal differs:\n%x\n%x", again, b)
		}
	}
}

func TestSnapshotLayout(t *testing.T) {
	s := NewState()
	s.Update(Batch{ProducerID: 0x0102, Epoch: 3, BaseSequence: 9, LastOffsetDelta: 1, Transactional: true}, 20, 21, 77, 88)
	b := s.MarshalSnapshot()
	want := []byte{
		'S', 'P', 'S', 'D', 0, 2, // magic, version
		0, 0, 0, 0, // crc, checked below
		0, 0, 0, 1, // count
		0, 0, 0, 0, 0, 0, 1, 2, 0, 3, // pid, epoch
		0, 0, 0, 0, 0, 0, 0, 88, // last update
		0xff, 0xff, 0xff, 0xff, // coordinator epoch -1
		0, 0, 0, 0, 0, 0, 0, 20, // current txn first offset
		1,                       // batches
		0, 0, 0, 9, 0, 0, 0, 10, // seqs
		0, 0, 0, 0, 0, 0, 0, 20, 0, 0, 0, 0, 0, 0, 0, 21, // offsets
		0, 0, 0, 0, 0, 0, 0, 77, // timestamp
	}
	if len(b) != len(want) {
		t.Fatalf("len = %d, want %d: %x", len(b), len(want), b)
	}
	if got, want := binary.BigEndian.Uint32(b[6:10]), crc32.Checksum(b[10:], crc32.MakeTable(crc32.Castagnoli)); got != want {
		t.Fatalf("crc = %#x, want CRC-32C of bytes [10, end) = %#x", got, want)
	}
	copy(b[6:10], []byte{0, 0, 0, 0})
	if !bytes.Equal(b, want) {
		t.Fatalf("layout:\n got %x\nwant %x", b, want)
	}
}

// TestUnmarshalSnapshotReadsVersion1 reads a snapshot written before
// transactions: its producers have no open transaction.
func TestUnmarshalSnapshotReadsVersion1(t *testing.T) {
	b := []byte{
		'S', 'P', 'S', 'D', 0, 1, // magic, version 1
		0, 0, 0, 0, // crc
		0, 0, 0, 1, // count
		0, 0, 0, 0, 0, 0, 1, 2, 0, 3, // pid, epoch
		0, 0, 0, 0, 0, 0, 0, 88, 1, // last update, batches
		0, 0, 0, 9, 0, 0, 0, 10, // seqs
		0, 0, 0, 0, 0, 0, 0, 20, 0, 0, 0, 0, 0, 0, 0, 21, // offsets
		0, 0, 0, 0, 0, 0, 0, 77, // timestamp
	}
	s, err := UnmarshalSnapshot(withCRC(b))
	if err != nil {
		t.Fatalf("UnmarshalSnapshot: %v", err)
	}
	want := []Producer{{ID: 0x0102, Epoch: 3, LastUpdateMs: 88, CoordinatorEpoch: -1, CurrentTxnFirstOffset: -1,
		Batches: []BatchMeta{{FirstSeq: 9, LastSeq: 10, FirstOffset: 20, LastOffset: 21, Timestamp: 77}}}}
	if got := s.Producers(); !reflect.DeepEqual(got, want) {
		t.Fatalf("producers:\n got %+v\nwant %+v", got, want)
	}
	if off, ok := s.FirstUnstableOffset(); ok {
		t.Fatalf("FirstUnstableOffset = %d, want none", off)
	}
	// Written again, it is a version 2 snapshot of the same state.
	again, err := UnmarshalSnapshot(s.MarshalSnapshot())
	if err != nil || !reflect.DeepEqual(again.Producers(), want) {
		t.Fatalf("v2 round trip: %v %+v", err, again.Producers())
	}
}

// TestUnmarshalSnapshotRejectsEveryFlippedByte flips each byte in turn: the
// CRC, magic or version must catch every one.
func TestUnmarshalSnapshotRejectsEveryFlippedByte(t *testing.T) {
	good := sampleState().MarshalSnapshot()
	for i := range good {
		b := slices.Clone(good)
		b[i] ^= 0x5a
		if _, err := UnmarshalSnapshot(b); !errors.Is(err, ErrCorruptSnapshot) {
			t.Fatalf("flip byte %d: err = %v, want ErrCorruptSnapshot", i, err)
		}
	}
}

// withCRC recomputes the CRC so that a test reaches the structural checks.
func withCRC(b []byte) []byte {
	binary.BigEndian.PutUint32(b[6:10], crc32.Checksum(b[crcStart:], castagnoli))
	return b
}

func TestUnmarshalSnapshotRejectsBadStructure(t *testing.T) {
	good := sampleState().MarshalSnapshot()
	// The first producer (pid 1) starts at 14; its coordinator epoch is at
	// 32, its transaction's first offset at 36, its batch count at 44.
	tests := []struct {
		name string
		edit func([]byte) []byte
	}{
		{"empty", func([]byte) []byte { return nil }},
		{"short header", func(b []byte) []byte { return b[:headerSize-1] }},
		{"truncated entry", func(b []byte) []byte { return withCRC(b[:len(b)-1]) }},
		{"trailing byte", func(b []byte) []byte { return withCRC(append(b, 0)) }},
		{"version", func(b []byte) []byte { b[5] = 3; return withCRC(b) }},
		{"version 0", func(b []byte) []byte { b[5] = 0; return withCRC(b) }},
		{"huge count", func(b []byte) []byte { binary.BigEndian.PutUint32(b[10:14], 1<<31); return withCRC(b) }},
		{"count too small", func(b []byte) []byte { binary.BigEndian.PutUint32(b[10:14], 2); return withCRC(b) }},
		{"negative pid", func(b []byte) []byte { b[14] = 0x80; return withCRC(b) }},
		{"negative epoch", func(b []byte) []byte { b[22] = 0x80; return withCRC(b) }},
		{"coordinator epoch below -1", func(b []byte) []byte { binary.BigEndian.PutUint32(b[32:36], 0xfffffffe); return withCRC(b) }},
		{"txn first offset below -1", func(b []byte) []byte { binary.BigEndian.PutUint64(b[36:44], 1<<63); return withCRC(b) }},
		{"window too large", func(b []byte) []byte { b[44] = WindowSize + 1; return withCRC(b) }},
		{"negative seq", func(b []byte) []byte { b[45] = 0x80; return withCRC(b) }},
		{"last offset below first", func(b []byte) []byte {
			binary.BigEndian.PutUint64(b[45+16:], 1<<40)
			return withCRC(b)
		}},
		{"pids out of order", func(b []byte) []byte {
			binary.BigEndian.PutUint64(b[14:22], 1<<40)
			return withCRC(b)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := tt.edit(slices.Clone(good))
			if _, err := UnmarshalSnapshot(b); !errors.Is(err, ErrCorruptSnapshot) {
				t.Fatalf("err = %v, want ErrCorruptSnapshot", err)
			}
		})
	}
}

// forEachFS runs a test on the OS file system under t.TempDir and on MemFS.
func forEachFS(t *testing.T, f func(t *testing.T, fs vfs.FS, dir string)) {
	t.Run("fs=os", func(t *testing.T) { f(t, vfs.Default, t.TempDir()) })
	t.Run("fs=mem", func(t *testing.T) {
		fs := vfs.NewMemFS()
		dir := "/data/topic-0"
		if err := fs.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		f(t, fs, dir)
	})
}

func listNames(t *testing.T, fs vfs.FS, dir string) []string {
	t.Helper()
	names, err := fs.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// stateAt returns a distinct state per offset, so a test can tell which
// snapshot was loaded.
func stateAt(off int64) *State {
	s := NewState()
	s.Update(Batch{ProducerID: off, Epoch: 1, BaseSequence: 0}, off-1, off-1, 0, off)
	return s
}

func TestLoadSnapshotPicksNewestAtOrBelowMaxAndDeletesAbove(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs vfs.FS, dir string) {
		for _, off := range []int64{10, 20, 30, 40} {
			if err := WriteSnapshot(fs, dir, off, stateAt(off)); err != nil {
				t.Fatalf("WriteSnapshot(%d): %v", off, err)
			}
		}
		s, off, ok, err := LoadSnapshot(fs, dir, 35)
		if err != nil || !ok || off != 30 {
			t.Fatalf("LoadSnapshot(35) = off %d, ok %v, err %v; want 30", off, ok, err)
		}
		if !reflect.DeepEqual(s.Producers(), stateAt(30).Producers()) {
			t.Fatalf("loaded %+v, want the state at 30", s.Producers())
		}
		want := []string{SnapshotName(10), SnapshotName(20), SnapshotName(30)}
		if got := listNames(t, fs, dir); !slices.Equal(got, want) {
			t.Fatalf("files = %v, want %v", got, want)
		}
		// A snapshot exactly at maxOffset is usable.
		if _, off, ok, err := LoadSnapshot(fs, dir, 20); err != nil || !ok || off != 20 {
			t.Fatalf("LoadSnapshot(20) = off %d, ok %v, err %v; want 20", off, ok, err)
		}
		if _, _, ok, err := LoadSnapshot(fs, dir, 9); err != nil || ok {
			t.Fatalf("LoadSnapshot(9) = ok %v, err %v; want none", ok, err)
		}
		if got := listNames(t, fs, dir); len(got) != 0 {
			t.Fatalf("files = %v, want none", got)
		}
	})
}

func TestLoadSnapshotSkipsAndDeletesCorrupt(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs vfs.FS, dir string) {
		for _, off := range []int64{10, 20, 30} {
			if err := WriteSnapshot(fs, dir, off, stateAt(off)); err != nil {
				t.Fatal(err)
			}
		}
		// Corrupt 30 by flipping a byte, and truncate 20 to nothing.
		name30 := path.Join(dir, SnapshotName(30))
		b := readAll(t, fs, name30)
		b[len(b)-1] ^= 1
		writeFile(t, fs, name30, b)
		writeFile(t, fs, path.Join(dir, SnapshotName(20)), nil)
		// A torn write left a temporary file and a stray file stays.
		writeFile(t, fs, path.Join(dir, SnapshotName(40)+tmpSuffix), []byte("torn"))
		writeFile(t, fs, path.Join(dir, "00000000000000000000.log"), []byte("log"))

		s, off, ok, err := LoadSnapshot(fs, dir, 100)
		if err != nil || !ok || off != 10 {
			t.Fatalf("LoadSnapshot = off %d, ok %v, err %v; want 10", off, ok, err)
		}
		if !reflect.DeepEqual(s.Producers(), stateAt(10).Producers()) {
			t.Fatalf("loaded %+v, want the state at 10", s.Producers())
		}
		want := []string{"00000000000000000000.log", SnapshotName(10)}
		if got := listNames(t, fs, dir); !slices.Equal(got, want) {
			t.Fatalf("files = %v, want %v", got, want)
		}
	})
}

func TestLoadSnapshotMissingDirHasNone(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs vfs.FS, dir string) {
		_, _, ok, err := LoadSnapshot(fs, path.Join(dir, "absent"), 100)
		if err != nil || ok {
			t.Fatalf("LoadSnapshot = ok %v, err %v; want none", ok, err)
		}
	})
}

func TestPruneSnapshotsKeepsNewest(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs vfs.FS, dir string) {
		for _, off := range []int64{5, 15, 25, 35} {
			if err := WriteSnapshot(fs, dir, off, stateAt(off)); err != nil {
				t.Fatal(err)
			}
		}
		if err := PruneSnapshots(fs, dir, 2); err != nil {
			t.Fatal(err)
		}
		offs, err := SnapshotOffsets(fs, dir)
		if err != nil || !slices.Equal(offs, []int64{25, 35}) {
			t.Fatalf("offsets = %v, %v; want [25 35]", offs, err)
		}
		if err := DeleteSnapshotsAbove(fs, dir, 25); err != nil {
			t.Fatal(err)
		}
		if offs, _ := SnapshotOffsets(fs, dir); !slices.Equal(offs, []int64{25}) {
			t.Fatalf("offsets = %v; want [25]", offs)
		}
		if err := PruneSnapshots(fs, dir, 0); err != nil {
			t.Fatal(err)
		}
		if got := listNames(t, fs, dir); len(got) != 0 {
			t.Fatalf("files = %v, want none", got)
		}
	})
}

// TestWriteSnapshotSurvivesCrash checks that a written snapshot is in the
// crash clone (it was synced, renamed and the directory synced), and that a
// failed sync leaves no snapshot behind.
func TestWriteSnapshotSurvivesCrash(t *testing.T) {
	mem := vfs.NewMemFS()
	dir := "/p"
	if err := mem.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := mem.SyncDir("/"); err != nil {
		t.Fatal(err)
	}
	if err := WriteSnapshot(mem, dir, 7, sampleState()); err != nil {
		t.Fatal(err)
	}
	s, off, ok, err := LoadSnapshot(mem.CrashClone(), dir, 7)
	if err != nil || !ok || off != 7 {
		t.Fatalf("after crash: off %d, ok %v, err %v", off, ok, err)
	}
	if !reflect.DeepEqual(s.Producers(), sampleState().Producers()) {
		t.Fatalf("after crash: state differs")
	}

	inj := vfs.NewInjector()
	inj.FailSyncAfter(0)
	efs := vfs.WithErrors(mem, inj)
	if err := WriteSnapshot(efs, dir, 9, sampleState()); !errors.Is(err, vfs.ErrInjected) {
		t.Fatalf("WriteSnapshot with failing sync = %v, want ErrInjected", err)
	}
	if got := listNames(t, mem, dir); !slices.Equal(got, []string{SnapshotName(7)}) {
		t.Fatalf("files = %v, want only the snapshot at 7", got)
	}
}

func TestSnapshotNameIsKafkas(t *testing.T) {
	if got, want := SnapshotName(1234), "00000000000000001234.snapshot"; got != want {
		t.Fatalf("SnapshotName = %q, want %q", got, want)
	}
	for _, n := range []string{"1234.snapshot", "0000000000000000123x.snapshot", "00000000000000001234.snap", "-0000000000000001234.snapshot"} {
		if off, ok := parseSnapshotName(n); ok {
			t.Fatalf("parseSnapshotName(%q) = %d, true", n, off)
		}
	}
}

func readAll(t *testing.T, fs vfs.FS, name string) []byte {
	t.Helper()
	f, err := fs.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, fi.Size())
	if _, err := f.ReadAt(b, 0); err != nil {
		t.Fatal(err)
	}
	return b
}

func writeFile(t *testing.T, fs vfs.FS, name string, b []byte) {
	t.Helper()
	f, err := fs.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}
