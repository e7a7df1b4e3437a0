package chaos

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Api keys S-19 delays.
const (
	keyProduce            = 0
	keyAddPartitionsToTxn = 24
	keyEndTxn             = 26
)

// s19Delays are the api keys the S-19 proxies hold.
var s19Delays = []int16{keyProduce, keyAddPartitionsToTxn, keyEndTxn}

// TestS19LateTxnRequests is TESTPLAN S-19 (the KIP-890 class of bug):
// transactional producers reach every broker through a delayProxy that
// holds 1 in 8 of their Produce, AddPartitionsToTxn and EndTxn requests
// for 1-10 s. Their request timeouts are short (1.5 s, Produce 3 s), so a
// held request times out in the client, which closes the connection and
// retries, aborts or starts over with a new transaction, while the proxy
// still delivers the old request to the broker afterwards: a late
// request. A late request must not affect a later transaction: every
// committed transaction is wholly visible at read_committed, no aborted
// one is, none is torn, and no value is visible twice. The test also
// counts the late requests and what the brokers answered them; without
// any, it tests nothing and fails.
func TestS19LateTxnRequests(t *testing.T) {
	const (
		topic      = "s19"
		partitions = 5
		prob       = 0.125
	)
	run := pick(45*time.Second, 300*time.Second)
	seed := chaosSeed(t)
	isProducer := func(clientID string) bool { return strings.HasPrefix(clientID, "s19-") }
	rule := newDelayRule(seed, s19Delays, isProducer, prob, time.Second, 10*time.Second)
	var proxies []*delayProxy
	c := startClusterFronted(t, envProfile(), func(b *broker) string {
		p := startDelayProxy(t, "kafka "+strconv.Itoa(int(b.id)), b.addr(), rule)
		proxies = append(proxies, p)
		return p.addr()
	})
	c.createTopic(topic, partitions)
	var seeds []string
	for _, p := range proxies {
		seeds = append(seeds, p.addr())
	}
	ids := []string{"s19-a", "s19-b", "s19-c"}
	w := startTxnWorkloadWith(t, c, topic, partitions, func(id string) []kgo.Opt {
		return []kgo.Opt{
			kgo.SeedBrokers(seeds...),
			kgo.ClientID(id),
			kgo.RequestTimeoutOverhead(1500 * time.Millisecond),
			kgo.ProduceRequestTimeout(1500 * time.Millisecond),
			kgo.ProducerBatchCompression(kgo.NoCompression()),
		}
	}, ids...)

	counts := func() (delayed, late [delayKeys]int64) {
		for _, p := range proxies {
			for k := range delayKeys {
				delayed[k] += p.delayed[k].Load()
				late[k] += p.late[k].Load()
			}
		}
		return delayed, late
	}
	progress := func() string {
		d, l := counts()
		o := w.counts()
		return fmt.Sprintf("transactions %d committed, %d aborted, %d unknown; delayed produce %d, add-partitions %d, end-txn %d; late %d",
			o[txnCommitted], o[txnAborted], o[txnUnknown], d[keyProduce], d[keyAddPartitionsToTxn], d[keyEndTxn], sum(l[:]))
	}
	end := time.Now().Add(run)
	for time.Now().Before(end) {
		time.Sleep(min(10*time.Second, time.Until(end)))
		t.Logf("%s", progress())
	}
	w.stop()
	// Let the held requests reach the brokers before the check reads.
	quietBy := time.Now().Add(lateResponseWait + 15*time.Second)
	for time.Now().Before(quietBy) && !allQuiet(proxies) {
		time.Sleep(200 * time.Millisecond)
	}
	if !allQuiet(proxies) {
		t.Logf("proxies still hold requests after the producers stopped")
	}
	r := w.check()

	var lates []lateRequest
	for _, p := range proxies {
		lates = append(lates, p.lateRequests()...)
	}
	sort.Slice(lates, func(i, j int) bool { return lates[i].deliveredAt.Before(lates[j].deliveredAt) })
	rep := analyseLate(w, lates)
	delayed, late := counts()
	t.Logf("S-19: seed %d, %s of faults; delayed (held 1-10 s) produce %d, add-partitions %d, end-txn %d; delivered after the client left: %d (%s)",
		seed, run, delayed[keyProduce], delayed[keyAddPartitionsToTxn], delayed[keyEndTxn], sum(late[:]), keyCounts(late[:]))
	for _, line := range rep.summary() {
		t.Logf("S-19: %s", line)
	}
	t.Logf("S-19: %d late EndTxn and Produce requests accepted while a later transaction of their producer was open", len(rep.joined))
	for _, line := range rep.joined[:min(len(rep.joined), 20)] {
		t.Logf("S-19:   %s", line)
	}
	t.Logf("S-19: %v", r)
	if len(r.bad) > 0 {
		classes := w.explain(r, lates)
		t.Logf("S-19: %d anomalous transactions: %v", len(r.bad), classes)
	}
	if n := late[keyProduce] + late[keyAddPartitionsToTxn] + late[keyEndTxn]; n == 0 {
		t.Errorf("no delayed Produce, AddPartitionsToTxn or EndTxn reached a broker after its client gave up: the fault did not happen")
	}
}

