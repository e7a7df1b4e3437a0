package storage

import (
	"errors"
	"path/filepath"
	"testing"

	"samsa/internal/vfs"
)

// TestReadRefusesDamagedBatchOfSealedSegment damages one byte of the
// second batch of a sealed segment across a clean restart (so that
// recovery trusts the files and does not scan them) and checks that a
// read of that batch fails with ErrCorrupt and says where, that a read
// before it returns only the good batches, and that the other segments
// still read back exactly.
func TestReadRefusesDamagedBatchOfSealedSegment(t *testing.T) {
	cases := []struct {
		name string
		// at is the byte of the batch to change, from its start.
		at   func(size int) int
		xor  byte
		want error
	}{
		{"length", func(int) int { return 11 }, 0x40, nil},
		{"magic", func(int) int { return 16 }, 0x01, errBadMagic},
		{"crc", func(int) int { return 18 }, 0x01, errBadCRC},
		{"attributes", func(int) int { return 22 }, 0x08, errBadCRC},
		{"record value", func(size int) int { return size - 3 }, 0x01, errBadCRC},
		{"last offset delta", func(int) int { return 26 }, 0x02, nil},
		{"base offset", func(int) int { return 7 }, 0x01, errBadOffsets},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			forEachFS(t, func(t *testing.T, fs vfs.FS, dir string) {
				m := openManager(t, fs, dir, nil)
				l, err := m.Create(testTP, [16]byte{}, smallConfig())
				if err != nil {
					t.Fatal(err)
				}
				want := appendN(t, l, 0, 40, 1000)
				if l.SegmentCount() < 3 {
					t.Fatalf("%d segments, want 3 or more", l.SegmentCount())
				}
				segs := l.Segments()
				first := segs[0]
				if err := m.Close(); err != nil {
					t.Fatal(err)
				}
				// The second batch of the first (sealed) segment.
				var victim appended
				var pos int
				for i, b := range want {
					if b.base >= segs[1].BaseOffset {
						t.Fatal("first segment holds one batch")
					}
					if i == 1 {
						victim = b
						break
					}
					pos += len(b.bytes)
				}
				path := filepath.Join(dir, partitionDir(testTP), segmentName(first.BaseOffset)+logSuffix)
				data := readFileBytes(t, fs, path)
				data[pos+tc.at(len(victim.bytes))] ^= tc.xor
				writeFileBytes(t, fs, path, data)

				m = openManager(t, fs, dir, nil)
				defer m.Close()
				l = m.Log(testTP)
				_, err = l.Read(victim.base, 1<<20, 1<<62, true)
				var ce *CorruptBatchError
				if !errors.Is(err, ErrCorrupt) || !errors.As(err, &ce) {
					t.Fatalf("Read(%d) = %v, want ErrCorrupt", victim.base, err)
				}
				if tc.want != nil && !errors.Is(err, tc.want) {
					t.Fatalf("Read(%d) = %v, want %v", victim.base, err, tc.want)
				}
				if ce.Position != int64(pos) || ce.Offset > victim.base || ce.Offset < want[0].base || ce.Segment != path {
					t.Fatalf("error says %s position %d offset %d; want %s position %d offset <= %d", ce.Segment, ce.Position, ce.Offset, path, pos, victim.base)
				}
				if m.CorruptBatches() == 0 {
					t.Fatal("CorruptBatches = 0")
				}
				// A read from the first batch stops before the damage.
				got := readBytes(t, l, want[0].base, 1<<20, 1<<62, true)
				if string(got) != string(want[0].bytes) {
					t.Fatalf("read from offset %d: %d bytes, want the first batch (%d)", want[0].base, len(got), len(want[0].bytes))
				}
				// The later segments are intact.
				var rest []appended
				for _, b := range want {
					if b.base >= segs[1].BaseOffset {
						rest = append(rest, b)
					}
				}
				checkLog(t, l, rest)
			})
		})
	}
}
