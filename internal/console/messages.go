package console

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The bounds of one browse: it returns at most maxCount records, reads
// at most maxScanBytes of record batches over all partitions (in fetches
// of at most fetchBytes) and, with a filter, looks at most at scanWindow
// records per partition before the log end. Each fetch is an ordinary
// consumer Fetch answered from the log at once (max wait 0), so a browse
// costs the broker what a consumer reading the same bytes does.
const (
	defaultCount = 50
	maxCount     = 500
	maxScanBytes = 8 << 20
	fetchBytes   = 1 << 20
	scanWindow   = 10000
	// shownBytes is how much of a key or value a page shows as text,
	// shownHexBytes as a hex dump (which is four times as long), so that
	// a page of maxCount records stays a few megabytes at most.
	shownBytes    = 16 << 10
	shownHexBytes = 2 << 10
)

// shown is a key, value or header value as the page shows it.
type shown struct {
	Kind      string // null, text, json or hex
	Text      string
	Size      int
	Truncated bool
}

// show decides how to present b: JSON pretty-printed, text when it is
// printable UTF-8, a hex dump otherwise.
func show(b []byte, null bool) shown {
	if null {
		return shown{Kind: "null"}
	}
	sh := shown{Size: len(b)}
	if len(b) > shownBytes {
		b, sh.Truncated = b[:shownBytes], true
	}
	switch {
	case printable(b) && !sh.Truncated && json.Valid(b) && (bytes.HasPrefix(bytes.TrimSpace(b), []byte("{")) || bytes.HasPrefix(bytes.TrimSpace(b), []byte("["))):
		var out bytes.Buffer
		json.Indent(&out, b, "", "  ")
		sh.Kind, sh.Text = "json", out.String()
	case printable(b):
		sh.Kind, sh.Text = "text", string(b)
	default:
		if len(b) > shownHexBytes {
			b, sh.Truncated = b[:shownHexBytes], true
		}
		sh.Kind, sh.Text = "hex", hex.Dump(b)
	}
	return sh
}

// printable reports whether b is UTF-8 text without control characters
// other than tab, newline and carriage return.
func printable(b []byte) bool {
	if !utf8.Valid(b) {
		return false
	}
	for _, r := range string(b) {
		if unicode.IsControl(r) && r != '\n' && r != '\t' && r != '\r' {
			return false
		}
	}
	return true
}

type headerRow struct {
	Key   string
	Value shown
}

type messageRow struct {
	Partition  int32
	Offset     int64
	Timestamp  int64
	Key, Value shown
	Headers    []headerRow
}

type messagesView struct {
	Topic       string
	Partitions  []int32
	Partition   int32 // -1: every partition
	Seek        string
	Offset      string
	Timestamp   string
	Order       string
	Count       int
	KeyFilter   string
	ValueFilter string
	Rows        []messageRow
	Scanned     int
	Truncated   bool
	Errors      []string
	MaxCount    int
}

// browseSpec is a parsed browse form.
type browseSpec struct {
	partition   int32
	seek        string // latest, earliest, offset, timestamp
	offset      int64
	timestamp   int64
	count       int
	keyFilter   string
	valueFilter string
	desc        bool
}

func (b browseSpec) filtered() bool { return b.keyFilter != "" || b.valueFilter != "" }

func (b browseSpec) match(r *kgo.Record) bool {
	return (b.keyFilter == "" || bytes.Contains(r.Key, []byte(b.keyFilter))) &&
		(b.valueFilter == "" || bytes.Contains(r.Value, []byte(b.valueFilter)))
}

