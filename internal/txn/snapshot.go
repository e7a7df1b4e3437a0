package txn

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"

	"samsa/internal/vfs"
)

// Snapshot format constants; the layout is drawn in doc.go.
const (
	snapshotMagic = 0x53505344 // "SPSD": samsa producer state data
	// snapshotVersion is the version written. Version 1 (before
	// transactions) is still read: its producers have no open
	// transaction and no coordinator epoch.
	snapshotVersion   = 2
	snapshotVersionV1 = 1

	headerSize   = 4 + 2 + 4 + 4         // magic, version, crc, count
	crcStart     = 10                    // the CRC covers [crcStart, end)
	entryHeadV1  = 8 + 2 + 8 + 1         // producer id, epoch, last update, batch count
	entryHead    = 8 + 2 + 8 + 4 + 8 + 1 // v2: + coordinator epoch, current txn first offset
	batchMetaLen = 4 + 4 + 8 + 8 + 8

	// SnapshotSuffix ends every snapshot file name.
	SnapshotSuffix = ".snapshot"
	tmpSuffix      = ".tmp"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// SnapshotName returns the file name (not path) of the snapshot at offset:
// the offset as 20 zero-padded decimal digits followed by ".snapshot".
func SnapshotName(offset int64) string { return fmt.Sprintf("%020d%s", offset, SnapshotSuffix) }

// parseSnapshotName returns the offset in a snapshot file name.
func parseSnapshotName(name string) (int64, bool) {
	digits, ok := strings.CutSuffix(name, SnapshotSuffix)
	if !ok || len(digits) != 20 {
		return 0, false
	}
	off, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || off < 0 {
		return 0, false
	}
	return off, true
}

// MarshalSnapshot encodes the state in the snapshot format described in the
// package doc. Producers are written sorted by ID. The caller owns the
// returned slice.
func (s *State) MarshalSnapshot() []byte {
	ids := s.sortedIDs()
	size := headerSize
	for _, p := range s.producers {
		size += entryHead + len(p.Batches)*batchMetaLen
	}
	b := make([]byte, headerSize, size)
	binary.BigEndian.PutUint32(b[0:4], snapshotMagic)
	binary.BigEndian.PutUint16(b[4:6], snapshotVersion)
	binary.BigEndian.PutUint32(b[10:14], uint32(len(ids)))
	for _, id := range ids {
		p := s.producers[id]
		b = binary.BigEndian.AppendUint64(b, uint64(p.ID))
		b = binary.BigEndian.AppendUint16(b, uint16(p.Epoch))
		b = binary.BigEndian.AppendUint64(b, uint64(p.LastUpdateMs))
		b = binary.BigEndian.AppendUint32(b, uint32(p.CoordinatorEpoch))
		b = binary.BigEndian.AppendUint64(b, uint64(p.CurrentTxnFirstOffset))
		b = append(b, byte(len(p.Batches)))
		for _, m := range p.Batches {
			b = binary.BigEndian.AppendUint32(b, uint32(m.FirstSeq))
			b = binary.BigEndian.AppendUint32(b, uint32(m.LastSeq))
			b = binary.BigEndian.AppendUint64(b, uint64(m.FirstOffset))
			b = binary.BigEndian.AppendUint64(b, uint64(m.LastOffset))
			b = binary.BigEndian.AppendUint64(b, uint64(m.Timestamp))
		}
	}
	binary.BigEndian.PutUint32(b[6:10], crc32.Checksum(b[crcStart:], castagnoli))
	return b
}

func corruptf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrCorruptSnapshot}, args...)...)
}

