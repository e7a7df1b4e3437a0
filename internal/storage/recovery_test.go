package storage

import (
	"bytes"
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"samsa/internal/record"
	"samsa/internal/vfs"
)

// activeLogPath returns the path of l's active segment file.
func activeLogPath(l *Log) string { return l.activeSegment().path(logSuffix) }

func TestReopenAfterCleanClose(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs vfs.FS, dir string) {
		m := openManager(t, fs, dir, nil)
		id := [16]byte{0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}
		l, _ := m.Create(testTP, id, smallConfig())
		want := appendN(t, l, 0, 120, 5000)
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}
		if err := m.Close(); err != nil {
			t.Fatalf("second Close: %v", err)
		}
		if !fileExists(fs, filepath.Join(dir, cleanShutdownFile)) {
			t.Fatal("no clean shutdown marker")
		}
		cp := string(readFileBytes(t, fs, filepath.Join(dir, recoveryPointFile)))
		if wantCp := "0\n1\norders 3 " + itoa(want[len(want)-1].last+1) + "\n"; cp != wantCp {
			t.Fatalf("recovery point checkpoint %q, want %q", cp, wantCp)
		}
		md := string(readFileBytes(t, fs, filepath.Join(dir, "orders-3", metadataFile)))
		if md != "version: 0\ntopic_id: 3q2-7wECAwQFBgcICQoLDA\n" {
			t.Fatalf("partition.metadata %q", md)
		}

		m = openManager(t, fs, dir, nil)
		defer m.Close()
		if fileExists(fs, filepath.Join(dir, cleanShutdownFile)) {
			t.Fatal("clean shutdown marker survives open")
		}
		l = m.Log(testTP)
		if l == nil || l.TopicID() != id {
			t.Fatalf("log after reopen: %v", l)
		}
		l.SetConfig(smallConfig())
		checkLog(t, l, want)
		more := appendN(t, l, 120, 20, 5000)
		checkLog(t, l, append(want, more...))
	})
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

func strconvItoa(v int64) string { return strconv.FormatInt(v, 10) }

func TestRecoveryAfterCrash(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs vfs.FS, dir string) {
		m := openManager(t, fs, dir, nil)
		l, _ := m.Create(testTP, [16]byte{}, smallConfig())
		want := appendN(t, l, 0, 100, 0)
		crash(m)
		m = openManager(t, fs, dir, nil)
		defer m.Close()
		l = m.Log(testTP)
		l.SetConfig(smallConfig())
		checkLog(t, l, want)
		more := appendN(t, l, 100, 10, 0)
		checkLog(t, l, append(want, more...))
	})
}

// D-01: a torn tail of the active segment is cut at the last whole batch.
func TestRecoveryTruncatesTornTail(t *testing.T) {
	for _, tear := range []int{1, 2, 11, 12, 43, 61, 100, 700, 4096} {
		t.Run("tear="+strconvItoa(int64(tear)), func(t *testing.T) {
			forEachFS(t, func(t *testing.T, fs vfs.FS, dir string) {
				cfg := smallConfig()
				cfg.SegmentBytes = 8192
				m := openManager(t, fs, dir, nil)
				l, _ := m.Create(testTP, [16]byte{}, cfg)
				want := appendN(t, l, 0, 100, 0)
				path := activeLogPath(l)
				crash(m)

				data := readFileBytes(t, fs, path)
				cut := max(len(data)-tear, 0)
				writeFileBytes(t, fs, path, data[:cut])
				// Batches wholly before the tear survive: drop from the
				// end the batches that overlap the cut.
				limit := len(concat(want)) - (len(data) - cut)
				var keep []appended
				for end := 0; len(keep) < len(want); {
					end += len(want[len(keep)].bytes)
					if end > limit {
						break
					}
					keep = append(keep, want[len(keep)])
				}

				m = openManager(t, fs, dir, nil)
				defer m.Close()
				l = m.Log(testTP)
				l.SetConfig(cfg)
				checkLog(t, l, keep)
				more := appendN(t, l, 100, 5, 0)
				checkLog(t, l, append(keep, more...))
			})
		})
	}
}

