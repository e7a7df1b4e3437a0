package cli

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"samsa/internal/record"
	"samsa/internal/txn"
)

// maxDumpBatch bounds one batch read by dump-log, so a corrupt length field
// cannot make it allocate gigabytes.
const maxDumpBatch = 256 << 20

func newDumpLogCmd(e env) *cobra.Command {
	var (
		printData  bool
		maxDecomp  int
		offsetsDec bool
		txnDec     bool
	)
	cmd := &cobra.Command{
		Use:   "dump-log FILE...",
		Short: "Print the record batches of log segment files and their indexes",
		Long: `Read log segment files (Kafka's on-disk format: record batches, magic v2,
back to back) without a broker and print one line per batch: base and last
offset, record count, file position, size, partition leader epoch, codec,
timestamp type, base and max timestamps, producer id/epoch/base sequence,
transactional and control flags, the stored CRC and whether the batch
passes full validation (CRC, lengths, record framing).

With --print-data each record follows its batch: offset, timestamp, key,
value and headers, quoted as Go strings. --offsets-decoder decodes the
records as those of __consumer_offsets (offset commits and group
metadata, with a consumer group's subscriptions and assignments), and
--transaction-log-decoder as those of __transaction_state (transaction
metadata); either implies --print-data. A control batch's records print
as their marker (COMMIT or ABORT) with a decoder.

A .index file prints one line per entry (absolute offset, file
position) and a .timeindex file one per entry (timestamp, absolute
offset), the base offset taken from the file name; entries must increase.
A .snapshot file (a partition's producer state) prints its version and
offset, one line per producer (id, epoch, last update, coordinator epoch,
first offset of its open transaction, "-" when none) and one per batch it
remembers (sequences, offsets, timestamp).

The command fails if any batch or entry is invalid or the file ends
inside one.`,
		Example: `  samsa dump-log samsa-data/orders-0/00000000000000000000.log
  samsa dump-log --print-data samsa-data/orders-0/00000000000000000000.log
  samsa dump-log samsa-data/orders-0/00000000000000000000.index
  samsa dump-log samsa-data/orders-0/00000000000000001200.snapshot
  samsa dump-log --offsets-decoder samsa-data/__consumer_offsets-7/00000000000000000000.log
  samsa dump-log --transaction-log-decoder samsa-data/__transaction_state-3/00000000000000000000.log`,
		Args: minArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if offsetsDec && txnDec {
				return usageIn(cmd, fmt.Errorf("give --offsets-decoder or --transaction-log-decoder, not both"))
			}
			var dec recordDecoder
			switch {
			case offsetsDec:
				dec = decodeOffsetsRecord
			case txnDec:
				dec = decodeTxnRecord
			}
			w := bufio.NewWriter(e.stdout)
			defer w.Flush()
			var errs []error
			for _, path := range args {
				dump := func() error { return dumpLogFile(w, path, printData || dec != nil, maxDecomp, dec) }
				switch {
				case strings.HasSuffix(path, ".index") || strings.HasSuffix(path, ".timeindex"):
					dump = func() error { return dumpIndexFile(w, path) }
				case strings.HasSuffix(path, txn.SnapshotSuffix):
					dump = func() error { return dumpSnapshotFile(w, path) }
				}
				if err := dump(); err != nil {
					errs = append(errs, err)
				}
			}
			return errors.Join(errs...)
		},
	}
	cmd.Flags().BoolVarP(&printData, "print-data", "d", false, "print every record")
	cmd.Flags().IntVar(&maxDecomp, "max-decompressed-bytes", 64<<20, "cap on one batch's decompressed size")
	cmd.Flags().BoolVar(&offsetsDec, "offsets-decoder", false, "decode records as __consumer_offsets records (implies --print-data)")
	cmd.Flags().BoolVar(&txnDec, "transaction-log-decoder", false, "decode records as __transaction_state records (implies --print-data)")
	return cmd
}

// dumpLogFile prints the batches of one segment file. Its errors name the
// file.
func dumpLogFile(w *bufio.Writer, path string, printData bool, maxDecomp int, dec recordDecoder) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("dump-log: %w", err)
	}
	defer f.Close()
	fmt.Fprintf(w, "Dumping %s\n", path)
	if err := dumpLog(w, bufio.NewReaderSize(f, 1<<20), printData, maxDecomp, dec); err != nil {
		return fmt.Errorf("dump-log: %s: %w", path, err)
	}
	return nil
}

