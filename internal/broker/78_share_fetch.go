package broker

// ShareFetch: v1-2 (KIP-932)
//
// * v1: the first version Kafka 4.1 serves; MaxRecords and BatchSize,
//   AcquisitionLockTimeoutMillis in the response.
// * v2: ShareAcquireMode (KIP-1206: 1 = at most MaxRecords records,
//   splitting batches) and IsRenewAck (KIP-1222: acknowledgement type 4
//   renews the lock; such a request carries no fetch).
//
// The partition leader keeps each share-partition's state (sharePart)
// and the member's share session (shareSession). Acknowledgements in the
// request are applied, and written, before records are acquired; what
// they free is offered at once to the fetches parked on the
// share-partition, while the write runs. The
// fetch covers every partition of the session. A fetch that acquires
// nothing waits in the replica manager's delay queue until a session
// partition's high watermark moves, an acknowledgement or release on one
// of them may free records, MaxWaitMillis passes or the earliest lock of
// the partitions expires, and then tries once more. An answer with
// records is a shareFetchBody: the acquired batches go from the log's
// files to the socket with sendfile, never copied through the broker.
//
// READ on the group and on each topic (TOPIC_AUTHORIZATION_FAILED for
// that partition). A broker keeps at most group.share.max.share.sessions
// share sessions: opening another (epoch 0) is SHARE_SESSION_LIMIT_REACHED
// (a member's own session opened again replaces it). Differences from
// Kafka: BatchSize is ignored; a session is not closed when its
// connection drops (it expires after group.share.session.timeout.ms).
//
// Partitions are read up to the high watermark, or under
// the group's share.isolation.level read_committed (a group config, the
// broker's share.isolation.level by default) up to the last stable offset, with the batches of
// aborted transactions and control batches archived instead of acquired
// (share_partitions.go shareFetchOne), so members see committed records
// only.

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/replica"
	"samsa/internal/server"
	"samsa/internal/share"
	"samsa/internal/storage"
)

// shareAckBatches converts the acknowledgement batches of one partition.
func shareAckBatches[T any](in []T, get func(T) (int64, int64, []int8)) []share.AckBatch {
	out := make([]share.AckBatch, 0, len(in))
	for _, x := range in {
		f, l, ts := get(x)
		b := share.AckBatch{First: f, Last: l, Types: make([]share.AckType, len(ts))}
		for i, t := range ts {
			b.Types[i] = share.AckType(t)
		}
		out = append(out, b)
	}
	return out
}

// shareAck applies one partition's acknowledgements and returns the
// partition's error code (0 on success) once they are written.
func (b *Broker) shareAck(ctx context.Context, z authz, group, member string, key sharePartKey, batches []share.AckBatch, renew bool) int16 {
	if err := share.ValidateAcks(batches, renew); err != nil {
		return kerr.InvalidRequest.Code
	}
	// Reference: KIP-1240, share.renew.acknowledge.enable: a group that
	// disables renewals gets INVALID_RECORD_STATE for a partition whose
	// acknowledgements renew, and nothing of them is applied.
	if renew && !b.groupConfig(group).ShareRenewAcknowledgeEnable && renews(batches) {
		return kerr.InvalidRecordState.Code
	}
	sp, topic, err := b.sharePart(ctx, key)
	if err == nil && !z.topic(opRead, topic) {
		sp.mu.Unlock()
		return kerr.TopicAuthorizationFailed.Code
	}
	if err != nil {
		return shareLookupCode(err)
	}
	defer sp.mu.Unlock()
	if err := b.shareAckOne(ctx, sp, member, batches); err != nil {
		return errorCode(errCode(err))
	}
	return 0
}

// renews reports whether batches hold a renewal (acknowledgement type 4).
func renews(batches []share.AckBatch) bool {
	for _, x := range batches {
		for _, t := range x.Types {
			if t == share.AckRenew {
				return true
			}
		}
	}
	return false
}

