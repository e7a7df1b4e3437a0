package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sync"
	"sync/atomic"

	"samsa/internal/record"
	"samsa/internal/vfs"
)

// File name suffixes inside a partition directory.
const (
	logSuffix       = ".log"
	indexSuffix     = ".index"
	timeIndexSuffix = ".timeindex"
	txnIndexSuffix  = ".txnindex"
	deletedSuffix   = ".deleted"
	cleanedSuffix   = ".cleaned"
	swapSuffix      = ".swap"
)

// segmentSuffixes are the files a segment may have. The .txnindex is
// missing from segments without aborted transactions.
var segmentSuffixes = []string{logSuffix, indexSuffix, timeIndexSuffix, txnIndexSuffix}

// scanHeaderSize is how much of a batch header Read and the open-time scan
// read: baseOffset, batchLength, partitionLeaderEpoch, magic, crc,
// attributes, lastOffsetDelta, baseTimestamp and maxTimestamp.
const scanHeaderSize = 43

// segmentName returns the file name stem of the segment at base.
func segmentName(base int64) string { return fmt.Sprintf("%020d", base) }

// segment is one .log file and its two indexes. The .log stays open for
// the segment's life; the index files hold a descriptor only while they
// are written (indexFile).
//
// baseOffset and the files never change. size, nextOffset, maxTimestamp and
// friends change under the owning Log's mu (plus appendMu for the writer);
// size and nextOffset are atomics so that Read can take them without the
// lock.
type segment struct {
	dir        string
	baseOffset int64
	log        vfs.File
	index      offsetIndex
	timeIndex  timeIndex
	// txnIndex holds the aborted transactions whose ABORT marker is in
	// this segment; guarded by Log.mu (written with appendMu also held).
	txnIndex txnIndex
	// txnFile is the .txnindex file, nil until the segment's first
	// aborted transaction (Kafka creates it lazily too, so most segments
	// have none). Set under appendMu and fileMu; txnUnsynced is guarded
	// by appendMu.
	txnFile     vfs.File
	txnUnsynced bool

	size       atomic.Int64 // bytes of whole batches in log
	nextOffset atomic.Int64 // last offset + 1 of the last batch, or baseOffset

	// Guarded by Log.mu (written with appendMu also held).
	bytesSinceIndex    int64
	maxTimestamp       int64 // -1 when empty
	offsetOfMaxTs      int64 // last offset of the batch with maxTimestamp
	firstBatchTs       int64 // maxTimestamp of the first batch (segment.ms), -1 when empty
	lastTimeIndexed    int64 // timestamp of the last time index entry, or -1
	lastTimeIndexedRel int32

	// fileMu serialises Sync and Close of the files against each other, so
	// the flusher never syncs a closed file.
	fileMu sync.Mutex
	closed bool // guarded by fileMu
}

func (s *segment) path(suffix string) string {
	return filepath.Join(s.dir, segmentName(s.baseOffset)+suffix)
}

func (s *segment) empty() bool { return s.size.Load() == 0 }

// sync fsyncs the segment's log (and, when withIndexes, its index files,
// which it then releases: withIndexes is a sealed segment or a final
// flush, whose indexes take no more writes until a truncation). Syncing a
// segment that is already closed is not an error: its data was handled by
// whoever closed it.
func (s *segment) sync(withIndexes bool) error {
	s.fileMu.Lock()
	defer s.fileMu.Unlock()
	if s.closed {
		return nil
	}
	if err := s.log.Sync(); err != nil {
		return fmt.Errorf("storage: sync %s: %w", s.path(logSuffix), err)
	}
	if withIndexes {
		if err := s.index.file.release(); err != nil {
			return err
		}
		if err := s.timeIndex.file.release(); err != nil {
			return err
		}
		if s.txnFile != nil {
			if err := s.txnFile.Sync(); err != nil {
				return fmt.Errorf("storage: sync %s: %w", s.path(txnIndexSuffix), err)
			}
		}
	}
	return nil
}

// releaseIndexes fsyncs and closes the index files if they are open,
// under fileMu so that it never races a close.
func (s *segment) releaseIndexes() error {
	s.fileMu.Lock()
	defer s.fileMu.Unlock()
	if s.closed {
		return nil
	}
	if err := s.index.file.release(); err != nil {
		return err
	}
	return s.timeIndex.file.release()
}

// syncIndexes is releaseIndexes, and fsyncs the .txnindex too: what a
// final flush does for a segment whose .log is synced already.
func (s *segment) syncIndexes() error {
	if err := s.releaseIndexes(); err != nil {
		return err
	}
	s.fileMu.Lock()
	defer s.fileMu.Unlock()
	if s.closed || s.txnFile == nil {
		return nil
	}
	if err := s.txnFile.Sync(); err != nil {
		return fmt.Errorf("storage: sync %s: %w", s.path(txnIndexSuffix), err)
	}
	return nil
}

// close closes the files once.
func (s *segment) close() error {
	s.fileMu.Lock()
	defer s.fileMu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	var txnErr error
	if s.txnFile != nil {
		txnErr = s.txnFile.Close()
	}
	return errors.Join(s.log.Close(), s.index.file.close(), s.timeIndex.file.close(), txnErr)
}

// batchHeader is the part of a batch header that scans need.
type batchHeader struct {
	baseOffset   int64
	size         int64 // whole batch, LogOverhead included
	leaderEpoch  int32
	magic        int8
	lastOffset   int64
	maxTimestamp int64
}

// errTornTail reports a batch header or body that runs past the end of the
// data.
var errTornTail = errors.New("storage: torn batch at end of segment")

// readHeader reads the header of the batch at pos, which must end by end.
func readHeader(f vfs.File, pos, end int64, buf *[scanHeaderSize]byte) (batchHeader, error) {
	if end-pos < scanHeaderSize {
		return batchHeader{}, errTornTail
	}
	if _, err := f.ReadAt(buf[:], pos); err != nil {
		if errors.Is(err, io.EOF) {
			return batchHeader{}, errTornTail
		}
		return batchHeader{}, err
	}
	return parseHeader(buf[:], pos, end)
}

// parseHeader decodes the header bytes buf (scanHeaderSize of them) of the
// batch at pos, which must end by end.
func parseHeader(buf []byte, pos, end int64) (batchHeader, error) {
	buf = buf[:scanHeaderSize]
	length := int64(int32(binary.BigEndian.Uint32(buf[8:12])))
	h := batchHeader{
		baseOffset:   int64(binary.BigEndian.Uint64(buf[0:8])),
		size:         record.LogOverhead + length,
		leaderEpoch:  int32(binary.BigEndian.Uint32(buf[12:16])),
		magic:        int8(buf[16]),
		lastOffset:   int64(binary.BigEndian.Uint64(buf[0:8])) + int64(int32(binary.BigEndian.Uint32(buf[23:27]))),
		maxTimestamp: int64(binary.BigEndian.Uint64(buf[35:43])),
	}
	if length < record.HeaderSize-record.LogOverhead || h.lastOffset < h.baseOffset {
		return batchHeader{}, record.MarkCorrupt(fmt.Errorf("storage: bad batch header at %d", pos))
	}
	if pos+h.size > end {
		return batchHeader{}, errTornTail
	}
	return h, nil
}
