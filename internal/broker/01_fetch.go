package broker

// Fetch: v4-16 (v0-3 refused, refusedBelow)
//
// * v4: isolation level; LastStableOffset and AbortedTransactions (KIP-98).
//   A consumer at read_committed (isolation level 1) reads only below the
//   last stable offset, the smaller of the high watermark and the first
//   offset of the oldest open transaction, and gets the aborted
//   transactions (producer id, first offset) that overlap the records
//   returned, an empty list when there are none; at read_uncommitted it
//   reads up to the high watermark and AbortedTransactions is null. Both
//   report the last stable offset in LastStableOffset, as Kafka does.
// * v5: LogStartOffset.
// * v7: fetch sessions (KIP-227): incremental fetches, for consumers and
//   followers, in a cache of max.incremental.fetch.session.cache.slots
//   sessions (fetch_session.go, internal/fetchsession).
// * v9: CurrentLeaderEpoch per partition (KIP-320): FENCED_LEADER_EPOCH or
//   UNKNOWN_LEADER_EPOCH when it differs from the leader's.
// * v11: RackID and PreferredReadReplica (KIP-392, follower_fetch.go): with
//   replica.selector.class set to the rack-aware selector, a leader sends a
//   consumer whose rack it is not in to an in-sync replica in that rack,
//   with no records; a follower serves a v11+ consumer's fetch up to the
//   high watermark it knows (the last stable offset at read_committed).
// * v12: flexible versions; DivergingEpoch, only used by replicas.
// * v13: topic ids instead of names (KIP-516); UNKNOWN_TOPIC_ID.
// * v15: ReplicaState replaces ReplicaID (KIP-903).
//
// A fetch carrying a replica id is a follower's: it reads up to the log end
// rather than the high watermark, and its fetch offset, which a samsa
// follower only sends once everything below it is fsynced, counts toward the
// high watermark (replica.Partition.FollowerFetched).
// * v12+: CurrentLeader on NOT_LEADER_OR_FOLLOWER, and v16: NodeEndpoints
//   with the leader's address (KIP-951), so a consumer moves without a
//   metadata round trip.
//
// Quotas (quotas.go): a consumer's fetch records its response size against
// consumer_byte_rate and its read time against request_percentage; a
// response holds at most what the byte quota allows in a window, and a
// throttled one carries no data, only throttle_time_ms (v8+, KIP-219; an
// older response is delayed instead). A follower's fetch is exempt.
//
// max_wait_ms/min_bytes long-poll: the request waits on the write goroutine
// until min_bytes are available, a partition errors, or max_wait_ms passes,
// as one delayed operation of the replica manager's delay queue watched
// under each partition (Kafka's DelayedFetch; no polling). Above one byte,
// min_bytes is summed over the partitions as they get data, each capped at
// its partition_max_bytes, as Kafka's DelayedFetch.tryComplete does. Records above the
// high watermark are never returned. The response holds at most max_bytes
// (capped at 55 MiB, Kafka's fetch.max.bytes) and each partition at most its
// partition_max_bytes, except that the first partition with data always
// returns at least one whole batch.

import (
	"context"
	"math"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/cluster"
	"samsa/internal/quota"
	"samsa/internal/replica"
	"samsa/internal/server"
	"samsa/internal/storage"
)

// fetchMaxBytes is Kafka's fetch.max.bytes default, the cap on a response.
const fetchMaxBytes = 55 << 20

