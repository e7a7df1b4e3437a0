package cli

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Index entry sizes, as Kafka writes them (big-endian): .index is relative
// offset uint32 and file position uint32; .timeindex is timestamp int64
// and relative offset uint32.
const (
	offsetIndexEntry = 8
	timeIndexEntry   = 12
)

// dumpIndexFile prints the entries of a .index or .timeindex file, with
// absolute offsets from the base offset in its name. Entries must
// increase; a file that ends inside an entry or has entries out of order
// fails, after every entry is printed.
func dumpIndexFile(w *bufio.Writer, path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("dump-log: %w", err)
	}
	name := filepath.Base(path)
	timeIdx := strings.HasSuffix(name, ".timeindex")
	size := offsetIndexEntry
	if timeIdx {
		size = timeIndexEntry
	}
	base, err := strconv.ParseInt(name[:strings.IndexByte(name, '.')], 10, 64)
	if err != nil {
		return fmt.Errorf("dump-log: %s: the name does not start with the segment's base offset", path)
	}
	fmt.Fprintf(w, "Dumping %s\n", path)
	var bad []string
	prevOff, prevTS := int64(-1), int64(-1)
	n := len(b) / size
	for i := 0; i < n; i++ {
		e := b[i*size:]
		if timeIdx {
			ts := int64(binary.BigEndian.Uint64(e))
			off := base + int64(binary.BigEndian.Uint32(e[8:]))
			fmt.Fprintf(w, "timestamp %d (%s) offset %d\n", ts, time.UnixMilli(ts).UTC().Format("2006-01-02T15:04:05.000Z"), off)
			if ts < prevTS || off < prevOff {
				bad = append(bad, fmt.Sprintf("entry %d (timestamp %d offset %d) is below the one before it", i, ts, off))
			}
			prevOff, prevTS = off, ts
			continue
		}
		off := base + int64(binary.BigEndian.Uint32(e))
		pos := binary.BigEndian.Uint32(e[4:])
		fmt.Fprintf(w, "offset %d position %d\n", off, pos)
		if off <= prevOff {
			bad = append(bad, fmt.Sprintf("entry %d (offset %d) is not above the one before it", i, off))
		}
		prevOff = off
	}
	if rest := len(b) % size; rest != 0 {
		bad = append(bad, fmt.Sprintf("the file ends %d bytes into entry %d", rest, n))
	}
	fmt.Fprintf(w, "summary: %d entries, %d invalid\n", n, len(bad))
	if len(bad) > 0 {
		return fmt.Errorf("dump-log: %s: %s", path, strings.Join(bad, "; "))
	}
	return nil
}