func parseBrowse(rq *request, v *messagesView) (browseSpec, error) {
	q := rq.r.URL.Query()
	b := browseSpec{partition: -1, seek: q.Get("seek"), count: defaultCount,
		keyFilter: q.Get("key"), valueFilter: q.Get("value")}
	if b.seek == "" {
		b.seek = "latest"
	}
	if p := q.Get("partition"); p != "" && p != "all" {
		n, err := strconv.ParseInt(p, 10, 32)
		if err != nil || n < 0 {
			return b, badRequest("partition %q: want a partition number or all", p)
		}
		b.partition = int32(n)
	}
	if c := q.Get("count"); c != "" {
		n, err := strconv.Atoi(c)
		if err != nil || n <= 0 {
			return b, badRequest("count %q: want a number > 0", c)
		}
		b.count = min(n, maxCount)
	}
	switch b.seek {
	case "latest", "earliest":
	case "offset":
		n, err := strconv.ParseInt(q.Get("offset"), 10, 64)
		if err != nil || n < 0 {
			return b, badRequest("offset %q: want an offset >= 0", q.Get("offset"))
		}
		b.offset = n
	case "timestamp":
		ts, err := parseTimestamp(q.Get("timestamp"))
		if err != nil {
			return b, err
		}
		b.timestamp = ts
	default:
		return b, badRequest("seek %q: want latest, earliest, offset or timestamp", b.seek)
	}
	switch q.Get("order") {
	case "desc":
		b.desc = true
	case "asc":
	case "":
		b.desc = b.seek == "latest"
	default:
		return b, badRequest("order %q: want asc or desc", q.Get("order"))
	}
	v.Partition, v.Seek, v.Offset, v.Timestamp, v.Count = b.partition, b.seek, q.Get("offset"), q.Get("timestamp"), b.count
	v.KeyFilter, v.ValueFilter = b.keyFilter, b.valueFilter
	v.Order = "asc"
	if b.desc {
		v.Order = "desc"
	}
	return b, nil
}

// parseTimestamp takes milliseconds since the epoch or an RFC 3339 time
// (the browser's datetime-local form, taken as UTC).
func parseTimestamp(s string) (int64, error) {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil && n >= 0 {
		return n, nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02T15:04"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UnixMilli(), nil
		}
	}
	return 0, badRequest("timestamp %q: want milliseconds since the epoch or 2006-01-02T15:04:05", s)
}