// A flipped byte in the tail makes recovery truncate at that batch.
func TestRecoveryTruncatesAtCRCMismatch(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs vfs.FS, dir string) {
		cfg := smallConfig()
		cfg.SegmentBytes = 1 << 20
		m := openManager(t, fs, dir, nil)
		l, _ := m.Create(testTP, [16]byte{}, cfg)
		want := appendN(t, l, 0, 30, 0)
		path := activeLogPath(l)
		crash(m)
		data := readFileBytes(t, fs, path)
		pos := len(concat(want[:20])) + 70 // inside batch 20's records
		data[pos] ^= 0xff
		writeFileBytes(t, fs, path, data)

		m = openManager(t, fs, dir, nil)
		defer m.Close()
		l = m.Log(testTP)
		checkLog(t, l, want[:20])
	})
}

// D-02: deleted or zeroed index files are rebuilt with identical results.
func TestRecoveryRebuildsIndexes(t *testing.T) {
	edits := map[string]func(t *testing.T, fs vfs.FS, path string){
		"delete": func(t *testing.T, fs vfs.FS, path string) {
			if err := fs.Remove(path); err != nil {
				t.Fatal(err)
			}
		},
		"zero": func(t *testing.T, fs vfs.FS, path string) {
			data := readFileBytes(t, fs, path)
			writeFileBytes(t, fs, path, make([]byte, len(data)+24))
		},
		"truncate": func(t *testing.T, fs vfs.FS, path string) {
			data := readFileBytes(t, fs, path)
			writeFileBytes(t, fs, path, data[:len(data)/2+3])
		},
	}
	for name, edit := range edits {
		t.Run(name, func(t *testing.T) {
			forEachFS(t, func(t *testing.T, fs vfs.FS, dir string) {
				c := newClock(1_000_000)
				m := openManager(t, fs, dir, c)
				cfg := smallConfig()
				cfg.SegmentBytes = 4096
				l, _ := m.Create(testTP, [16]byte{}, cfg)
				want := appendN(t, l, 0, 150, 1000)
				type ts struct {
					off, ts int64
					ok      bool
				}
				lookups := func(l *Log) []ts {
					var out []ts
					for q := int64(900); q < 1000+150*10+20; q += 7 {
						o, tt, ok, err := l.OffsetForTimestamp(q)
						if err != nil {
							t.Fatal(err)
						}
						out = append(out, ts{o, tt, ok})
					}
					mt, mo, ok, err := l.MaxTimestamp()
					if err != nil {
						t.Fatal(err)
					}
					return append(out, ts{mo, mt, ok})
				}
				before := lookups(l)
				if err := m.Close(); err != nil {
					t.Fatal(err)
				}
				pdir := filepath.Join(dir, "orders-3")
				for _, suf := range []string{indexSuffix, timeIndexSuffix} {
					for _, n := range segmentFiles(t, fs, pdir, suf) {
						edit(t, fs, filepath.Join(pdir, n))
					}
				}
				m = openManager(t, fs, dir, c)
				defer m.Close()
				l = m.Log(testTP)
				l.SetConfig(cfg)
				checkLog(t, l, want)
				after := lookups(l)
				for i := range before {
					if before[i] != after[i] {
						t.Fatalf("lookup %d: before %+v, after %+v", i, before[i], after[i])
					}
				}
				for _, n := range segmentFiles(t, fs, pdir, indexSuffix) {
					if name != "truncate" && len(readFileBytes(t, fs, filepath.Join(pdir, n)))%offsetEntrySize != 0 {
						t.Fatalf("%s not rebuilt", n)
					}
				}
			})
		})
	}
}