// UnmarshalSnapshot decodes a snapshot written by MarshalSnapshot. Any
// damage (bad magic, version, CRC, lengths or values) returns an error
// wrapping ErrCorruptSnapshot. It never allocates more than len(b) warrants.
func UnmarshalSnapshot(b []byte) (*State, error) {
	if len(b) < headerSize {
		return nil, corruptf("%d bytes, shorter than the %d-byte header", len(b), headerSize)
	}
	if m := binary.BigEndian.Uint32(b[0:4]); m != snapshotMagic {
		return nil, corruptf("bad magic %#x", m)
	}
	v := binary.BigEndian.Uint16(b[4:6])
	head := entryHead
	switch v {
	case snapshotVersion:
	case snapshotVersionV1:
		head = entryHeadV1
	default:
		return nil, corruptf("unsupported version %d", v)
	}
	if want, got := binary.BigEndian.Uint32(b[6:10]), crc32.Checksum(b[crcStart:], castagnoli); want != got {
		return nil, corruptf("crc %#x, computed %#x", want, got)
	}
	count := binary.BigEndian.Uint32(b[10:14])
	rest := b[headerSize:]
	if uint64(count) > uint64(len(rest)/head) {
		return nil, corruptf("%d producers cannot fit in %d bytes", count, len(rest))
	}
	s := &State{producers: make(map[int64]*Producer, count), ongoing: make(map[int64]int64)}
	prev := int64(-1)
	for i := uint32(0); i < count; i++ {
		if len(rest) < head {
			return nil, corruptf("producer %d truncated", i)
		}
		p := &Producer{
			ID:                    int64(binary.BigEndian.Uint64(rest[0:8])),
			Epoch:                 int16(binary.BigEndian.Uint16(rest[8:10])),
			LastUpdateMs:          int64(binary.BigEndian.Uint64(rest[10:18])),
			CoordinatorEpoch:      -1,
			CurrentTxnFirstOffset: -1,
		}
		if v == snapshotVersion {
			p.CoordinatorEpoch = int32(binary.BigEndian.Uint32(rest[18:22]))
			p.CurrentTxnFirstOffset = int64(binary.BigEndian.Uint64(rest[22:30]))
			if p.CoordinatorEpoch < -1 || p.CurrentTxnFirstOffset < -1 {
				return nil, corruptf("producer %d: coordinator epoch %d, transaction first offset %d", p.ID, p.CoordinatorEpoch, p.CurrentTxnFirstOffset)
			}
		}
		n := int(rest[head-1])
		rest = rest[head:]
		if p.ID <= prev {
			return nil, corruptf("producer id %d not above %d", p.ID, prev)
		}
		prev = p.ID
		if p.Epoch < 0 {
			return nil, corruptf("producer %d: negative epoch %d", p.ID, p.Epoch)
		}
		if n > WindowSize {
			return nil, corruptf("producer %d: %d batches, window is %d", p.ID, n, WindowSize)
		}
		if len(rest) < n*batchMetaLen {
			return nil, corruptf("producer %d: batches truncated", p.ID)
		}
		if n > 0 {
			p.Batches = make([]BatchMeta, n)
		}
		for j := range n {
			m := BatchMeta{
				FirstSeq:    int32(binary.BigEndian.Uint32(rest[0:4])),
				LastSeq:     int32(binary.BigEndian.Uint32(rest[4:8])),
				FirstOffset: int64(binary.BigEndian.Uint64(rest[8:16])),
				LastOffset:  int64(binary.BigEndian.Uint64(rest[16:24])),
				Timestamp:   int64(binary.BigEndian.Uint64(rest[24:32])),
			}
			rest = rest[batchMetaLen:]
			if m.FirstSeq < 0 || m.LastSeq < 0 || m.FirstOffset < 0 || m.LastOffset < m.FirstOffset {
				return nil, corruptf("producer %d: bad batch %+v", p.ID, m)
			}
			if j > 0 && m.FirstOffset <= p.Batches[j-1].LastOffset {
				return nil, corruptf("producer %d: batch offsets not increasing", p.ID)
			}
			p.Batches[j] = m
		}
		s.producers[p.ID] = p
		if p.InTxn() {
			s.ongoing[p.ID] = p.CurrentTxnFirstOffset
		}
	}
	if len(rest) != 0 {
		return nil, corruptf("%d trailing bytes", len(rest))
	}
	return s, nil
}

// WriteSnapshot writes s as the snapshot at offset in dir, durably: it
// writes a temporary file, syncs it, renames it to SnapshotName(offset) and
// syncs dir. On error the previous snapshots are untouched (a stray
// temporary file is removed by the next LoadSnapshot). It blocks on IO.
func WriteSnapshot(fsys vfs.FS, dir string, offset int64, s *State) error {
	name := path.Join(dir, SnapshotName(offset))
	tmp := name + tmpSuffix
	f, err := fsys.Create(tmp)
	if err != nil {
		return fmt.Errorf("txn: write snapshot %s: %w", tmp, err)
	}
	_, err = f.Write(s.MarshalSnapshot())
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = fsys.Remove(tmp)
		return fmt.Errorf("txn: write snapshot %s: %w", tmp, err)
	}
	if err := fsys.Rename(tmp, name); err != nil {
		_ = fsys.Remove(tmp)
		return fmt.Errorf("txn: write snapshot %s: %w", name, err)
	}
	if err := fsys.SyncDir(dir); err != nil {
		return fmt.Errorf("txn: write snapshot %s: sync dir: %w", name, err)
	}
	return nil
}

// SnapshotOffsets returns the offsets of the snapshots in dir, ascending.
// A missing dir has none. The caller owns the returned slice.
func SnapshotOffsets(fsys vfs.FS, dir string) ([]int64, error) {
	offs, _, err := listSnapshots(fsys, dir)
	return offs, err
}