// messages browses a topic's records.
func (s *Server) messages(rq *request) error {
	topic := formValue(rq.r, "topic")
	if topic == "" {
		return badRequest("no topic named")
	}
	v := messagesView{Topic: topic, MaxCount: maxCount}
	spec, err := parseBrowse(rq, &v)
	if err != nil {
		return err
	}
	md, err := rq.adm.Metadata(rq.ctx, topic)
	if err != nil {
		return fmt.Errorf("metadata: %w", err)
	}
	t, ok := md.Topics[topic]
	if !ok || t.Err != nil {
		why := "not in the cluster's metadata"
		if ok {
			why = t.Err.Error()
		}
		v.Errors = append(v.Errors, "topic "+topic+": "+why)
		return rq.page(s, "messages", "Messages: "+topic, v)
	}
	for _, p := range t.Partitions.Sorted() {
		v.Partitions = append(v.Partitions, p.Partition)
	}
	starts, err := rq.adm.ListStartOffsets(rq.ctx, topic)
	if err != nil {
		return fmt.Errorf("log start offsets: %w", err)
	}
	ends, err := rq.adm.ListEndOffsets(rq.ctx, topic)
	if err != nil {
		return fmt.Errorf("log end offsets: %w", err)
	}
	var atTS map[int32]int64
	if spec.seek == "timestamp" {
		lo, err := rq.adm.ListOffsetsAfterMilli(rq.ctx, spec.timestamp, topic)
		if err != nil {
			return fmt.Errorf("offsets at %d: %w", spec.timestamp, err)
		}
		atTS = map[int32]int64{}
		for p, o := range lo[topic] {
			if o.Err == nil {
				atTS[p] = o.Offset
			}
		}
	}
	budget := int64(maxScanBytes)
	var rows []messageRow
	for _, p := range t.Partitions.Sorted() {
		if spec.partition >= 0 && p.Partition != spec.partition {
			continue
		}
		so, ok1 := starts.Lookup(topic, p.Partition)
		eo, ok2 := ends.Lookup(topic, p.Partition)
		if !ok1 || !ok2 || so.Err != nil || eo.Err != nil {
			v.Errors = append(v.Errors, fmt.Sprintf("partition %d: no offsets (leader %d)", p.Partition, p.Leader))
			continue
		}
		start, end := so.Offset, eo.Offset
		from, keepLast := start, false
		switch spec.seek {
		case "latest":
			keepLast = true
			from = end - int64(spec.count)
			if spec.filtered() {
				from = end - scanWindow
			}
		case "offset":
			from = spec.offset
		case "timestamp":
			from = end
			if o, ok := atTS[p.Partition]; ok && o >= 0 {
				from = o
			}
		}
		from = min(max(from, start), end)
		recs, scanned, err := s.readPartition(rq.ctx, rq.cl, t.Topic, [16]byte(t.ID), p.Partition, p.Leader, from, end, spec, keepLast, &budget)
		v.Scanned += scanned
		if err != nil {
			v.Errors = append(v.Errors, fmt.Sprintf("partition %d: %v", p.Partition, err))
		}
		for _, r := range recs {
			rows = append(rows, recordRow(r))
		}
		if budget <= 0 {
			v.Truncated = true
			break
		}
	}
	if spec.partition >= 0 && !containsPartition(v.Partitions, spec.partition) {
		v.Errors = append(v.Errors, fmt.Sprintf("topic %s has no partition %d", topic, spec.partition))
	}
	// One partition reads in offset order; several are merged by
	// timestamp, since their offsets do not compare.
	sort.SliceStable(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		if a.Timestamp != b.Timestamp && spec.partition < 0 {
			return (a.Timestamp < b.Timestamp) != spec.desc
		}
		if a.Partition != b.Partition {
			return a.Partition < b.Partition
		}
		return (a.Offset < b.Offset) != spec.desc
	})
	if len(rows) > spec.count {
		if spec.seek == "latest" {
			// The newest count: the tail in ascending order, the head
			// in descending.
			if spec.desc {
				rows = rows[:spec.count]
			} else {
				rows = rows[len(rows)-spec.count:]
			}
		} else if spec.desc {
			rows = rows[len(rows)-spec.count:]
		} else {
			rows = rows[:spec.count]
		}
	}
	v.Rows = rows
	return rq.page(s, "messages", "Messages: "+topic, v)
}

func containsPartition(ps []int32, p int32) bool {
	for _, q := range ps {
		if q == p {
			return true
		}
	}
	return false
}

func recordRow(r *kgo.Record) messageRow {
	row := messageRow{Partition: r.Partition, Offset: r.Offset, Timestamp: r.Timestamp.UnixMilli(),
		Key: show(r.Key, r.Key == nil), Value: show(r.Value, r.Value == nil)}
	for _, h := range r.Headers {
		row.Headers = append(row.Headers, headerRow{Key: h.Key, Value: show(h.Value, h.Value == nil)})
	}
	return row
}

// readPartition reads the records of [from, end) that match spec, with
// Fetch requests to the partition's leader, until it has spec.count of
// them (keepLast: reads to end and keeps the last spec.count), the budget
// of batch bytes is spent, or ctx ends.
func (s *Server) readPartition(ctx context.Context, cl *kgo.Client, topic string, id [16]byte, partition, leader int32,
	from, end int64, spec browseSpec, keepLast bool, budget *int64) (out []*kgo.Record, scanned int, err error) {
	if leader < 0 {
		return nil, 0, kerr.LeaderNotAvailable
	}
	br := cl.Broker(int(leader))
	for from < end && *budget > 0 && (keepLast || len(out) < spec.count) {
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID = -1
		req.MaxWaitMillis = 0
		req.MinBytes = 0
		req.MaxBytes = int32(min(*budget, fetchBytes))
		req.SessionEpoch = -1 // no fetch session
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = topic, id
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = partition, from, req.MaxBytes
		rp.CurrentLeaderEpoch, rp.LogStartOffset = -1, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		kresp, err := br.Request(ctx, req)
		if err != nil {
			return out, scanned, err
		}
		resp := kresp.(*kmsg.FetchResponse)
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			return out, scanned, err
		}
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			return out, scanned, fmt.Errorf("fetch: %d topics in the response", len(resp.Topics))
		}
		part := &resp.Topics[0].Partitions[0]
		*budget -= int64(len(part.RecordBatches))
		fp, next := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{Offset: from, Topic: topic, Partition: partition},
			part, kgo.DefaultDecompressor(), nil)
		if fp.Err != nil {
			return out, scanned, fp.Err
		}
		for _, r := range fp.Records {
			if r.Offset >= end {
				break
			}
			scanned++
			if r.Offset+1 > next {
				next = r.Offset + 1
			}
			if spec.match(r) {
				out = append(out, r)
			}
		}
		if keepLast && len(out) > spec.count {
			out = out[len(out)-spec.count:]
		}
		if next <= from {
			// Nothing more could be read below end (a batch larger
			// than what is left of the budget).
			break
		}
		from = next
	}
	if !keepLast && len(out) > spec.count {
		out = out[:spec.count]
	}
	return out, scanned, nil
}

