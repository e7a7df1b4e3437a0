package broker

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"samsa/internal/cluster"
	"samsa/internal/group"
	"samsa/internal/record"
	"samsa/internal/replica"
	"samsa/internal/storage"
	"samsa/internal/txn"
)

// offsetsTopic is Kafka's internal topic of group metadata and committed
// offsets.
const offsetsTopic = "__consumer_offsets"

// offsetsLog is one __consumer_offsets partition as the group coordinator
// sees it (group.Log), over this broker's replica of it.
type offsetsLog struct {
	b *Broker
	p *replica.Partition
}

// offsetsAppendTimeout bounds how long a coordinator write waits to be
// committed, so a stalled ISR cannot block the coordinator forever.
const offsetsAppendTimeout = 30 * time.Second

// Append writes recs as one uncompressed batch and waits until it is
// committed: below the high watermark, on every ISR member, as a produce
// with acks=all (Kafka writes offsets with acks=all too). It returns the
// offset of the first record. A replica that is not (or no longer) the
// leader, or whose log is closed or offline, fails with
// group.ErrNotCoordinator wrapping the cause: Kafka answers
// NOT_COORDINATOR when its append gets NOT_LEADER_OR_FOLLOWER or
// KAFKA_STORAGE_ERROR, and the member looks the coordinator up again.
func (l offsetsLog) Append(ctx context.Context, recs []group.KV) (int64, error) {
	bb := record.NewBuilder(record.CodecNone, l.b.now().UnixMilli())
	off, err := l.append(ctx, bb, recs, func(b record.Batch, nowMs int64) (replica.AppendResult, error) {
		return l.p.Append(b, false, nowMs)
	})
	return off, coordinatorErr(err)
}

// AppendTxn writes recs as one transactional batch of producer pid at
// epoch, in Kafka's format for a TxnOffsetCommit (producer id and epoch
// set, base sequence -1, transactional attribute), and waits until it is
// committed, as Append does. The partition tracks the transaction it
// opens, and refuses an epoch older than the producer's: that comes back
// as group.ErrInvalidProducerEpoch wrapping the cause. guard, when it is
// a replica.VerificationGuard (txnOffsetsGuard), refuses the batch if a
// marker of pid reached the partition since it was taken; that error
// (replica.ErrVerificationGuard) reaches the client as the retriable
// COORDINATOR_NOT_AVAILABLE, and its retry is verified anew.
//
// Reference: Kafka GroupMetadataManager.storeOffsets (transactional
// records) and CoordinatorPartitionWriter.append.
func (l offsetsLog) AppendTxn(ctx context.Context, pid int64, epoch int16, guard any, recs []group.KV) (int64, error) {
	bb := record.NewBuilder(record.CodecNone, l.b.now().UnixMilli())
	bb.ProducerID, bb.ProducerEpoch, bb.Transactional = pid, epoch, true
	g, _ := guard.(replica.VerificationGuard)
	off, err := l.append(ctx, bb, recs, func(b record.Batch, nowMs int64) (replica.AppendResult, error) {
		return l.p.AppendFromCoordinator(b, g, nowMs)
	})
	if errors.Is(err, txn.ErrInvalidProducerEpoch) {
		return 0, fmt.Errorf("%w: %w", group.ErrInvalidProducerEpoch, err)
	}
	return off, coordinatorErr(err)
}

// coordinatorErr maps an append's failure to group.ErrNotCoordinator
// where Kafka's coordinator answers NOT_COORDINATOR.
func coordinatorErr(err error) error {
	if errors.Is(err, replica.ErrNotLeader) || errors.Is(err, storage.ErrClosed) || errors.Is(err, storage.ErrLogDirOffline) {
		return fmt.Errorf("%w: %w", group.ErrNotCoordinator, err)
	}
	return err
}