func sum(xs []int64) int64 {
	var n int64
	for _, x := range xs {
		n += x
	}
	return n
}

// keyCounts lists the non-zero counts by api key name.
func keyCounts(by []int64) string {
	var out []string
	for k, n := range by {
		if n > 0 {
			out = append(out, fmt.Sprintf("%s %d", kmsg.NameForKey(int16(k)), n))
		}
	}
	return strings.Join(out, ", ")
}

func allQuiet(ps []*delayProxy) bool {
	for _, p := range ps {
		if !p.quiet() {
			return false
		}
	}
	return true
}

// lateInfo is a late request decoded: what it asked and what the broker
// answered.
type lateInfo struct {
	l       lateRequest
	txnID   string
	pid     int64
	epoch   int16
	commit  bool     // EndTxn
	parts   []int32  // Produce, AddPartitionsToTxn
	values  []string // Produce
	codes   []int16  // per partition, or the one of EndTxn; nil if unanswered
	decoded error
}

func (li *lateInfo) api() string { return kmsg.NameForKey(li.l.header.key) }

// accepted reports whether the broker answered without an error for every
// partition.
func (li *lateInfo) accepted() bool {
	if li.codes == nil {
		return false
	}
	for _, c := range li.codes {
		if c != 0 {
			return false
		}
	}
	return true
}

// outcome names the broker's answer: "accepted", the error names, or
// "no answer".
func (li *lateInfo) outcome() string {
	switch {
	case li.decoded != nil:
		return "undecodable: " + li.decoded.Error()
	case li.codes == nil:
		return "no answer"
	case li.accepted():
		return "accepted"
	}
	var names []string
	for _, c := range li.codes {
		n := "NONE"
		if c != 0 {
			n = kerr.ErrorForCode(c).Error()
			if ke, ok := errors.AsType[*kerr.Error](kerr.ErrorForCode(c)); ok {
				n = ke.Message
			}
		}
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return strings.Join(names, "+")
}

func (li *lateInfo) String() string {
	h := li.l.header
	s := fmt.Sprintf("%s v%d from %s (producer %d epoch %d", li.api(), h.version, h.clientID, li.pid, li.epoch)
	if h.key == keyEndTxn {
		s += fmt.Sprintf(", commit %v", li.commit)
	}
	if len(li.parts) > 0 {
		s += fmt.Sprintf(", partitions %v", li.parts)
	}
	if len(li.values) > 0 {
		s += fmt.Sprintf(", values %s..%s", li.values[0], li.values[len(li.values)-1])
	}
	return s + fmt.Sprintf(") sent %s, held %s, client gone %s, delivered %s: %s",
		li.l.sentAt.Format("15:04:05.000"), li.l.delay.Round(time.Millisecond),
		li.l.clientGone.Format("15:04:05.000"), li.l.deliveredAt.Format("15:04:05.000"), li.outcome())
}

// decodeLate decodes a late request and its answer with kmsg.
func decodeLate(l lateRequest) *lateInfo {
	li := &lateInfo{l: l, pid: -1, epoch: -1}
	req := kmsg.RequestForKey(l.header.key)
	if req == nil {
		li.decoded = fmt.Errorf("api key %d", l.header.key)
		return li
	}
	req.SetVersion(l.header.version)
	idLen := max(int(int16(binary.BigEndian.Uint16(l.request[12:14]))), 0)
	body := l.request[min(14+idLen, len(l.request)):]
	var err error
	if req.IsFlexible() {
		if body, err = skipTags(body); err != nil {
			li.decoded = err
			return li
		}
	}
	if err := req.ReadFrom(body); err != nil {
		li.decoded = fmt.Errorf("request: %w", err)
		return li
	}
	resp := req.ResponseKind()
	resp.SetVersion(l.header.version)
	if l.response != nil {
		rb := l.response[8:]
		if resp.IsFlexible() && l.header.key != 18 { // ApiVersions answers with header v0
			if rb, err = skipTags(rb); err != nil {
				li.decoded = err
				return li
			}
		}
		if err := resp.ReadFrom(rb); err != nil {
			li.decoded = fmt.Errorf("response: %w", err)
			return li
		}
		li.codes = []int16{}
	}
	switch r := req.(type) {
	case *kmsg.ProduceRequest:
		if r.TransactionID != nil {
			li.txnID = *r.TransactionID
		}
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				li.parts = append(li.parts, p.Partition)
				pid, epoch, values := batchValues(p.Records)
				li.pid, li.epoch = pid, epoch
				li.values = append(li.values, values...)
			}
		}
		if l.response != nil {
			for _, t := range resp.(*kmsg.ProduceResponse).Topics {
				for _, p := range t.Partitions {
					li.codes = append(li.codes, p.ErrorCode)
				}
			}
		}
	case *kmsg.AddPartitionsToTxnRequest:
		li.txnID, li.pid, li.epoch = r.TransactionalID, r.ProducerID, r.ProducerEpoch
		for _, t := range r.Topics {
			li.parts = append(li.parts, t.Partitions...)
		}
		if l.response != nil {
			rr := resp.(*kmsg.AddPartitionsToTxnResponse)
			if rr.ErrorCode != 0 {
				li.codes = append(li.codes, rr.ErrorCode)
			}
			for _, t := range rr.Topics {
				for _, p := range t.Partitions {
					li.codes = append(li.codes, p.ErrorCode)
				}
			}
		}
	case *kmsg.EndTxnRequest:
		li.txnID, li.pid, li.epoch, li.commit = r.TransactionalID, r.ProducerID, r.ProducerEpoch, r.Commit
		if l.response != nil {
			li.codes = append(li.codes, resp.(*kmsg.EndTxnResponse).ErrorCode)
		}
	}
	if li.txnID == "" {
		li.txnID = l.header.clientID
	}
	return li
}

