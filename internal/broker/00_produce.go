package broker

// Produce: v3-12 (v0-2 refused, refusedBelow)
//
// * v3: record batch v2 only; exactly one batch per partition, as Kafka
//   requires of v3+ (more is INVALID_RECORD).
// * v5: LogStartOffset in the response.
// * v8: RecordErrors and ErrorMessage in the response (KIP-467).
// * v9: flexible versions.
// * v10-11: with NOT_LEADER_OR_FOLLOWER, CurrentLeader (leader id and
//   epoch) and the leader's endpoint in Brokers (KIP-951), so the client
//   can move without a metadata round trip.
// * v12: transaction version 2 (KIP-890 part 2): a transactional batch
//   adds its partition to the producer's transaction (below); a
//   coordinator still writing the previous transaction's markers is asked
//   again for up to 100 ms (KAFKA-18654), then answered with
//   CONCURRENT_TRANSACTIONS (KAFKA-18662). A local coordinator adds all
//   of a request's new partitions with one write of __transaction_state.
//
// acks=-1 (all) is answered once the high watermark passes the batch: it is
// then on every ISR member and, under the default flush policy
// (flush.messages=1), fsynced there (one fsync shared by every produce
// waiting at that moment). With fewer in-sync replicas than
// min.insync.replicas it is refused before the append (NOT_ENOUGH_REPLICAS);
// the high watermark does not advance while the ISR is that small (KIP-966).
// A batch not committed within the request's timeout (TimeoutMillis > 0) is
// answered REQUEST_TIMED_OUT; it stays in the log and may still commit.
//
// acks=1 is answered after the append. Under the durable policy the record
// becomes visible only once fsynced, so when the group-commit flusher is
// behind on the partition's log (more than 1 MiB unsynced, or an unsynced
// append older than 25 ms: replica.Partition.HoldAck) the answer waits until the
// batch is durable. This back-pressure bounds how long acknowledged records
// stay invisible; Kafka, whose high watermark ignores fsync, has no such
// wait.
//
// Quotas (quotas.go): the request's size counts against
// producer_byte_rate, with acks=0 too, and over it the response carries
// throttle_time_ms (v6+, KIP-219; an older response is delayed instead) and
// the connection is muted.
//
// Idempotent batches (producer id >= 0) are deduplicated per partition
// (replica.Partition.Append, KIP-98): a retry of one of the producer's last
// five batches gets the original offsets and no error, and, with acks=all,
// waits until the original is committed. A producer id no broker of this
// cluster ever issued gets UNKNOWN_PRODUCER_ID, once the broker has read
// the cluster's limit from etcd: it reads it in the background when a
// produce names an id above every block it knows of, and until then (or
// while etcd is down) treats the id as Kafka does any unknown producer
// (producer_ids.go issued). No produce waits on etcd. A transactional batch opens
// (or continues) its producer's transaction in the partition, which holds
// the last stable offset there until the coordinator's marker ends it
// (replica.Partition.AppendMarker); a plain batch from a producer whose
// transaction is open is INVALID_TXN_STATE. Control batches are written
// only by the partition leader: from a client they are INVALID_RECORD and
// nothing is written.
//
// With transaction.partition.verification.enable (KIP-890 part 1), the
// first transactional batch of a producer's transaction in a partition is
// first verified with the transaction coordinator (txn_verify.go): not in
// the transaction is INVALID_TXN_STATE, a fenced epoch
// INVALID_PRODUCER_EPOCH, and a coordinator that cannot answer (moving,
// loading, or busy with CONCURRENT_TRANSACTIONS) NOT_ENOUGH_REPLICAS,
// which clients retry; nothing is appended then. From v12 (transaction
// version 2, KIP-890 part 2) the coordinator is asked to add the
// partition to the transaction instead, whatever the verification
// setting: such clients send no AddPartitionsToTxn. A verification guard
// (replica.VerificationGuard) closes the gap between the check and the
// append: a marker of the producer written in between refuses the batch
// with INVALID_TXN_STATE. The check runs on the connection's read
// goroutine, so the connection's next request waits for it; Kafka mutes
// a connection while it serves a request, which orders requests the same
// way.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/record"
	"samsa/internal/replica"
	"samsa/internal/server"
	"samsa/internal/storage"
)