func (b *Broker) handleFetch(ctx context.Context, c *server.Conn, req *kmsg.FetchRequest, clientID *string) server.Reply {
	if refused(1, req.Version) {
		return refuseFetch(req)
	}
	req, session, early := b.openFetchSession(req) // fetch_session.go
	if early != nil {
		return *early
	}
	// Reference: KafkaApis.handleFetchRequest: a follower's fetch needs
	// CLUSTER_ACTION (else every partition fails, CVE-2018-1288), a
	// consumer's READ on each topic.
	z := b.authzFor(c)
	var allowed func(topic string) bool
	if z.on() {
		if fetchReplicaID(req) >= 0 {
			ok := z.cluster(opClusterAction)
			allowed = func(string) bool { return ok }
		} else {
			seen := make(map[string]bool)
			allowed = func(topic string) bool {
				ok, done := seen[topic]
				if !done {
					ok = z.topic(opRead, topic)
					seen[topic] = ok
				}
				return ok
			}
		}
	}
	q := b.newFetchQuota(c, req, clientID).withSession(session)
	f := q.fetch(b, req, c.Listener, allowed)
	if f.done || f.n >= int64(req.MinBytes) || req.MaxWaitMillis <= 0 {
		return q.reply(b, req, f)
	}
	deadline := b.now().Add(time.Duration(req.MaxWaitMillis) * time.Millisecond)
	if soon := b.now().Add(newsWait); f.newsRecent && soon.Before(deadline) {
		deadline = soon
	}
	return server.Reply{Wait: func(ctx context.Context) server.Reply {
		// parked is the time spent waiting for data, which the slow
		// request log leaves out (server/slow.go).
		var parked time.Duration
		for {
			start := time.Now()
			woken, enough := b.waitFetch(ctx, f, int64(req.MinBytes), deadline)
			parked += time.Since(start)
			if !woken {
				r := q.reply(b, req, q.fetch(b, req, c.Listener, allowed))
				r.Parked = parked
				return r
			}
			news := f.news.NewsReached()
			f = q.fetch(b, req, c.Listener, allowed)
			if enough || news || f.done || f.n >= int64(req.MinBytes) {
				r := q.reply(b, req, f)
				r.Parked = parked
				return r
			}
		}
	}}
}

// newsWait is the longest a follower's fetch parks for a second after news
// (replica.WatchSpec.RecentNews).
const newsWait = 10 * time.Millisecond

// waitFetch parks a Fetch as one delayed operation watched under each of
// the partitions f read (replica.Manager.Watch), until the first of them
// has data past what was read or a partition changes role or fails
// (woken), or deadline passes, ctx is done or the broker drains (not
// woken). With minBytes above 1 the operation fires per partition
// instead (replica.Manager.WatchEach): the partitions that fired are read
// again, alone, and their bytes, each capped at its partition_max_bytes,
// are summed with what the others hold until they reach minBytes (woken
// and enough, as Kafka's DelayedFetch.tryComplete sums them), each
// partition watched again past what it now holds. The caller reads every
// partition again once woken.
func (b *Broker) waitFetch(ctx context.Context, f *fetchResult, minBytes int64, deadline time.Time) (woken, enough bool) {
	if !b.now().Before(deadline) {
		return false, false
	}
	if minBytes <= 1 {
		op := b.replicas.Watch(f.watches, deadline)
		select {
		case <-op.Done():
			return op.Outcome() != replica.Expired, false
		case <-ctx.Done():
		case <-b.draining:
		}
		op.Cancel()
		return false, false
	}
	op := b.replicas.WatchEach(f.watches, deadline)
	sum := f.n
	for {
		select {
		case <-op.Fired():
			for _, i := range op.TakeFired() {
				w, fp := f.watches[i], &f.parts[i]
				if fp.news {
					op.Cancel()
					return true, true
				}
				var sp kmsg.FetchResponseTopicPartition
				res, end, err := readPartition(w.P, fp.offset, fp.maxBytes, true, fp.follower, fp.committed, &sp)
				if err != nil {
					// The full read answers with the error at once.
					op.Cancel()
					return true, true
				}
				n := min(res.Size, fp.maxBytes)
				sum += n - fp.bytes
				fp.bytes = n
				op.Rearm(i, max(fp.offset, end)+1)
			}
			if sum < minBytes {
				continue
			}
			if op.Complete() {
				return true, true
			}
			<-op.Done() // completed meanwhile
			return op.Outcome() != replica.Expired, false
		case <-op.Done():
			return op.Outcome() != replica.Expired, false
		case <-ctx.Done():
		case <-b.draining:
		}
		op.Cancel()
		return false, false
	}
}

// fetchQuota applies consumer_byte_rate and request_percentage to one
// consumer Fetch (quotas.go). The zero value applies nothing: a follower's
// fetch, or no such quota configured.
type fetchQuota struct {
	bytes, requests quota.Resolution // Found: the quota applies
	// maxBytes caps the response at what the byte quota allows in one
	// window; 0 means no cap.
	maxBytes int64
	// work is the time spent reading the logs, for request_percentage.
	work time.Duration
	// session, if not nil, is the request's fetch session, given to
	// each result read.
	session *fetchSession
}