// skipTags skips a tagged-field section.
func skipTags(b []byte) ([]byte, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 {
		return nil, errors.New("bad tag count")
	}
	b = b[k:]
	for range n {
		_, k1 := binary.Uvarint(b)
		if k1 <= 0 {
			return nil, errors.New("bad tag")
		}
		size, k2 := binary.Uvarint(b[k1:])
		if k2 <= 0 || uint64(len(b)-k1-k2) < size {
			return nil, errors.New("bad tag size")
		}
		b = b[k1+k2+int(size):]
	}
	return b, nil
}

// batchValues returns the producer id and epoch of the record batches in
// records and the values of their records (uncompressed batches only:
// the S-19 producers do not compress).
func batchValues(records []byte) (pid int64, epoch int16, values []string) {
	pid, epoch = -1, -1
	for len(records) >= 12 {
		// baseOffset int64 | batchLength int32 | the rest of the batch
		size := 12 + int(int32(binary.BigEndian.Uint32(records[8:12])))
		if size <= 12 || size > len(records) {
			return pid, epoch, values
		}
		var b kmsg.RecordBatch
		if err := b.ReadFrom(records[:size]); err != nil {
			return pid, epoch, values
		}
		pid, epoch = b.ProducerID, b.ProducerEpoch
		records = records[size:]
		if b.Attributes&7 != 0 {
			continue
		}
		rs := b.Records
		for range b.NumRecords {
			length, k := binary.Varint(rs)
			if k <= 0 || length < 0 || int64(len(rs)-k) < length {
				break
			}
			var r kmsg.Record
			if err := r.ReadFrom(rs[:k+int(length)]); err != nil {
				break
			}
			values = append(values, string(r.Value))
			rs = rs[k+int(length):]
		}
	}
	return pid, epoch, values
}

// s19Report is what the late requests came to.
type s19Report struct {
	byAPI map[string]map[string]int // api -> outcome -> count
	// joined lists late requests the broker accepted while a later
	// transaction of their producer was open (as the producer saw it).
	joined []string
}

func (r *s19Report) summary() []string {
	var out []string
	apis := make([]string, 0, len(r.byAPI))
	for a := range r.byAPI {
		apis = append(apis, a)
	}
	sort.Strings(apis)
	for _, a := range apis {
		var parts []string
		total := 0
		for o, n := range r.byAPI[a] {
			parts = append(parts, fmt.Sprintf("%s %d", o, n))
			total += n
		}
		sort.Strings(parts)
		out = append(out, fmt.Sprintf("late %s: %d, answered %s", a, total, strings.Join(parts, ", ")))
	}
	return out
}

// txnAt returns the number of id's transaction open at time at (the
// latest begun at or before it), or -1.
func txnAt(txns []txnRecord, id string, at time.Time) int {
	n := -1
	for _, tx := range txns {
		if tx.id == id && !tx.began.After(at) && tx.n > n {
			n = tx.n
		}
	}
	return n
}

// valueTxn returns the transactional id and number a workload value
// names (<id>-t<n>-<i>).
func valueTxn(v string) (string, int, bool) {
	i := strings.LastIndex(v, "-t")
	if i < 0 || len(v) < i+9 {
		return "", 0, false
	}
	n, err := strconv.Atoi(v[i+2 : i+8])
	return v[:i], n, err == nil
}

