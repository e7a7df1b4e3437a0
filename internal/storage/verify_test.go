package storage

import (
	"bytes"
	"errors"
	"path/filepath"
	"testing"

	"samsa/internal/record"
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

// TestReadChecksBatchesAcrossWindows reads batches smaller and larger than
// the 64 KiB window a read walks the segment through, from every offset
// and with budgets that end mid-window, and checks that a byte damaged
// past a large batch's first window is still found by its CRC.
func TestReadChecksBatchesAcrossWindows(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs vfs.FS, dir string) {
		m := openManager(t, fs, dir, nil)
		cfg := DefaultConfig()
		cfg.FileDeleteDelayMs = 60000
		l, err := m.Create(testTP, [16]byte{}, cfg)
		if err != nil {
			t.Fatal(err)
		}
		var want []appended
		next := int64(0)
		for i, size := range []int{100, 150 << 10, 1 << 10, 70 << 10, 10, 64<<10 - 61, 3 << 10, 200 << 10, 50} {
			bb := record.NewBuilder(record.CodecNone, 1_700_000_000_000)
			bb.Add(record.Record{Key: []byte{byte(i)}, Value: bytes.Repeat([]byte{byte('a' + i)}, size)})
			b, err := bb.Build()
			if err != nil {
				t.Fatal(err)
			}
			b.SetBaseOffset(next)
			if _, err := l.Append(b, 7, false, 0); err != nil {
				t.Fatal(err)
			}
			want = append(want, appended{base: next, last: next, bytes: bytes.Clone(b)})
			next++
		}
		checkLog(t, l, want)
		for _, budget := range []int64{1, 5 << 10, 64 << 10, 100 << 10, 300 << 10} {
			var got []byte
			for off := int64(0); off < next; {
				res, err := l.Read(off, budget, 1<<62, true)
				if err != nil {
					t.Fatalf("budget %d, Read(%d): %v", budget, off, err)
				}
				b, err := res.AppendTo(nil)
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, b...)
				off = res.NextOffset
			}
			if !bytes.Equal(got, concat(want)) {
				t.Fatalf("budget %d: read %d bytes, want %d", budget, len(got), len(concat(want)))
			}
		}

		// Damage the 200 KiB batch 150 KiB in, after a clean restart.
		segs := l.Segments()
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}
		pos := 0
		for _, b := range want[:7] {
			pos += len(b.bytes)
		}
		path := filepath.Join(dir, partitionDir(testTP), segmentName(segs[0].BaseOffset)+logSuffix)
		data := readFileBytes(t, fs, path)
		data[pos+150<<10] ^= 0x01
		writeFileBytes(t, fs, path, data)
		m = openManager(t, fs, dir, nil)
		defer m.Close()
		l = m.Log(testTP)
		_, err = l.Read(want[7].base, 1<<20, 1<<62, true)
		var ce *CorruptBatchError
		if !errors.Is(err, errBadCRC) || !errors.As(err, &ce) || ce.Position != int64(pos) {
			t.Fatalf("Read(%d) = %v, want a CRC mismatch at position %d", want[7].base, err, pos)
		}
		// The batches before it still read.
		got := readBytes(t, l, 0, 1<<30, 1<<62, false)
		if !bytes.Equal(got, concat(want[:7])) {
			t.Fatalf("read before the damage: %d bytes, want %d", len(got), len(concat(want[:7])))
		}
	})
}