// noFetchQuota is the fetchQuota of fetches no quota applies to. It is
// shared, and never changed: fetch and reply write nothing when no quota
// was found.
var noFetchQuota fetchQuota

func (b *Broker) newFetchQuota(c *server.Conn, req *kmsg.FetchRequest, clientID *string) *fetchQuota {
	img := b.quotaImage()
	if fetchReplicaID(req) >= 0 || !(img.Has(quota.KeyConsumerByteRate) || img.Has(quota.KeyRequestPercentage)) {
		return &noFetchQuota
	}
	user, cid := quotaUser(c.Principal), quotaClientID(clientID)
	bytes, requests := img.Resolve(user, cid, quota.KeyConsumerByteRate), img.Resolve(user, cid, quota.KeyRequestPercentage)
	if !bytes.Found && !requests.Found {
		return &noFetchQuota
	}
	q := &fetchQuota{bytes: bytes, requests: requests}
	if q.bytes.Found {
		// Reference: ClientQuotaManager.getMaxValueInQuotaWindow.
		w := b.quotas.window
		q.maxBytes = max(1, int64(q.bytes.Quota*float64(w.Samples-1)*w.Size.Seconds()))
	}
	return q
}

func (q *fetchQuota) on() bool { return q.bytes.Found || q.requests.Found }

// fetch is fetchOnce, timed when request_percentage applies.
func (q *fetchQuota) fetch(b *Broker, req *kmsg.FetchRequest, listener string, allowed func(string) bool) *fetchResult {
	if !q.requests.Found {
		f := b.fetchOnce(req, listener, allowed, q.maxBytes)
		f.session = q.session
		return f
	}
	start := b.now()
	f := b.fetchOnce(req, listener, allowed, q.maxBytes)
	q.work += b.now().Sub(start)
	f.session = q.session
	return f
}

// reply records the response and returns it, or, if a quota is exceeded,
// takes back the bytes it recorded and returns a response without data
// carrying the throttle time, as Kafka's KafkaApis does: the client fetches
// the same offsets again once the throttle has passed.
func (q *fetchQuota) reply(b *Broker, req *kmsg.FetchRequest, f *fetchResult) server.Reply {
	r := f.reply()
	if !q.on() {
		f.count()
		return r
	}
	now := b.now()
	var throttle time.Duration
	var size float64
	if q.bytes.Found {
		if r.Body != nil {
			size = float64(r.Body.Len())
		} else {
			size = float64(len(r.Msg.AppendTo(nil)))
		}
		throttle = b.quotas.bytes.Record(now, q.bytes.Sensor, q.bytes.Quota, size)
	}
	if q.requests.Found {
		throttle = max(throttle, b.quotas.requests.Record(now, q.requests.Sensor, q.requests.Quota, quota.RequestPercentage(q.work)))
	}
	if throttle <= 0 {
		f.count()
		return r
	}
	if q.bytes.Found && f.n > q.maxBytes {
		f.count()
		// NB: a first batch larger than the quota allows in a window (the
		// one a fetch returns whole) would be withheld for ever, and the
		// consumer stuck: it goes out, with its throttle. Kafka withholds it.
		f.resp.ThrottleMillis = throttleMillis(throttle)
		if r.Body != nil {
			r = f.reply() // encoded again, with the throttle; a Msg is f.resp
		}
		if _, after := f.resp.Throttle(); !after {
			return delayReply(r, throttle)
		}
		r.Throttle = throttle
		return r
	}
	if q.bytes.Found {
		b.quotas.bytes.Record(now, q.bytes.Sensor, math.Inf(1), -size)
	}
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	f.session.throttled(f, resp)
	return throttleReply(server.Reply{Msg: resp}, req.Version, throttle)
}

// fetchResult is one pass over the logs for a Fetch request.
type fetchResult struct {
	resp    *kmsg.FetchResponse
	regions [][][]storage.Region // per topic, per partition
	n       int64                // bytes of record batches
	// watches are what a long-poll waits for: on each partition read,
	// the offset past the end it read to (the high watermark, last
	// stable offset or, for a follower, log end). Registering them
	// compares with the current offsets, so no change is missed.
	watches []replica.WatchSpec
	// parts says, for each watch, where its partition's read started and
	// what it found, for a long-poll that sums min_bytes.
	parts []fetchPart
	// done means the response must go out at once (a partition has an
	// error).
	done bool
	// hinted are leaders named in CurrentLeader hints (KIP-951).
	hinted []int32
	img    *cluster.Image
	// listener is the listener the request arrived on; leader hints
	// name brokers by their address there.
	listener string
	// served are the partitions read, for their Traffic counters.
	served []servedPartition
	// follower is set for a follower's fetch.
	follower bool
	// news is a follower's FollowerNews watch (also in watches), and
	// newsRecent whether it had news within the last second: its wait is
	// then short (newsWait).
	news       replica.WatchSpec
	newsRecent bool
	// session, if not nil, is the request's fetch session (KIP-227,
	// fetch_session.go); sessionDone is set once it saw the response.
	session     *fetchSession
	sessionDone bool
}