// append builds the batch of recs with bb, appends it with appendFn and
// waits until it is committed.
func (l offsetsLog) append(ctx context.Context, bb *record.Builder, recs []group.KV, appendFn func(record.Batch, int64) (replica.AppendResult, error)) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, offsetsAppendTimeout)
	defer cancel()
	if err := l.p.CheckAppend(); err != nil {
		return 0, err
	}
	for _, r := range recs {
		bb.Add(record.Record{Key: r.Key, Value: r.Value})
	}
	batch, err := bb.Build()
	if err != nil {
		return 0, err
	}
	res, err := appendFn(batch, bb.BaseTimestamp)
	if err != nil {
		return 0, err
	}
	if err := l.p.WaitCommitted(ctx, res.LastOffset+1, res.LeaderEpoch); err != nil {
		return 0, err
	}
	return res.BaseOffset, nil
}

// Replay calls fn for every record and end-transaction marker of the
// partition, in offset order, up to the log end as Kafka's coordinator
// loads it: a replica that has just become leader holds records its high
// watermark does not cover yet (it learns the HW one fetch later), and as
// leader it never truncates them, so they are committed as soon as the
// followers fetch them. The records of a transactional batch carry its
// producer id; control batches other than end-transaction markers are
// skipped.
func (l offsetsLog) Replay(ctx context.Context, fn func(group.Entry) error) error {
	hw := l.p.LogEndOffset()
	off := l.p.LogStartOffset()
	for off < hw {
		if err := ctx.Err(); err != nil {
			return err
		}
		res, err := l.p.ReadRecords(off, 8<<20, hw)
		if err != nil {
			return fmt.Errorf("broker: replay %s-%d at %d: %w", offsetsTopic, l.p.TP.Partition, off, err)
		}
		buf, err := res.AppendTo(nil)
		if err != nil {
			return err
		}
		if len(buf) == 0 {
			return nil
		}
		for len(buf) > 0 {
			b, rest, err := record.Split(buf)
			if err != nil {
				return fmt.Errorf("broker: replay %s-%d: %w", offsetsTopic, l.p.TP.Partition, err)
			}
			buf = rest
			off = b.LastOffset() + 1
			if err := replayBatch(b, fn); err != nil {
				return fmt.Errorf("broker: replay %s-%d at %d: %w", offsetsTopic, l.p.TP.Partition, b.BaseOffset(), err)
			}
		}
	}
	return nil
}

// replayBatch calls fn for the records, or the end-transaction marker, of
// one batch of __consumer_offsets.
//
// Reference: Kafka CoordinatorLoaderImpl (control batches give
// replayEndTransactionMarker) and OffsetMetadataManager.replay (records
// of a producer are pending for it).
func replayBatch(b record.Batch, fn func(group.Entry) error) error {
	recs, err := b.Records(record.DefaultMaxDecompressedBytes)
	if err != nil {
		return err
	}
	if b.Control() {
		// NB: like Kafka's loader, every record of a control batch is
		// looked at, and control records of other types are skipped.
		for i := range recs {
			m, err := record.ParseEndTxnMarker(recs[i].Key, recs[i].Value)
			if errors.Is(err, record.ErrNotEndTxnMarker) {
				continue
			}
			if err != nil {
				return err
			}
			e := group.Entry{Offset: b.BaseOffset() + int64(recs[i].OffsetDelta), ProducerID: b.ProducerID(), Marker: true, Commit: m.Commit()}
			if err := fn(e); err != nil {
				return err
			}
		}
		return nil
	}
	pid := int64(-1)
	if b.Transactional() {
		pid = b.ProducerID()
	}
	for i := range recs {
		if recs[i].Key == nil {
			continue
		}
		e := group.Entry{Offset: b.BaseOffset() + int64(recs[i].OffsetDelta), ProducerID: pid, Key: recs[i].Key, Value: recs[i].Value}
		if err := fn(e); err != nil {
			return err
		}
	}
	return nil
}