// D-04: leftovers of interrupted deletes, cleanings and swaps are resolved.
func TestRecoveryResolvesLeftoverFiles(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs vfs.FS, dir string) {
		m := openManager(t, fs, dir, nil)
		l, _ := m.Create(testTP, [16]byte{}, smallConfig())
		want := appendN(t, l, 0, 40, 0)
		pdir := l.Dir()
		logs := segmentFiles(t, fs, pdir, logSuffix)
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}
		// A swap whose original is gone is renamed into place.
		first := filepath.Join(pdir, logs[0])
		if err := fs.Rename(first, first+swapSuffix); err != nil {
			t.Fatal(err)
		}
		// A swap whose original exists is dropped.
		writeFileBytes(t, fs, filepath.Join(pdir, logs[1])+swapSuffix, []byte("garbage"))
		writeFileBytes(t, fs, filepath.Join(pdir, "00000000000000009999.log.deleted"), []byte("x"))
		writeFileBytes(t, fs, filepath.Join(pdir, "00000000000000009999.log.cleaned"), []byte("x"))
		if err := fs.MkdirAll(filepath.Join(dir, "orders-9.0123abcd-delete"), 0o755); err != nil {
			t.Fatal(err)
		}

		m = openManager(t, fs, dir, nil)
		defer m.Close()
		checkLog(t, m.Log(testTP), want)
		names, _ := fs.List(pdir)
		for _, n := range names {
			if strings.HasSuffix(n, swapSuffix) || strings.HasSuffix(n, deletedSuffix) || strings.HasSuffix(n, cleanedSuffix) {
				t.Fatalf("leftover %s", n)
			}
		}
		if fileExists(fs, filepath.Join(dir, "orders-9.0123abcd-delete")) {
			t.Fatal("-delete dir survives")
		}
		if len(m.Logs()) != 1 {
			t.Fatalf("%d logs", len(m.Logs()))
		}
	})
}

func TestDeleteRemovesDirectory(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs vfs.FS, dir string) {
		m := openManager(t, fs, dir, nil)
		defer m.Close()
		l, _ := m.Create(testTP, [16]byte{}, smallConfig())
		appendN(t, l, 0, 10, 0)
		if err := m.Delete(testTP); err != nil {
			t.Fatal(err)
		}
		if m.Log(testTP) != nil || fileExists(fs, l.Dir()) {
			t.Fatal("log survives Delete")
		}
		if _, err := l.Append(makeBatch(t, 1, 1, 0), 0, false, 0); err != ErrClosed {
			t.Fatalf("append after delete: %v", err)
		}
		names, _ := fs.List(dir)
		for _, n := range names {
			if strings.HasPrefix(n, "orders-3") {
				t.Fatalf("leftover %s", n)
			}
		}
		_ = bytes.Equal
	})
}

// A clean log whose index is empty because its batches are few and large
// is trusted as it is; one that lost entries is not.
func TestLoadTrustedIndexEntries(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs vfs.FS, dir string) {
		m := openManager(t, fs, dir, nil)
		defer m.Close()
		cfg := DefaultConfig() // index.interval.bytes 4096
		l, _ := m.Create(testTP, [16]byte{}, cfg)
		big := func(seq int) record.Batch {
			bb := record.NewBuilder(record.CodecNone, 1000)
			bb.Add(record.Record{Value: bytes.Repeat([]byte{byte('a' + seq)}, 20_000)})
			b, err := bb.Build()
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
		if _, err := l.Append(big(0), 1, false, 1000); err != nil {
			t.Fatal(err)
		}
		seg := l.activeSegment()
		if len(seg.index.entries) != 0 {
			t.Fatalf("first batch indexed: %v", seg.index.entries)
		}
		l.appendMu.Lock()
		err := l.loadTrusted(seg, true)
		l.appendMu.Unlock()
		if err != nil {
			t.Fatalf("one 20 kB batch, empty index: %v", err)
		}

		for i := 1; i < 4; i++ {
			if _, err := l.Append(big(i), 1, false, 1000); err != nil {
				t.Fatal(err)
			}
		}
		if n := len(seg.index.entries); n != 3 {
			t.Fatalf("%d index entries for 4 batches of 20 kB, want 3", n)
		}
		l.appendMu.Lock()
		err = l.loadTrusted(seg, true)
		entries := seg.index.entries
		seg.index.entries = entries[:1]
		_, errCut := l.scanTail(seg, true)
		_, errUnchecked := l.scanTail(seg, false)
		seg.index.entries = entries
		l.appendMu.Unlock()
		if err != nil {
			t.Fatalf("complete index: %v", err)
		}
		if !errors.Is(errCut, errBadIndex) {
			t.Fatalf("index missing two entries: err %v, want errBadIndex", errCut)
		}
		if errUnchecked != nil {
			t.Fatalf("scan without the index check: %v", errUnchecked)
		}
	})
}