// listSnapshots returns the snapshot offsets in dir (ascending) and the
// names of leftover temporary files.
func listSnapshots(fsys vfs.FS, dir string) (offs []int64, tmps []string, err error) {
	names, err := fsys.List(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil, nil
		}
		return nil, nil, fmt.Errorf("txn: list snapshots in %s: %w", dir, err)
	}
	for _, n := range names {
		if base, ok := strings.CutSuffix(n, tmpSuffix); ok {
			if _, ok := parseSnapshotName(base); ok {
				tmps = append(tmps, n)
			}
			continue
		}
		if off, ok := parseSnapshotName(n); ok {
			offs = append(offs, off)
		}
	}
	slices.Sort(offs)
	return offs, tmps, nil
}

// readSnapshot reads and decodes one snapshot file.
func readSnapshot(fsys vfs.FS, name string) (*State, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return nil, fmt.Errorf("txn: read snapshot %s: %w", name, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("txn: read snapshot %s: %w", name, err)
	}
	buf := make([]byte, fi.Size())
	if _, err := f.ReadAt(buf, 0); err != nil && len(buf) > 0 {
		return nil, fmt.Errorf("txn: read snapshot %s: %w", name, err)
	}
	s, err := UnmarshalSnapshot(buf)
	if err != nil {
		return nil, fmt.Errorf("txn: read snapshot %s: %w", name, err)
	}
	return s, nil
}

// LoadSnapshot returns the newest valid snapshot in dir with offset <=
// maxOffset (usually the log end offset after recovery) and its offset;
// ok is false if there is none. Snapshots above maxOffset and corrupt ones
// are deleted, as are temporary files of interrupted writes, and dir is
// synced after any deletion. IO errors other than corruption are returned.
// It blocks on IO.
func LoadSnapshot(fsys vfs.FS, dir string, maxOffset int64) (s *State, offset int64, ok bool, err error) {
	offs, tmps, err := listSnapshots(fsys, dir)
	if err != nil {
		return nil, 0, false, err
	}
	removed := false
	remove := func(name string) error {
		if err := fsys.Remove(path.Join(dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("txn: remove snapshot %s: %w", name, err)
		}
		removed = true
		return nil
	}
	for _, t := range tmps {
		if err := remove(t); err != nil {
			return nil, 0, false, err
		}
	}
	for i := len(offs) - 1; i >= 0 && !ok; i-- {
		off := offs[i]
		if off > maxOffset {
			if err := remove(SnapshotName(off)); err != nil {
				return nil, 0, false, err
			}
			continue
		}
		st, rerr := readSnapshot(fsys, path.Join(dir, SnapshotName(off)))
		switch {
		case rerr == nil:
			s, offset, ok = st, off, true
		case errors.Is(rerr, ErrCorruptSnapshot):
			if err := remove(SnapshotName(off)); err != nil {
				return nil, 0, false, err
			}
		default:
			return nil, 0, false, rerr
		}
	}
	if removed {
		if err := fsys.SyncDir(dir); err != nil {
			return nil, 0, false, fmt.Errorf("txn: load snapshot: sync dir %s: %w", dir, err)
		}
	}
	return s, offset, ok, nil
}

// PruneSnapshots deletes all but the newest keep snapshots in dir (keep <=
// 0 deletes them all) and syncs dir if it deleted any. It blocks on IO.
func PruneSnapshots(fsys vfs.FS, dir string, keep int) error {
	offs, _, err := listSnapshots(fsys, dir)
	if err != nil {
		return err
	}
	keep = max(keep, 0)
	if len(offs) <= keep {
		return nil
	}
	for _, off := range offs[:len(offs)-keep] {
		if err := fsys.Remove(path.Join(dir, SnapshotName(off))); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("txn: prune snapshot %s: %w", SnapshotName(off), err)
		}
	}
	if err := fsys.SyncDir(dir); err != nil {
		return fmt.Errorf("txn: prune snapshots: sync dir %s: %w", dir, err)
	}
	return nil
}

// DeleteSnapshotsAbove deletes the snapshots above offset (after the log
// is truncated to offset they describe batches it no longer holds) and
// syncs dir if it deleted any. It blocks on IO.
func DeleteSnapshotsAbove(fsys vfs.FS, dir string, offset int64) error {
	offs, _, err := listSnapshots(fsys, dir)
	if err != nil {
		return err
	}
	removed := false
	for _, off := range offs {
		if off <= offset {
			continue
		}
		if err := fsys.Remove(path.Join(dir, SnapshotName(off))); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("txn: delete snapshot %s: %w", SnapshotName(off), err)
		}
		removed = true
	}
	if removed {
		if err := fsys.SyncDir(dir); err != nil {
			return fmt.Errorf("txn: delete snapshots: sync dir %s: %w", dir, err)
		}
	}
	return nil
}
