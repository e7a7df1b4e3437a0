package broker

import (
	"fmt"
	"io"

	"samsa/internal/record"
	"samsa/internal/storage"
)

// batchHeaders reads the headers of the batches a log read returned,
// through a pooled 64 KiB window: batches smaller than the window cost
// one read of the window between them, a larger batch one read of its
// first bytes, never the whole batch.
//
// A batchHeaders belongs to one fetch; it is not safe for concurrent use.
type batchHeaders struct {
	buf     *[]byte
	headers []record.Batch   // each HeaderSize bytes, a copy; until the next read
	regions []storage.Region // headers[i]'s batch, whole
	store   []byte           // backing of headers
}

// newBatchHeaders takes a window from the pool; release gives it back.
func newBatchHeaders() *batchHeaders {
	return &batchHeaders{buf: copyBuffers.Get().(*[]byte)}
}

// release returns the window to the pool.
func (h *batchHeaders) release() { copyBuffers.Put(h.buf) }

// read lists the batches of res in h (replacing the last list). A batch
// cut short (which the log's read does not return, but a truncation racing
// it can leave) ends the list, in its region and all after it, so that the
// list has no gap.
func (h *batchHeaders) read(res storage.ReadResult) error {
	h.headers, h.regions, h.store = h.headers[:0], h.regions[:0], h.store[:0]
	win := *h.buf
regions:
	for _, r := range res.Regions {
		var winPos, winLen int64 = 0, 0 // the window holds [winPos, winPos+winLen) of r.File
		for pos, limit := r.Pos, r.Pos+r.Size; pos < limit; {
			if limit-pos < record.HeaderSize {
				break regions
			}
			if pos < winPos || pos+record.HeaderSize > winPos+winLen {
				n := min(int64(len(win)), limit-pos)
				k, err := r.File.ReadAt(win[:n], pos)
				if int64(k) < record.HeaderSize {
					if err == nil {
						err = io.ErrUnexpectedEOF
					}
					return fmt.Errorf("broker: read batch header at %d: %w", pos, err)
				}
				winPos, winLen = pos, int64(k)
			}
			hdr := record.Batch(win[pos-winPos : pos-winPos+record.HeaderSize])
			size := int64(record.LogOverhead) + int64(hdr.BatchLength())
			if size < record.HeaderSize || size > limit-pos {
				break regions
			}
			h.store = append(h.store, hdr...)
			h.regions = append(h.regions, storage.Region{File: r.File, Pos: pos, Size: size})
			pos += size
		}
	}
	// NB: the headers slice h.store only once it stops growing.
	for i := range h.regions {
		h.headers = append(h.headers, record.Batch(h.store[i*record.HeaderSize:(i+1)*record.HeaderSize:(i+1)*record.HeaderSize]))
	}
	return nil
}