func (b *Broker) handleShareFetch(c *server.Conn, req *kmsg.ShareFetchRequest) server.Reply {
	z := b.authzFor(c)
	resp := req.ResponseKind().(*kmsg.ShareFetchResponse)
	resp.AcquisitionLockTimeoutMillis = b.groupConfig(derefString(req.GroupID)).ShareRecordLockDurationMs
	fail := func(code int16, msg string) server.Reply {
		resp.ErrorCode = code
		if msg != "" {
			resp.ErrorMessage = &msg
		}
		return server.Reply{Msg: resp}
	}
	if req.GroupID == nil || *req.GroupID == "" || req.MemberID == nil || *req.MemberID == "" {
		return fail(kerr.InvalidRequest.Code, "GroupId and MemberId must be set.")
	}
	group, member := *req.GroupID, *req.MemberID
	if !z.group(opRead, group) {
		return fail(kerr.GroupAuthorizationFailed.Code, "")
	}
	hasAcks := false
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			hasAcks = hasAcks || len(p.AcknowledgementBatches) > 0
		}
	}
	// Reference: KIP-932, share session epochs: the opening request
	// carries no acknowledgements; the closing one (-1) fetches nothing.
	if req.ShareSessionEpoch == 0 && hasAcks {
		return fail(kerr.InvalidRequest.Code, "Acknowledge data present on initial epoch.")
	}
	if req.ShareSessionEpoch < -1 {
		return fail(kerr.InvalidShareSessionEpoch.Code, "")
	}
	renew := req.Version >= 2 && req.IsRenewAck
	if renew && (req.MaxWaitMillis != 0 || req.MinBytes != 0 || req.MaxRecords != 0) {
		return fail(kerr.InvalidRequest.Code, "A renew acknowledgement fetches nothing.")
	}
	sess, err := b.shareSessionFor(group, member, req.ShareSessionEpoch)
	if err != nil {
		return fail(shareSessionCode(err), err.Error())
	}
	if req.ShareSessionEpoch == 0 {
		var keys []sharePartKey
		for _, t := range req.Topics {
			for _, p := range t.Partitions {
				keys = append(keys, sharePartKey{group, t.TopicID, p.Partition})
			}
		}
		// Bounded: a share coordinator that does not answer leaves the
		// state as it is (its next write meets the fence).
		fctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
		b.forgetStaleShareParts(fctx, keys)
		cancel()
	}

	// The response lists every partition of the request, in order, plus
	// the session's other partitions that return records.
	idx := map[sharePartKey]*kmsg.ShareFetchResponseTopicPartition{}
	regions := map[sharePartKey][]storage.Region{} // the acquired batches
	var order []sharePartKey
	add := func(k sharePartKey) *kmsg.ShareFetchResponseTopicPartition {
		if p := idx[k]; p != nil {
			return p
		}
		p := kmsg.NewShareFetchResponseTopicPartition()
		p.Partition = k.partition
		p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch = -1, -1
		idx[k] = &p
		order = append(order, k)
		return &p
	}
	ctx := b.ctx
	b.sharePartitions.mu.Lock()
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			k := sharePartKey{group, t.TopicID, p.Partition}
			if req.ShareSessionEpoch != -1 {
				if _, ok := sess.parts[k]; !ok {
					sess.order = append(sess.order, k)
				}
				sess.parts[k] = p.PartitionMaxBytes
			}
		}
	}
	for _, f := range req.ForgottenTopicsData {
		for _, p := range f.Partitions {
			delete(sess.parts, sharePartKey{group, f.TopicID, p})
		}
	}
	var fetchKeys []sharePartKey
	var maxBytes []int32
	kept := sess.order[:0]
	for _, k := range sess.order {
		if mb, ok := sess.parts[k]; ok {
			kept = append(kept, k)
			fetchKeys = append(fetchKeys, k)
			maxBytes = append(maxBytes, mb)
		}
	}
	sess.order = kept
	b.sharePartitions.mu.Unlock()

	// NB: the fetch acquires after the acknowledgements are written,
	// not while: what they freed goes meanwhile to the fetches parked
	// on the share-partition (shareAckOne wakes them), which answer at
	// once, instead of being held in this answer until the write ends
	// (measured: 11-16% fewer records/s with four members on one
	// partition).
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			k := sharePartKey{group, t.TopicID, p.Partition}
			rp := add(k)
			if len(p.AcknowledgementBatches) == 0 {
				continue
			}
			batches := shareAckBatches(p.AcknowledgementBatches, func(x kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch) (int64, int64, []int8) {
				return x.FirstOffset, x.LastOffset, x.AcknowledgeTypes
			})
			rp.AcknowledgeErrorCode = b.shareAck(ctx, z, group, member, k, batches, renew)
		}
	}
	if req.ShareSessionEpoch == -1 {
		b.releaseShareMember(group, member)
		return b.shareFetchReply(resp, order, idx, regions)
	}
	if renew || req.MaxBytes <= 0 {
		return b.shareFetchReply(resp, order, idx, regions)
	}

	maxRecords := int(req.MaxRecords)
	if req.Version < 1 || maxRecords <= 0 {
		maxRecords = 500
	}
	strict := req.Version >= 2 && req.ShareAcquireMode == 1
	fetch := func() (int, []replica.WatchSpec, time.Time, []shareSeen, bool) {
		acquired := 0
		held := false
		var watches []replica.WatchSpec
		var lockDeadline time.Time
		var seen []shareSeen
		budget := int64(req.MaxBytes)
		for i, k := range fetchKeys {
			if p := idx[k]; (p != nil && p.ErrorCode != 0) || budget <= 0 || (maxRecords-acquired) <= 0 {
				continue
			}
			mb := int64(maxBytes[i])
			if mb <= 0 {
				mb = budget
			}
			var recs []storage.Region
			var acq []share.AcquiredRange
			var sp *sharePart
			var topic string
			var err error
			// A write fenced by the state epoch (the offsets were altered
			// since the state was loaded) drops the state; the second
			// attempt loads the new one.
			for attempt := 0; attempt < 2; attempt++ {
				sp, topic, err = b.sharePart(ctx, k)
				if err != nil {
					break
				}
				if !z.topic(opRead, topic) {
					sp.mu.Unlock()
					break
				}
				recs, acq, err = b.shareFetchOne(ctx, sp, member, min(mb, budget), maxRecords-acquired, strict)
				if sp.p != nil {
					if d := sp.p.NextDeadline(); !d.IsZero() && (lockDeadline.IsZero() || d.Before(lockDeadline)) {
						lockDeadline = d
					}
				}
				if attempt == 0 {
					w := replica.WatchSpec{P: sp.rp, Kind: replica.WaitHighWatermark, At: sp.rp.HighWatermark() + 1}
					if b.groupConfig(sp.key.group).ShareIsolationLevel == "read_committed" {
						w.Kind, w.At = replica.WaitLastStable, sp.rp.LastStableOffset()+1
					}
					watches = append(watches, w)
				}
				if err == nil && len(acq) == 0 {
					sn := shareSeen{sp: sp, p: sp.p}
					if sp.p != nil {
						sn.version = sp.p.Version()
						held = held || sp.p.Holds(member)
					}
					seen = append(seen, sn)
				}
				sp.mu.Unlock()
				if !errors.Is(err, share.ErrFencedStateEpoch) {
					break
				}
			}
			if err == nil && sp != nil && !z.topic(opRead, topic) {
				add(k).ErrorCode = kerr.TopicAuthorizationFailed.Code
				continue
			}
			if sp == nil && err != nil {
				fp := add(k)
				fp.ErrorCode, fp.ErrorMessage = shareLookupCode(err), errMessage(err)
				continue
			}
			if err != nil {
				fp := add(k)
				fp.ErrorCode, fp.ErrorMessage = errorCode(errCode(err)), errMessage(err)
				continue
			}
			if len(acq) == 0 {
				continue
			}
			rp := add(k)
			regions[k] = append(regions[k], recs...)
			for _, a := range acq {
				ar := kmsg.NewShareFetchResponseTopicPartitionAcquiredRecord()
				ar.FirstOffset, ar.LastOffset, ar.DeliveryCount = a.First, a.Last, a.DeliveryCount
				rp.AcquiredRecords = append(rp.AcquiredRecords, ar)
				acquired += int(a.Last - a.First + 1)
			}
			for _, r := range recs {
				budget -= r.Size
			}
		}
		return acquired, watches, lockDeadline, seen, held
	}
	n, watches, lockDeadline, seen, held := fetch()
	if n > 0 || req.MaxWaitMillis <= 0 || len(watches) == 0 {
		if n > 0 && sess.heldWait.Load() != 0 {
			sess.heldWait.Store(0)
		}
		return b.shareFetchReply(resp, order, idx, regions)
	}
	wait := time.Duration(req.MaxWaitMillis) * time.Millisecond
	if held {
		// The member holds records of the fetch's partitions and
		// acquired nothing: its acknowledgements of them may be
		// waiting in the client for this very fetch to end (franz-go
		// sends them with its next ShareFetch), while what they would
		// free (the in-flight window) is what this and the other
		// members' fetches wait for. So such a fetch parks briefly,
		// twice as long each time in a row, up to MaxWaitMillis: a
		// member that acknowledges quickly is not held up for the
		// whole max wait, and one that processes slowly costs a
		// handful of empty fetches.
		w := 2 * time.Duration(sess.heldWait.Load())
		if hasAcks || w < shareHeldWaitMin {
			w = shareHeldWaitMin
		}
		wait = min(w, wait)
		sess.heldWait.Store(int64(wait))
	}
	deadline := b.now().Add(wait)
	if !lockDeadline.IsZero() && lockDeadline.Before(deadline) {
		deadline = lockDeadline.Add(time.Millisecond)
	}
	return server.Reply{Wait: func(wctx context.Context) server.Reply {
		start := time.Now()
		// An acknowledgement or release on a partition of the fetch
		// wakes it too (Reference: Kafka completes delayed share
		// fetches when acknowledgements free records).
		wake := make(chan struct{}, 1)
		if b.parkShareFetch(seen, wake) {
			op := b.replicas.Watch(watches, deadline)
			select {
			case <-op.Done():
			case <-wake:
				op.Cancel()
			case <-wctx.Done():
				op.Cancel()
			case <-b.draining:
				op.Cancel()
			}
			b.unparkShareFetch(seen, wake)
		}
		fetch()
		r := b.shareFetchReply(resp, order, idx, regions)
		r.Parked = time.Since(start)
		return r
	}}
}