// manualPartition is the Record.Context key of a partition the user
// chose for a test record.
type manualPartition struct{}

// consolePartitioner sends a test record to the partition the user chose,
// else a keyed record where Kafka's default partitioner would (murmur2 of
// the key) and an unkeyed one to a random partition.
func consolePartitioner() kgo.Partitioner {
	return kgo.BasicConsistentPartitioner(func(topic string) func(*kgo.Record, int) int {
		keyed := kgo.StickyKeyPartitioner(nil).ForTopic(topic)
		return func(r *kgo.Record, n int) int {
			if r.Context != nil {
				if p, ok := r.Context.Value(manualPartition{}).(int32); ok && int(p) < n {
					return int(p)
				}
			}
			if r.Key != nil {
				return keyed.Partition(r, n)
			}
			return rand.IntN(n)
		}
	})
}

// produce writes one test record from the messages page's form.
func (s *Server) produce(rq *request) error {
	topic := formValue(rq.r, "topic")
	if topic == "" {
		return badRequest("no topic named")
	}
	back := Prefix + "/messages?topic=" + url.QueryEscape(topic)
	rec := &kgo.Record{Topic: topic, Value: []byte(rq.r.PostFormValue("value"))}
	if k := rq.r.PostFormValue("key"); k != "" {
		rec.Key = []byte(k)
	}
	for _, line := range strings.Split(rq.r.PostFormValue("headers"), "\n") {
		line = strings.TrimRight(line, "\r")
		if strings.TrimSpace(line) == "" {
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok || strings.TrimSpace(k) == "" {
			return badRequest("header line %q: want name: value", line)
		}
		rec.Headers = append(rec.Headers, kgo.RecordHeader{Key: strings.TrimSpace(k), Value: []byte(strings.TrimSpace(v))})
	}
	// A test record goes only to a topic that exists: a produce to an
	// unknown topic would create it where auto.create.topics.enable is
	// on, which is not what a click on an existing topic's page means.
	md, err := rq.adm.Metadata(rq.ctx, topic)
	if err != nil {
		return fmt.Errorf("metadata: %w", err)
	}
	t, ok := md.Topics[topic]
	if !ok || t.Err != nil {
		return rq.done(back, "produce to "+topic+": the topic does not exist", false)
	}
	ctx := rq.ctx
	if p := formValue(rq.r, "partition"); p != "" && p != "any" {
		n, err := strconv.ParseInt(p, 10, 32)
		if err != nil || n < 0 || int(n) >= len(t.Partitions) {
			return badRequest("partition %q: want one of the topic's %d partitions or any", p, len(t.Partitions))
		}
		rec.Context = context.WithValue(ctx, manualPartition{}, int32(n))
		ctx = rec.Context
	}
	res := rq.cl.ProduceSync(ctx, rec)
	if err := res.FirstErr(); err != nil {
		return rq.done(back, "produce to "+topic+": "+err.Error(), false)
	}
	r := res[0].Record
	return rq.done(back, fmt.Sprintf("produced a record to %s partition %d at offset %d", topic, r.Partition, r.Offset), true)
}