// dumpLog prints every batch read from r. It stops at the first batch whose
// length is impossible or that the input ends inside of; that one counts
// as invalid, and the summary names it, so that the summary and the error
// agree.
// dec, when not nil, prints the records decoded.
func dumpLog(w io.Writer, r io.Reader, printData bool, maxDecomp int, dec recordDecoder) error {
	var (
		pos     int64
		batches int
		records int64
		invalid int
		buf     []byte
	)
	summary := func(stopped error) {
		fmt.Fprintf(w, "summary: %d batches, %d records, %d bytes, %d invalid", batches, records, pos, invalid)
		if stopped != nil {
			fmt.Fprintf(w, " (stopped: %v)", stopped)
		}
		fmt.Fprintln(w)
	}
	// stop ends the dump at a batch that cannot be read.
	stop := func(err error) error {
		invalid++
		summary(err)
		return err
	}
	for {
		var hdr [record.LogOverhead]byte
		n, err := io.ReadFull(r, hdr[:])
		if err == io.EOF {
			break
		}
		if err == io.ErrUnexpectedEOF {
			return stop(fmt.Errorf("%d trailing bytes at position %d are not a whole batch", n, pos))
		}
		if err != nil {
			return stop(fmt.Errorf("read at position %d: %w", pos, err))
		}
		length := int64(int32(binary.BigEndian.Uint32(hdr[8:12])))
		if length < record.HeaderSize-record.LogOverhead || length > maxDumpBatch {
			return stop(fmt.Errorf("batch at position %d has impossible length %d", pos, length))
		}
		total := record.LogOverhead + int(length)
		if cap(buf) < total {
			buf = make([]byte, total)
		}
		buf = buf[:total]
		copy(buf, hdr[:])
		if m, err := io.ReadFull(r, buf[record.LogOverhead:]); err != nil {
			if err == io.ErrUnexpectedEOF || err == io.EOF {
				return stop(fmt.Errorf("batch at position %d is truncated: %d of %d bytes", pos, record.LogOverhead+m, total))
			}
			return stop(fmt.Errorf("read at position %d: %w", pos, err))
		}
		b, _, err := record.Split(buf)
		if err != nil {
			return stop(fmt.Errorf("batch at position %d: %w", pos, err))
		}
		_, verr := b.Validate(record.ValidateOptions{MaxDecompressedBytes: maxDecomp})
		writeBatch(w, b, pos, verr)
		batches++
		records += int64(b.NumRecords())
		if verr != nil {
			invalid++
		}
		if printData {
			recs, err := b.Records(maxDecomp)
			if err != nil {
				fmt.Fprintf(w, "  records: %v\n", err)
			}
			for i := range recs {
				if dec != nil {
					writeDecodedRecord(w, b, &recs[i], dec)
				} else {
					writeRecord(w, b, &recs[i])
				}
			}
		}
		pos += int64(total)
	}
	summary(nil)
	if invalid > 0 {
		return fmt.Errorf("%d invalid batches", invalid)
	}
	return nil
}

func codecName(c record.Codec) string {
	switch c {
	case record.CodecNone:
		return "none"
	case record.CodecGzip:
		return "gzip"
	case record.CodecSnappy:
		return "snappy"
	case record.CodecLZ4:
		return "lz4"
	case record.CodecZstd:
		return "zstd"
	}
	return "unknown(" + strconv.Itoa(int(c)) + ")"
}

// msTime renders a millisecond timestamp with its UTC time, or just the
// number when it is negative (no timestamp).
func msTime(ms int64) string {
	if ms < 0 {
		return strconv.FormatInt(ms, 10)
	}
	return strconv.FormatInt(ms, 10) + " (" + time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z") + ")"
}

func writeBatch(w io.Writer, b record.Batch, pos int64, verr error) {
	tsType := "create"
	if b.LogAppendTime() {
		tsType = "log-append"
	}
	valid := "yes"
	if verr != nil {
		valid = "no: " + verr.Error()
	}
	fmt.Fprintf(w, "batch offsets %d..%d count %d position %d size %d epoch %d magic %d codec %s ts-type %s base-ts %s max-ts %s producer %d/%d seq %d txn %t control %t crc %08x valid %s\n",
		b.BaseOffset(), b.LastOffset(), b.NumRecords(), pos, b.Size(), b.LeaderEpoch(), b.Magic(),
		codecName(b.Codec()), tsType, msTime(b.BaseTimestamp()), msTime(b.MaxTimestamp()),
		b.ProducerID(), b.ProducerEpoch(), b.BaseSequence(), b.Transactional(), b.Control(),
		b.CRC(), valid)
}

// quoteOrNull quotes b as a Go string, or returns null for a nil slice.
func quoteOrNull(b []byte) string {
	if b == nil {
		return "null"
	}
	return strconv.Quote(string(b))
}

func writeRecord(w io.Writer, b record.Batch, r *record.Record) {
	var hs strings.Builder
	for i, h := range r.Headers {
		if i > 0 {
			hs.WriteByte(' ')
		}
		hs.WriteString(strconv.Quote(h.Key))
		hs.WriteByte('=')
		hs.WriteString(quoteOrNull(h.Value))
	}
	fmt.Fprintf(w, "  record offset %d ts %d key %s value %s headers [%s]\n",
		r.Offset(b), r.Timestamp(b), quoteOrNull(r.Key), quoteOrNull(r.Value), hs.String())
}