var errMultipleBatches = fmt.Errorf("%w: produce requests v3+ carry exactly one record batch per partition", record.ErrInvalidRecord)

// pendingAck is a partition whose acks=all answer waits until its batch is
// committed: below the high watermark, so durable on every ISR member.
type pendingAck struct {
	topic, partition int // indexes into the response
	p                *replica.Partition
	end              int64 // wait until the high watermark reaches end
	epoch            int32 // the leader epoch of the append
}

// heldAck is a partition whose acks=1 answer waits until its batch is
// durable because the flusher is behind on its log (Partition.HoldAck).
type heldAck struct {
	p   *replica.Partition
	end int64 // wait until the durable offset reaches end
}

func (b *Broker) handleProduce(ctx context.Context, c *server.Conn, req *kmsg.ProduceRequest) server.Reply {
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	if refused(0, req.Version) {
		return refuseProduce(req, resp)
	}
	var waits []pendingAck
	var holds []heldAck

	acksValid := req.Acks == -1 || req.Acks == 0 || req.Acks == 1
	hinted := make(map[int32]bool) // leaders named in CurrentLeader hints
	img := b.cluster.Image()
	nowMs := b.now().UnixMilli()
	// Reference: KafkaApis.handleProduceRequest: WRITE on the
	// transactional id of a transactional produce, WRITE on each topic.
	z := b.authzFor(c)
	txnDenied := req.TransactionID != nil && !z.transactionalID(opWrite, *req.TransactionID)
	if req.Version >= 12 && req.TransactionID != nil && !txnDenied {
		b.addProducePartitions(ctx, *req.TransactionID, req, z)
	}

	for i := range req.Topics {
		rt := &req.Topics[i]
		st := kmsg.NewProduceResponseTopic()
		st.Topic = rt.Topic
		st.TopicID = rt.TopicID
		t := img.Topics[rt.Topic]
		topicDenied := !z.topic(opWrite, rt.Topic)
		topicCounted := false
		for j := range rt.Partitions {
			rp := &rt.Partitions[j]
			sp := kmsg.NewProduceResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.BaseOffset = -1
			sp.LogAppendTime = -1
			sp.LogStartOffset = -1
			switch {
			case txnDenied:
				sp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
			case topicDenied:
				sp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			case !acksValid:
				sp.ErrorCode = kerr.InvalidRequiredAcks.Code
			case t == nil || rp.Partition < 0 || int(rp.Partition) >= len(t.Replicas):
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			default:
				tc, err := b.cachedTopicConfig(img, t)
				if err != nil {
					sp.ErrorCode = kerr.UnknownServerError.Code
					break
				}
				p, err := b.replicas.Leader(storage.TopicPartition{Topic: rt.Topic, Partition: rp.Partition})
				if err == nil && !topicCounted {
					// Kafka counts a request once per topic.
					p.Traffic.ProduceRequests.Add(1)
					topicCounted = true
				}
				if err != nil {
					sp.ErrorCode = errCode(err).Code
					if req.Version >= 10 && sp.ErrorCode == kerr.NotLeaderForPartition.Code {
						// KIP-951: tell the client where the leader is.
						if st, ok := img.Partition(rt.Topic, rp.Partition); ok && st.Leader >= 0 {
							sp.CurrentLeader.LeaderID, sp.CurrentLeader.LeaderEpoch = st.Leader, st.LeaderEpoch
							hinted[st.Leader] = true
						}
					}
					break
				}
				if req.Acks == -1 {
					// Refused before the append when the ISR is
					// already too small (min.insync.replicas).
					if err := p.CheckAppend(); err != nil {
						sp.ErrorCode = errCode(err).Code
						sp.ErrorMessage = errMessage(err)
						break
					}
				}
				var guard replica.VerificationGuard
				if add := req.Version >= 12; req.TransactionID != nil && (add || b.cfg.TransactionPartitionVerificationEnable) {
					if guard, err = b.verifyTxnPartition(ctx, *req.TransactionID, p, rp.Records, add); err != nil {
						sp.ErrorCode = errCode(err).Code
						sp.ErrorMessage = errMessage(err)
						break
					}
				}
				res, err := b.appendBatch(p, guard, rp.Records, batchRules{
					maxMessageBytes: int(tc.MaxMessageBytes),
					logAppendTime:   tc.MessageTimestampType == "LogAppendTime",
					compacted:       tc.Compact(),
					beforeMaxMs:     tc.MessageTimestampBeforeMaxMs,
					afterMaxMs:      tc.MessageTimestampAfterMaxMs,
				}, nowMs)
				if err != nil {
					sp.ErrorCode = errCode(err).Code
					sp.ErrorMessage = errMessage(err)
					break
				}
				if !res.Duplicate {
					p.Traffic.BytesIn.Add(int64(len(rp.Records)))
					p.Traffic.RecordsIn.Add(res.LastOffset - res.BaseOffset + 1)
				}
				sp.BaseOffset = res.BaseOffset
				sp.LogAppendTime = res.LogAppendTime
				sp.LogStartOffset = res.LogStartOffset
				switch {
				case req.Acks == -1:
					waits = append(waits, pendingAck{
						topic: len(resp.Topics), partition: len(st.Partitions),
						p: p, end: res.LastOffset + 1, epoch: res.LeaderEpoch,
					})
				case req.Acks == 1 && !res.Duplicate && p.HoldAck():
					holds = append(holds, heldAck{p, res.LastOffset + 1})
				}
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	for _, id := range img.BrokerIDs() {
		br := img.Brokers[id]
		if host, port, ok := br.Endpoint(c.Listener); ok && hinted[id] {
			rb := kmsg.NewProduceResponseBroker()
			rb.NodeID, rb.Host, rb.Port, rb.Rack = br.NodeID, host, port, br.Rack
			resp.Brokers = append(resp.Brokers, rb)
		}
	}
	if req.Acks == 0 {
		return server.Reply{None: true}
	}
	if len(waits) == 0 && len(holds) == 0 {
		return server.Reply{Msg: resp}
	}
	return server.Reply{Wait: func(ctx context.Context) server.Reply {
		// The request's timeout bounds the wait, as Kafka's delayed
		// produce expires: a leader that can neither advance its high
		// watermark nor shrink its ISR (cut off from its followers and
		// from etcd) answers REQUEST_TIMED_OUT instead of holding the
		// request until the connection ends.
		if req.TimeoutMillis > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, time.Duration(req.TimeoutMillis)*time.Millisecond)
			defer cancel()
		}
		for _, w := range waits {
			if err := w.p.WaitCommitted(ctx, w.end, w.epoch); err != nil {
				sp := &resp.Topics[w.topic].Partitions[w.partition]
				sp.ErrorCode = errCode(err).Code
				sp.BaseOffset = -1
			}
		}
		for _, h := range holds {
			// NB: the hold only paces the producer; the answer stays
			// what acks=1 promises (the leader wrote the batch), so an
			// error here (timeout, a failed log) does not change it.
			_ = h.p.WaitDurable(ctx, h.end)
		}
		return server.Reply{Msg: resp}
	}}
}

// appendBatch validates the records of one partition of a produce request
// and appends them.
// batchRules are the topic configs a produced batch is checked against.
type batchRules struct {
	maxMessageBytes int
	logAppendTime   bool // message.timestamp.type=LogAppendTime
	compacted       bool
	// beforeMaxMs and afterMaxMs are message.timestamp.before.max.ms and
	// message.timestamp.after.max.ms.
	beforeMaxMs, afterMaxMs int64
}

func (b *Broker) appendBatch(p *replica.Partition, guard replica.VerificationGuard, records []byte, r batchRules, nowMs int64) (replica.AppendResult, error) {
	if len(records) > r.maxMessageBytes {
		return replica.AppendResult{}, errMessageTooLarge
	}
	batch, rest, err := record.Split(records)
	if err != nil {
		if errors.Is(err, record.ErrShortBatch) {
			err = record.MarkCorrupt(err)
		}
		return replica.AppendResult{}, err
	}
	if len(rest) != 0 {
		return replica.AppendResult{}, errMultipleBatches
	}
	// NB: max.message.bytes limits the batch as sent, as in Kafka; its
	// records, decompressed, are streamed through a fixed buffer up to
	// record.DefaultMaxDecompressedBytes (a ceiling against compression
	// bombs, far above what a real batch of that size holds). A
	// compacted topic keeps the latest record per key, so a record
	// without one has no meaning there (Kafka rejects it the same way).
	info, err := batch.Validate(record.ValidateOptions{
		FromClient:  true,
		RequireKeys: r.compacted,
	})
	if err != nil {
		if errors.Is(err, record.ErrMissingKey) {
			return replica.AppendResult{}, errNoKeyOnCompactedTopic
		}
		return replica.AppendResult{}, err
	}
	// Reference: KIP-937, Kafka's LogValidator: with CreateTime every
	// record's timestamp is within before.max.ms behind and after.max.ms
	// ahead of the broker's clock (LogAppendTime replaces them).
	if !r.logAppendTime {
		// NB: -1 is a record without a timestamp, which Kafka lets by.
		if late := nowMs - info.MinTimestamp; info.MinTimestamp != -1 && late > r.beforeMaxMs {
			return replica.AppendResult{}, fmt.Errorf("%w: a record is %d ms older than the broker's clock, above message.timestamp.before.max.ms %d", errInvalidTimestamp, late, r.beforeMaxMs)
		}
		if early := info.MaxTimestamp - nowMs; early > r.afterMaxMs {
			return replica.AppendResult{}, fmt.Errorf("%w: a record is %d ms ahead of the broker's clock, above message.timestamp.after.max.ms %d", errInvalidTimestamp, early, r.afterMaxMs)
		}
	}
	switch pid := batch.ProducerID(); {
	case batch.Control():
		// Reference: Kafka UnifiedLog.validateAndAssignOffsets: only the
		// partition leader writes control batches (AppendMarker).
		return replica.AppendResult{}, fmt.Errorf("%w: control batch from a client", record.ErrInvalidRecord)
	case batch.Transactional() && pid < 0:
		return replica.AppendResult{}, fmt.Errorf("%w: transactional batch without a producer id", record.ErrInvalidRecord)
	case pid == record.NoProducerID:
		// Not idempotent. Clients differ in what they put in the epoch and
		// sequence fields then (franz-go sends sequence 0); Kafka ignores
		// them, and so does samsa.
	case pid < 0:
		return replica.AppendResult{}, fmt.Errorf("%w: producer id %d", record.ErrInvalidRecord, pid)
	case !b.producerIDs.issued(pid):
		return replica.AppendResult{}, errUnknownProducer
	}
	return p.AppendVerified(batch, guard, r.logAppendTime, nowMs)
}

// refuseProduce answers a Produce v0-2 (message formats v0 and v1,
// refusedBelow) with UNSUPPORTED_VERSION in every partition and writes
// nothing; one with acks=0 expects no answer, so its connection is closed,
// as Kafka closes it on an acks=0 produce it refuses.
func refuseProduce(req *kmsg.ProduceRequest, resp *kmsg.ProduceResponse) server.Reply {
	if req.Acks == 0 {
		return server.Reply{None: true, Close: true}
	}
	for _, rt := range req.Topics {
		st := kmsg.NewProduceResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewProduceResponseTopicPartition()
			sp.Partition, sp.ErrorCode = rp.Partition, kerr.UnsupportedVersion.Code
			sp.BaseOffset, sp.LogAppendTime, sp.LogStartOffset = -1, -1, -1
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return server.Reply{Msg: resp}
}
