// Package record is a view over Kafka record batches (magic v2) as bytes:
// header fields, CRC-32C, validation, iteration over records, compression
// codecs and a Builder. It knows nothing of sockets, etcd or storage.
//
// # Batch layout
//
// All integers are big endian. baseOffset and partitionLeaderEpoch lie
// before the CRC-covered range, so the broker patches them without
// re-encoding or recomputing anything.
//
//	offset  size  field
//	0       8     baseOffset              0 from a producer; patched on append
//	8       4     batchLength             bytes after this field = len - 12
//	12      4     partitionLeaderEpoch    -1 from a producer; patched on append
//	16      1     magic                   always 2
//	17      4     crc                     CRC-32C (Castagnoli) of bytes [21, end)
//	21      2     attributes              bits 0-2 codec, 3 LogAppendTime,
//	                                      4 transactional, 5 control,
//	                                      6 delete horizon set
//	23      4     lastOffsetDelta         count-1 from a producer
//	27      8     baseTimestamp
//	35      8     maxTimestamp
//	43      8     producerId              -1 unless idempotent
//	51      2     producerEpoch
//	53      4     baseSequence
//	57      4     recordsCount
//	61      ...   records, compressed as a whole when codec != none
//
// # Record layout
//
// Inside the (decompressed) records section, records follow each other
// with nothing in between. varint and varlong are zigzag encoded (as
// protobuf sint32/sint64), at most 5 and 10 bytes; a length of -1 means
// null where null is allowed.
//
//	field            type      notes
//	length           varint    bytes of the record after this field
//	attributes       int8      unused, 0
//	timestampDelta   varlong   from baseTimestamp
//	offsetDelta      varint    from baseOffset; i for the i-th record
//	keyLength        varint    -1: null key
//	key              bytes
//	valueLength      varint    -1: null value (a tombstone)
//	value            bytes
//	headersCount     varint
//	headers          headerKeyLength varint (>= 0), headerKey bytes,
//	                 headerValueLength varint (-1: null), headerValue bytes
//
// # Control batches
//
// A control batch has attribute bit 5 set and is written by the broker, never
// by a producer. The one kind samsa writes is the end-transaction marker: a
// transactional control batch, uncompressed, with the transaction's
// producerId and producerEpoch, baseSequence -1 and exactly one record
// (offset delta 0, no headers) whose key and value are fixed-size structs,
// big endian:
//
//	key      offset  size  field
//	         0       2     version             0; a reader accepts >= 0
//	         2       2     type                0 ABORT, 1 COMMIT (others are
//	                                           not end-transaction markers)
//	value    0       2     version             0; a reader accepts >= 0
//	         2       4     coordinatorEpoch    epoch of the coordinator that
//	                                           wrote the marker
//
// A reader ignores bytes after these fields, as Kafka does, so that newer
// versions still read. BuildEndTxnMarker writes such a batch and
// Batch.EndTxnMarker reads one back.
//
// # Usage
//
// The produce path:
//
//  1. Split the request's records field into batches.
//  2. Validate each with FromClient set and a decompression cap. Nothing
//     is allocated for an uncompressed batch.
//  3. Patch baseOffset and partitionLeaderEpoch with SetBaseOffset and
//     SetLeaderEpoch (and SetLogAppendTime if the topic says so) and
//     write the bytes unchanged.
//
// Readers that need the records themselves call Records; tools and tests
// build batches with Builder.
//
// # Invariants
//
//   - A Batch never owns its bytes; setters write into the viewed slice.
//   - Validate and Records never allocate from a length or count in the
//     input before checking it against the bytes that remain: a record
//     takes at least 7 bytes, a header at least 2.
//   - Decompression never produces more than the cap: output is read
//     through a limit of cap+1 bytes, and size headers in the input are
//     only used to refuse early, never to allocate beyond the cap.
//   - Errors about the bytes (framing, CRC, varints, lengths, trailing
//     data) are marked corrupt (IsCorrupt, errors.Is(err, ErrCorrupt)); a
//     CRC-valid batch that breaks Kafka's rules for producers wraps
//     ErrInvalidRecord.
//
// Batch methods only read or write the viewed bytes; concurrent readers of
// the same Batch are safe, writers are not. Compress and Decompress are safe
// for concurrent use (their codec state is pooled).
package record