// fetchPart is one partition of a Fetch as a long-poll watches it: the
// fetch offset and partition_max_bytes, how it reads, and the bytes past
// the offset it last found.
type fetchPart struct {
	offset, maxBytes    int64
	follower, committed bool
	bytes               int64
	// news marks a follower's FollowerNews watch, which reads nothing:
	// once reached the fetch answers, and the follower fetches again with
	// the partitions it has started to follow.
	news bool
}

// servedPartition is what one Fetch read from one partition.
type servedPartition struct {
	p              *replica.Partition
	bytes, records int64
	// first marks the first partition of its topic in the request, on
	// which the request is counted.
	first bool
}

// count adds a response that goes out with its data to the partitions'
// Traffic counters.
func (f *fetchResult) count() {
	for _, sp := range f.served {
		t := &sp.p.Traffic
		if f.follower {
			t.ReplicationBytesOut.Add(sp.bytes)
			continue
		}
		t.BytesOut.Add(sp.bytes)
		t.RecordsOut.Add(sp.records)
		if sp.first {
			t.FetchRequests.Add(1)
		}
	}
}

// reply lays the response out with its file regions for sendfile. A
// response carrying KIP-951 leader hints goes through kmsg instead, which
// encodes the tagged fields the sendfile encoder leaves out.
func (f *fetchResult) reply() server.Reply {
	f.session.respond(f)
	if len(f.hinted) > 0 {
		for _, id := range f.img.BrokerIDs() {
			if slices.Contains(f.hinted, id) {
				br := f.img.Brokers[id]
				host, port, ok := br.Endpoint(f.listener)
				if !ok {
					continue
				}
				rb := kmsg.NewFetchResponseBroker()
				rb.NodeID, rb.Host, rb.Port, rb.Rack = br.NodeID, host, port, br.Rack
				f.resp.Brokers = append(f.resp.Brokers, rb)
			}
		}
		if f.n > 0 {
			f.materialize()
		}
		return server.Reply{Msg: f.resp}
	}
	if f.n == 0 {
		return server.Reply{Msg: f.resp}
	}
	return server.Reply{Body: encodeFetchResponse(f.resp, f.regions)}
}

// materialize reads the regions into the response's RecordBatches.
func (f *fetchResult) materialize() {
	for i := range f.resp.Topics {
		for j := range f.resp.Topics[i].Partitions {
			var buf []byte
			for _, r := range f.regions[i][j] {
				start := len(buf)
				buf = append(buf, make([]byte, r.Size)...)
				if _, err := r.File.ReadAt(buf[start:], r.Pos); err != nil {
					f.resp.Topics[i].Partitions[j].ErrorCode = kerr.KafkaStorageError.Code
					buf = buf[:start]
					break
				}
			}
			if buf != nil {
				f.resp.Topics[i].Partitions[j].RecordBatches = buf
			}
		}
	}
}