// analyseLate decodes the late requests and finds those the broker
// accepted while a later transaction of the same producer was open.
func analyseLate(w *txnWorkload, lates []lateRequest) *s19Report {
	w.mu.Lock()
	txns := slices.Clone(w.mu.txns)
	w.mu.Unlock()
	r := &s19Report{byAPI: make(map[string]map[string]int)}
	for _, l := range lates {
		li := decodeLate(l)
		if r.byAPI[li.api()] == nil {
			r.byAPI[li.api()] = make(map[string]int)
		}
		r.byAPI[li.api()][li.outcome()]++
		// An AddPartitionsToTxn accepted late adds partitions to whatever
		// transaction is open, which the checker cannot see; EndTxn and
		// Produce are the ones that can change a later transaction.
		if !li.accepted() || (l.header.key != keyEndTxn && l.header.key != keyProduce) {
			continue
		}
		own := txnAt(txns, li.txnID, l.sentAt)
		if len(li.values) > 0 {
			if _, n, ok := valueTxn(li.values[0]); ok {
				own = n
			}
		}
		if now := txnAt(txns, li.txnID, l.deliveredAt); now > own {
			r.joined = append(r.joined, fmt.Sprintf("%v: sent in transaction %d, delivered in %d", li, own, now))
		}
	}
	return r
}

// explain logs, for each transaction the checker counted as an anomaly,
// where its values are in the log (read_uncommitted, with producer ids
// and epochs, and whether read_committed saw them), and the late requests
// of its producer that the brokers accepted and that can explain it: an
// EndTxn of an earlier transaction delivered while it was open (with
// transaction version 1 the coordinator cannot tell the two apart: both
// have the same producer epoch), or a Produce of its own delivered after
// it ended (joining a later transaction). It logs the first 10 and every
// unexplained one, and returns how many anomalous transactions each
// explanation covers.
func (w *txnWorkload) explain(r *txnResult, lates []lateRequest) map[string]int {
	w.t.Helper()
	type key struct {
		id string
		n  int
	}
	bad := make(map[key]bool)
	for _, b := range r.bad {
		bad[key{b.tx.id, b.tx.n}] = true
	}
	where := make(map[key][]string)
	cl, err := kgo.NewClient(kgo.SeedBrokers(w.c.addrs()...),
		kgo.ConsumeTopics(w.topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadUncommitted()), kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		w.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	ends := endValues(w)
	for len(ends) > 0 && ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		fs.EachRecord(func(rec *kgo.Record) {
			v := string(rec.Value)
			if ends[v] {
				delete(ends, v)
				return
			}
			if id, n, ok := valueTxn(v); ok && bad[key{id, n}] {
				seen := "not visible"
				if r.visible[v] {
					seen = "visible"
				}
				where[key{id, n}] = append(where[key{id, n}], fmt.Sprintf("%s at %d/%d producer %d epoch %d, %s",
					v, rec.Partition, rec.Offset, rec.ProducerID, rec.ProducerEpoch, seen))
			}
		})
	}
	cancel()
	cl.Close()
	var infos []*lateInfo
	for _, l := range lates {
		if li := decodeLate(l); li.accepted() && (l.header.key == keyEndTxn || l.header.key == keyProduce) {
			infos = append(infos, li)
		}
	}
	classes := make(map[string]int)
	for i, b := range r.bad {
		tx := b.tx
		var because []string
		class := "unexplained"
		for _, li := range infos {
			if li.txnID != tx.id {
				continue
			}
			l := li.l
			switch l.header.key {
			case keyEndTxn:
				if l.sentAt.Before(tx.began) && !l.deliveredAt.Before(tx.began) && !l.deliveredAt.After(tx.ended) {
					because = append(because, li.String())
					class = "late EndTxn of an earlier transaction"
				}
			case keyProduce:
				if _, n, ok := valueTxn(li.values[0]); ok && n == tx.n && l.deliveredAt.After(tx.ended) {
					because = append(because, li.String())
					if class == "unexplained" {
						class = "late Produce joined a later transaction"
					}
				}
			}
		}
		classes[class]++
		if i >= 10 && class != "unexplained" {
			continue
		}
		w.t.Logf("explain: %s: %s transaction %d, %s (%v), open %s..%s: %s", b.kind, tx.id, tx.n, tx.outcome, tx.err,
			tx.began.Format("15:04:05.000"), tx.ended.Format("15:04:05.000"), class)
		for _, s := range where[key{tx.id, tx.n}] {
			w.t.Logf("explain:   %s", s)
		}
		for _, s := range because {
			w.t.Logf("explain:   late: %s", s)
		}
	}
	return classes
}

// endValues names the checker's end records of w's topic.
func endValues(w *txnWorkload) map[string]bool {
	ends := make(map[string]bool)
	for p := range w.partitions {
		ends[fmt.Sprintf("end-%s-%d", w.topic, p)] = true
	}
	return ends
}