// shareHeldWaitMin is the first park of a share fetch whose member holds
// records and acquired nothing (handleShareFetch).
const shareHeldWaitMin = 2 * time.Millisecond

// shareFetchReply groups the partitions by topic in the order they were
// added: the request's partitions, then the session's others that have
// records or an error. An answer with records is laid out for sendfile
// (encodeShareFetchResponse), one without is encoded by kmsg.
func (b *Broker) shareFetchReply(resp *kmsg.ShareFetchResponse, order []sharePartKey, idx map[sharePartKey]*kmsg.ShareFetchResponseTopicPartition, regions map[sharePartKey][]storage.Region) server.Reply {
	topics := map[[16]byte]int{}
	resp.Topics = resp.Topics[:0]
	var regs [][][]storage.Region
	hasRecords := false
	for _, k := range order {
		p := idx[k]
		i, ok := topics[k.topicID]
		if !ok {
			t := kmsg.NewShareFetchResponseTopic()
			t.TopicID = k.topicID
			resp.Topics = append(resp.Topics, t)
			regs = append(regs, nil)
			i = len(resp.Topics) - 1
			topics[k.topicID] = i
		}
		resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, *p)
		regs[i] = append(regs[i], regions[k])
		hasRecords = hasRecords || len(regions[k]) > 0
	}
	if !hasRecords {
		return server.Reply{Msg: resp}
	}
	return server.Reply{Body: encodeShareFetchResponse(resp, regs)}
}