// fetchOnce builds a response from what the logs hold now.
// allowed, if not nil, says whether the request may read a topic.
// quotaMax, if not 0, caps the response bytes further (consumer_byte_rate).
func (b *Broker) fetchOnce(req *kmsg.FetchRequest, listener string, allowed func(topic string) bool, quotaMax int64) *fetchResult {
	f := &fetchResult{resp: req.ResponseKind().(*kmsg.FetchResponse), listener: listener}
	follower := fetchReplicaID(req)
	f.follower = follower >= 0
	if f.follower {
		// NB: taken before any partition is read, so that an append to
		// a partition the follower does not fetch yet, made while this
		// one reads, still wakes it.
		f.news = b.replicas.FollowerNews(follower)
		f.watches = append(f.watches, f.news)
		f.parts = append(f.parts, fetchPart{news: true})
		f.newsRecent = f.news.RecentNews(b.now().UnixMilli())
	}
	f.resp.SetVersion(req.Version)
	img := b.cluster.Image()
	f.img = img
	budget := int64(req.MaxBytes)
	if budget > fetchMaxBytes {
		budget = fetchMaxBytes
	}
	if quotaMax > 0 && budget > quotaMax {
		budget = quotaMax
	}
	if budget < 0 {
		budget = 0
	}
	minOne := true
	f.regions = make([][][]storage.Region, len(req.Topics))
	for i := range req.Topics {
		rt := &req.Topics[i]
		st := kmsg.NewFetchResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		name := rt.Topic
		unknownCode := kerr.UnknownTopicOrPartition.Code
		if req.Version >= 13 {
			unknownCode = kerr.UnknownTopicID.Code
			if t := img.TopicIDs[rt.TopicID]; t != nil {
				name = t.Name
			} else {
				name = ""
			}
		}
		f.regions[i] = make([][]storage.Region, len(rt.Partitions))
		topicCounted := false
		for j := range rt.Partitions {
			rp := &rt.Partitions[j]
			sp := kmsg.NewFetchResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = -1, -1, -1
			sp.RecordBatches = []byte{} // librdkafka rejects a null record set
			tp := storage.TopicPartition{Topic: name, Partition: rp.Partition}
			p, err := b.replicas.Leader(tp)
			if err != nil && follower < 0 && req.Version >= 11 {
				p, err = b.followerReadable(tp, err)
			}
			switch {
			case name == "":
				// Reference: KafkaApis.handleFetchRequest answers an
				// unknown topic id before it authorizes (a consumer
				// with a stale id refreshes its metadata).
				sp.ErrorCode = unknownCode
				f.done = true
			case allowed != nil && !allowed(name):
				sp.ErrorCode = kerr.TopicAuthorizationFailed.Code
				f.done = true
			case img.Topics[name] == nil:
				sp.ErrorCode = unknownCode
				f.done = true
			case err != nil:
				if rp.Partition < 0 || int(rp.Partition) >= len(img.Topics[name].Replicas) {
					sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				} else {
					sp.ErrorCode = errCode(err).Code
					if req.Version >= 12 && sp.ErrorCode == kerr.NotLeaderForPartition.Code {
						// KIP-951 hint; see fetchResult.reply.
						if st, ok := img.Partition(name, rp.Partition); ok && st.Leader >= 0 {
							sp.CurrentLeader.LeaderID, sp.CurrentLeader.LeaderEpoch = st.Leader, st.LeaderEpoch
							f.hinted = append(f.hinted, st.Leader)
						}
					}
				}
				f.done = true
			default:
				if code := checkLeaderEpoch(p, rp.CurrentLeaderEpoch); code != 0 {
					sp.ErrorCode = code
					f.done = true
					break
				}
				if follower < 0 && req.Version >= 11 && b.sendToReadReplica(img, p, req.Rack, rp.FetchOffset, &sp) {
					// Reference: Kafka answers at once, without reading
					// (KAFKA-13767): the consumer moves to that replica.
					f.done = true
					break
				}
				if follower >= 0 {
					// The fetch offset is what the follower has
					// fsynced: it may move the high watermark (the
					// leader ignores ids outside the assignment and
					// offsets past its log end).
					p.FollowerFetched(follower, rp.FetchOffset)
				}
				limit := min(int64(rp.PartitionMaxBytes), budget)
				committed := follower < 0 && req.Version >= 4 && req.IsolationLevel == 1
				res, end, err := readPartition(p, rp.FetchOffset, limit, minOne, follower >= 0, committed, &sp)
				if err != nil {
					sp.ErrorCode = errCode(err).Code
					f.done = true
					break
				}
				next := max(rp.FetchOffset, end) + 1
				fp := fetchPart{offset: rp.FetchOffset, maxBytes: int64(rp.PartitionMaxBytes), follower: follower >= 0, committed: committed, bytes: res.Size}
				switch {
				case follower >= 0:
					f.watches = append(f.watches, replica.WatchSpec{P: p, Kind: replica.WaitLogEnd, At: next})
					f.parts = append(f.parts, fp)
					if req.MinBytes <= 1 {
						// The high watermark too: the follower
						// learns it from the response.
						f.watches = append(f.watches, replica.WatchSpec{P: p, Kind: replica.WaitHighWatermark, At: sp.HighWatermark + 1})
						f.parts = append(f.parts, fp)
					}
				case committed:
					f.watches = append(f.watches, replica.WatchSpec{P: p, Kind: replica.WaitLastStable, At: next})
					f.parts = append(f.parts, fp)
				default:
					f.watches = append(f.watches, replica.WatchSpec{P: p, Kind: replica.WaitHighWatermark, At: next})
					f.parts = append(f.parts, fp)
				}
				served := servedPartition{p: p, first: !topicCounted}
				topicCounted = true
				if res.Size > 0 {
					minOne = false
					budget -= res.Size
					f.n += res.Size
					f.regions[i][j] = res.Regions
					served.bytes = res.Size
					if res.NextOffset > rp.FetchOffset {
						served.records = res.NextOffset - rp.FetchOffset
					}
				}
				f.served = append(f.served, served)
			}
			st.Partitions = append(st.Partitions, sp)
		}
		f.resp.Topics = append(f.resp.Topics, st)
	}
	return f
}