// reconcileGroupsLocked loads the group coordinator's state for every
// __consumer_offsets partition led here and unloads those no longer led.
// Loading runs in the background (calls meanwhile get
// COORDINATOR_LOAD_IN_PROGRESS). b.reconcileMu must be held.
func (b *Broker) reconcileGroupsLocked() {
	led := make(map[int32]*replica.Partition)
	for _, p := range b.replicas.Partitions() {
		if p.TP.Topic == offsetsTopic && p.IsLeader() {
			led[p.TP.Partition] = p
		}
	}
	for part, p := range led {
		if b.groupsLoaded[part] == p {
			continue
		}
		b.groupsLoaded[part] = p
		b.loads.Add(1)
		go func() {
			defer b.loads.Done()
			ctx := b.ctx
			start := time.Now()
			if err := b.groups.Load(ctx, part, offsetsLog{b: b, p: p}); err != nil {
				b.log.Error("load group coordinator partition", "partition", part, "err", err)
				// Forget it, so the next reconcile pass loads again.
				b.reconcileMu.Lock()
				if b.groupsLoaded[part] == p {
					delete(b.groupsLoaded, part)
				}
				b.reconcileMu.Unlock()
				return
			}
			b.log.Debug("group coordinator partition loaded", "partition", part, "took", time.Since(start))
		}()
	}
	for part := range b.groupsLoaded {
		if led[part] == nil {
			delete(b.groupsLoaded, part)
			b.groups.Unload(part)
		}
	}
}

// ensureOffsetsTopic creates __consumer_offsets if it does not exist, with
// offsets.topic.num.partitions partitions, offsets.topic.replication.factor
// replicas (at most the live brokers) and compaction.
func (b *Broker) ensureOffsetsTopic(ctx context.Context) error {
	img := b.cluster.Image()
	if img.Topics[offsetsTopic] != nil {
		return nil
	}
	rf := min(b.cfg.OffsetsTopicReplicationFactor, int16(len(img.Brokers)))
	configs := b.internalTopicConfigs(offsetsTopic, rf)
	_, err := b.cluster.CreateTopic(ctx, offsetsTopic, b.cfg.OffsetsTopicNumPartitions, rf, configs)
	if err != nil && !errors.Is(err, cluster.ErrTopicExists) {
		return err
	}
	return b.reconcile()
}

// groupCode is the error code field value of a coordinator error. A
// failed write of __consumer_offsets comes back as a coordinator sentinel
// wrapping the replica's error (group's storeErr); the sentinel decides
// the code, as Kafka's coordinator turns a failed append into
// COORDINATOR_NOT_AVAILABLE or NOT_COORDINATOR. Members must never see the
// produce error underneath (NOT_LEADER_FOR_PARTITION, NOT_ENOUGH_REPLICAS):
// clients do not expect it from a coordinator, and Java's consumer fails
// the commit on it instead of retrying.
func groupCode(err error) int16 {
	switch {
	case errors.Is(err, group.ErrNotCoordinator):
		return kerr.NotCoordinator.Code
	case errors.Is(err, group.ErrCoordinatorNotAvailable):
		return kerr.CoordinatorNotAvailable.Code
	}
	return errorCode(errCode(err))
}

// imageTopics is a metadata image as the consumer groups see topics
// (group.Topics).
type imageTopics struct {
	img   *cluster.Image
	names []string // sorted, made on first use
}

// groupTopics returns the current image's topics for consumer groups.
func (b *Broker) groupTopics() group.Topics { return &imageTopics{img: b.cluster.Image()} }

func topicInfo(t *cluster.Topic) group.TopicInfo {
	return group.TopicInfo{Name: t.Name, ID: t.ID, Partitions: int32(len(t.Replicas))}
}

func (t *imageTopics) Topic(name string) (group.TopicInfo, bool) {
	x := t.img.Topics[name]
	if x == nil {
		return group.TopicInfo{}, false
	}
	return topicInfo(x), true
}

func (t *imageTopics) TopicByID(id group.TopicID) (group.TopicInfo, bool) {
	x := t.img.TopicIDs[id]
	if x == nil {
		return group.TopicInfo{}, false
	}
	return topicInfo(x), true
}

func (t *imageTopics) Names() []string {
	if t.names == nil {
		t.names = slices.Sorted(maps.Keys(t.img.Topics))
	}
	return t.names
}

// Version is the etcd revision of the image: it moves with every
// metadata change, which only makes the groups look at their topics
// again.
func (t *imageTopics) Version() int64 { return t.img.Revision }