// readPartition reads from offset up to the high watermark (a consumer at
// read_uncommitted), the last stable offset (committed: read_committed) or
// the log end (a follower, which replicates what is not committed yet) and
// fills the offsets of sp and, when committed, its AbortedTransactions. It
// returns the end it read to.
func readPartition(p *replica.Partition, offset, limit int64, minOne, follower, committed bool, sp *kmsg.FetchResponseTopicPartition) (storage.ReadResult, int64, error) {
	iso := replica.ReadUncommitted
	switch {
	case follower:
		iso = replica.ReadLogEnd
	case committed:
		iso = replica.ReadCommitted
	}
	res, err := p.Read(offset, limit, minOne, iso)
	sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = res.HighWatermark, res.LastStableOffset, res.LogStartOffset
	if err != nil {
		return storage.ReadResult{}, 0, err
	}
	if committed {
		// Reference: Kafka LocalLog.read with FetchIsolation.TXN_COMMITTED:
		// a list, empty when nothing was aborted.
		sp.AbortedTransactions = []kmsg.FetchResponseTopicPartitionAbortedTransaction{}
	}
	if !committed || res.Size == 0 {
		return res.ReadResult, res.End, nil
	}
	// Reference: Kafka LocalLog.addAbortedTransactions: the aborted
	// transactions that overlap the records returned, so the consumer can
	// drop their records.
	for _, a := range p.AbortedTxns(offset, res.NextOffset) {
		at := kmsg.NewFetchResponseTopicPartitionAbortedTransaction()
		at.ProducerID, at.FirstOffset = a.ProducerID, a.FirstOffset
		sp.AbortedTransactions = append(sp.AbortedTransactions, at)
	}
	return res.ReadResult, res.End, nil
}

// fetchReplicaID is the broker id of a follower's fetch, or -1 for a
// consumer.
func fetchReplicaID(req *kmsg.FetchRequest) int32 {
	if req.Version >= 15 {
		return req.ReplicaState.ID
	}
	return req.ReplicaID
}

// checkLeaderEpoch compares a client's idea of the leader epoch (-1: none)
// with the partition's. Reference: KIP-320.
func checkLeaderEpoch(p *replica.Partition, epoch int32) int16 {
	switch cur := p.LeaderEpoch(); {
	case epoch < 0 || epoch == cur:
		return 0
	case epoch < cur:
		return kerr.FencedLeaderEpoch.Code
	default:
		return kerr.UnknownLeaderEpoch.Code
	}
}

// refuseFetch answers a Fetch v0-3 (message formats v0 and v1,
// refusedBelow) with UNSUPPORTED_VERSION and no records in every
// partition.
func refuseFetch(req *kmsg.FetchRequest) server.Reply {
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	for _, rt := range req.Topics {
		st := kmsg.NewFetchResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewFetchResponseTopicPartition()
			sp.Partition, sp.ErrorCode = rp.Partition, kerr.UnsupportedVersion.Code
			sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = -1, -1, -1
			// Empty, not null: Kafka sends a zero-length record set with
			// a partition error, and sarama's v0-v3 decoder fails on a
			// null one before it reads the error code.
			sp.RecordBatches = []byte{}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return server.Reply{Msg: resp}
}
