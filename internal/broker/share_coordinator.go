package broker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/cluster"
	"samsa/internal/group"
	"samsa/internal/replica"
	"samsa/internal/share"
)

// shareStateTopic is Kafka's internal topic of share-partition state,
// owned by the share coordinator (KIP-932).
const shareStateTopic = "__share_group_state"

// The share coordinator of share-partition (G, T, P) is the leader of
// partition javaHashCode("G:T:P") % share.coordinator.state.topic.num.partitions
// of __share_group_state. It keeps the last snapshot of each
// share-partition it maps (share.States), loaded by replaying its
// partitions when it becomes their leader, and appends a whole snapshot
// per write (committed, acks=all, before it answers). The partition
// leaders read and write through it with ReadShareGroupState and
// WriteShareGroupState, over the inter-broker connections when the
// coordinator is another broker (coordPersister).

// errShareCoordinatorLoading and errShareNotCoordinator are the share
// coordinator's answers while a partition loads and when it does not
// lead the partition.
var (
	errShareCoordinatorLoading = errors.New("broker: share coordinator load in progress")
	errShareNotCoordinator     = errors.New("broker: not the share coordinator")
)

// shareStatePart is one __share_group_state partition the share
// coordinator serves. mu guards states and is held across the append of
// a snapshot, so snapshots reach the log in the order they were made.
type shareStatePart struct {
	p      *replica.Partition
	epoch  int32
	loaded chan struct{} // closed when the load ends
	err    error         // the load's error, set before loaded closes
	mu     sync.Mutex
	states *share.States
}

// shareCoordinator is the share coordinator's partitions; mu guards parts
// and is never held while a part's mu is.
type shareCoordinator struct {
	mu    sync.Mutex
	parts map[int32]*shareStatePart
}

func (b *Broker) shareStatePartition(k share.StateKey) int32 {
	return group.Partition(k.CoordinatorKey(), b.cfg.ShareCoordinatorStateTopicNumPartitions)
}

// reconcileSharesLocked loads every __share_group_state partition led
// here (again when its leader epoch changed) and unloads the others.
// b.reconcileMu must be held.
func (b *Broker) reconcileSharesLocked() {
	sc := &b.shareCoord
	led := map[int32]*replica.Partition{}
	for _, p := range b.replicas.Partitions() {
		if p.TP.Topic == shareStateTopic && p.IsLeader() {
			led[p.TP.Partition] = p
		}
	}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.parts == nil {
		sc.parts = map[int32]*shareStatePart{}
	}
	for part, p := range led {
		if cur := sc.parts[part]; cur != nil && cur.p == p && cur.epoch == p.LeaderEpoch() {
			continue
		}
		sp := &shareStatePart{p: p, epoch: p.LeaderEpoch(), loaded: make(chan struct{}), states: share.NewStates()}
		sc.parts[part] = sp
		b.loads.Add(1)
		go func() {
			defer b.loads.Done()
			sp.mu.Lock()
			sp.err = txnLog{b: b, p: p}.Replay(b.ctx, sp.states.Replay)
			sp.mu.Unlock()
			if sp.err != nil {
				b.log.Error("load share coordinator partition", "partition", part, "err", sp.err)
			}
			close(sp.loaded)
		}()
	}
	for part := range sc.parts {
		if led[part] == nil {
			delete(sc.parts, part)
		}
	}
}

// shareStateLocked returns the loaded partition that maps k, with its mu
// held, waiting for a load in progress up to ctx.
func (b *Broker) shareStateLocked(ctx context.Context, k share.StateKey) (*shareStatePart, error) {
	part := b.shareStatePartition(k)
	sc := &b.shareCoord
	sc.mu.Lock()
	sp := sc.parts[part]
	sc.mu.Unlock()
	if sp == nil {
		return nil, errShareNotCoordinator
	}
	select {
	case <-sp.loaded:
	case <-ctx.Done():
		return nil, errShareCoordinatorLoading
	}
	if sp.err != nil {
		return nil, fmt.Errorf("%w: %w", errShareCoordinatorLoading, sp.err)
	}
	sp.mu.Lock()
	return sp, nil
}

// shareCoordRead is ReadShareGroupState on this broker. When k has no
// state, the snapshot still carries the state epoch a new state starts
// with.
func (b *Broker) shareCoordRead(ctx context.Context, k share.StateKey, leaderEpoch int32) (share.Snapshot, bool, error) {
	sp, err := b.shareStateLocked(ctx, k)
	if err != nil {
		return share.Snapshot{}, false, err
	}
	defer sp.mu.Unlock()
	if err := sp.states.CheckLeader(k, leaderEpoch); err != nil {
		return share.Snapshot{}, false, err
	}
	v, ok := sp.states.Get(k)
	if !ok {
		v = share.Snapshot{StateEpoch: sp.states.StateEpoch(k), State: share.State{StartOffset: -1}}
	}
	return v, ok, nil
}

// shareCoordInit is InitializeShareGroupState on this broker: k starts
// over at start with nothing in flight, at a new state epoch (at least
// stateEpoch), committed before it returns. Partition leaders holding the
// older state are fenced at their next write.
func (b *Broker) shareCoordInit(ctx context.Context, k share.StateKey, stateEpoch int32, start int64) error {
	ctx, cancel := context.WithTimeout(ctx, shareStateTimeout)
	defer cancel()
	sp, err := b.shareStateLocked(ctx, k)
	if err != nil {
		return err
	}
	defer sp.mu.Unlock()
	v := sp.states.Initialize(k, stateEpoch, start)
	if err := (txnLog{b: b, p: sp.p}).Append(ctx, share.EncodeKey(k), share.EncodeValue(v)); err != nil {
		return fmt.Errorf("%w: %w", errShareNotCoordinator, err)
	}
	sp.states.Put(k, v)
	return nil
}

// shareCoordWrite is WriteShareGroupState on this broker: the snapshot is
// committed in __share_group_state before it returns. A writer whose
// state epoch is older than k's is fenced (share.ErrFencedStateEpoch).
func (b *Broker) shareCoordWrite(ctx context.Context, k share.StateKey, leaderEpoch, stateEpoch int32, st share.State) error {
	// NB: bounded, so that an append stuck on a stalled ISR does not hold
	// the partition's mu past the caller's own deadline for long.
	ctx, cancel := context.WithTimeout(ctx, shareStateTimeout)
	defer cancel()
	sp, err := b.shareStateLocked(ctx, k)
	if err != nil {
		return err
	}
	defer sp.mu.Unlock()
	if err := sp.states.CheckLeader(k, leaderEpoch); err != nil {
		return err
	}
	if err := sp.states.CheckStateEpoch(k, stateEpoch); err != nil {
		return err
	}
	v := sp.states.Next(k, leaderEpoch, st)
	if err := (txnLog{b: b, p: sp.p}).Append(ctx, share.EncodeKey(k), share.EncodeValue(v)); err != nil {
		return fmt.Errorf("%w: %w", errShareNotCoordinator, err)
	}
	sp.states.Put(k, v)
	return nil
}

// shareCoordDelete is DeleteShareGroupState on this broker: a record
// that keeps the next state epoch (share.States.DeleteRecord), so that
// the writers of the deleted state stay fenced after a failover.
func (b *Broker) shareCoordDelete(ctx context.Context, k share.StateKey) error {
	sp, err := b.shareStateLocked(ctx, k)
	if err != nil {
		return err
	}
	defer sp.mu.Unlock()
	value, ok := sp.states.DeleteRecord(k)
	if !ok {
		return nil
	}
	if err := (txnLog{b: b, p: sp.p}).Append(ctx, share.EncodeKey(k), value); err != nil {
		return fmt.Errorf("%w: %w", errShareNotCoordinator, err)
	}
	sp.states.Delete(k)
	return nil
}

// shareCoordCode is the Kafka error code of a share coordinator error.
func shareCoordCode(err error) int16 {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, errShareNotCoordinator):
		return kerr.NotCoordinator.Code
	case errors.Is(err, errShareCoordinatorLoading):
		return kerr.CoordinatorLoadInProgress.Code
	case errors.Is(err, share.ErrFencedLeaderEpoch):
		return kerr.FencedLeaderEpoch.Code
	case errors.Is(err, share.ErrFencedStateEpoch):
		return kerr.FencedStateEpoch.Code
	}
	return errorCode(errCode(err))
}

// ensureShareStateTopic creates __share_group_state if it does not exist:
// share.coordinator.state.topic.num.partitions partitions,
// share.coordinator.state.topic.replication.factor replicas (at most the
// live brokers), min.insync.replicas
// share.coordinator.state.topic.min.isr (at most the replication
// factor), compacted.
func (b *Broker) ensureShareStateTopic(ctx context.Context) error {
	img := b.cluster.Image()
	if img.Topics[shareStateTopic] != nil {
		return nil
	}
	rf := min(b.cfg.ShareCoordinatorStateTopicReplicationFactor, int16(len(img.Brokers)))
	configs := map[string]string{
		"cleanup.policy":                 "compact",
		"compression.type":               "uncompressed",
		"min.insync.replicas":            fmt.Sprint(min(b.cfg.ShareCoordinatorStateTopicMinISR, int32(rf))),
		"unclean.leader.election.enable": "false",
	}
	_, err := b.cluster.CreateTopic(ctx, shareStateTopic, b.cfg.ShareCoordinatorStateTopicNumPartitions, rf, configs)
	if err != nil && !errors.Is(err, cluster.ErrTopicExists) {
		return err
	}
	return b.reconcile()
}

// coordPersister is the partition leaders' way to the share coordinator
// (Kafka's DefaultStatePersister): it finds the coordinator of a
// share-partition in the metadata image and calls it, locally or with
// Read/WriteShareGroupState over the inter-broker connections, retrying
// while the coordinator moves or loads, for up to shareStateTimeout.
type coordPersister struct{ b *Broker }

// shareStateTimeout bounds a persister call.
const shareStateTimeout = 8 * time.Second

func (p coordPersister) stateKey(key sharePartKey) share.StateKey {
	return share.StateKey{Group: key.group, TopicID: key.topicID, Partition: key.partition}
}

// retry runs call against the coordinator of k until it answers with
// something other than a retriable coordinator error.
func (p coordPersister) retry(ctx context.Context, k share.StateKey, call func(ctx context.Context, leader int32) error) error {
	b := p.b
	ctx, cancel := context.WithTimeout(ctx, shareStateTimeout)
	defer cancel()
	backoff := 20 * time.Millisecond
	for {
		err := b.ensureShareStateTopic(ctx)
		if err == nil {
			leader := int32(-1)
			if st, ok := b.cluster.Image().Partition(shareStateTopic, b.shareStatePartition(k)); ok {
				leader = st.Leader
			}
			if leader < 0 {
				err = errShareNotCoordinator
			} else {
				err = call(ctx, leader)
			}
		}
		if err == nil || !(errors.Is(err, errShareNotCoordinator) || errors.Is(err, errShareCoordinatorLoading) || errors.Is(err, errRemoteRetriable)) {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("broker: share coordinator of %s: %w", k.CoordinatorKey(), err)
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 500*time.Millisecond)
	}
}

// errRemoteRetriable is a remote coordinator's retriable answer, or a
// failed connection to it.
var errRemoteRetriable = errors.New("broker: share coordinator unavailable")

func remoteErr(code int16, msg *string) error {
	if code == 0 {
		return nil
	}
	e := kerr.ErrorForCode(code)
	switch e {
	case kerr.NotCoordinator, kerr.CoordinatorLoadInProgress, kerr.CoordinatorNotAvailable, kerr.RequestTimedOut, kerr.NotEnoughReplicas:
		return fmt.Errorf("%w: %w", errRemoteRetriable, e)
	case kerr.FencedLeaderEpoch:
		return fmt.Errorf("%w: %w", share.ErrFencedLeaderEpoch, e)
	case kerr.FencedStateEpoch:
		return fmt.Errorf("%w: %w", share.ErrFencedStateEpoch, e)
	}
	if msg != nil {
		return fmt.Errorf("broker: share coordinator: %w: %s", e, *msg)
	}
	return fmt.Errorf("broker: share coordinator: %w", e)
}

func (p coordPersister) read(ctx context.Context, key sharePartKey, leaderEpoch int32) (share.State, int32, bool, error) {
	b, k := p.b, p.stateKey(key)
	var out share.State
	var found bool
	var stateEpoch int32
	err := p.retry(ctx, k, func(ctx context.Context, leader int32) error {
		if leader == b.cfg.NodeID {
			v, ok, err := b.shareCoordRead(ctx, k, leaderEpoch)
			out, found, stateEpoch = v.State, ok, v.StateEpoch
			return err
		}
		br, err := b.brokers.Broker(leader)
		if err != nil {
			return fmt.Errorf("%w: %w", errRemoteRetriable, err)
		}
		req := kmsg.NewPtrReadShareGroupStateRequest()
		req.GroupID = k.Group
		t := kmsg.NewReadShareGroupStateRequestTopic()
		t.TopicID = k.TopicID
		rp := kmsg.NewReadShareGroupStateRequestTopicPartition()
		rp.Partition, rp.LeaderEpoch = k.Partition, leaderEpoch
		t.Partitions = append(t.Partitions, rp)
		req.Topics = append(req.Topics, t)
		resp, err := req.RequestWith(ctx, br)
		if err != nil {
			return fmt.Errorf("%w: %w", errRemoteRetriable, err)
		}
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			return fmt.Errorf("%w: malformed ReadShareGroupState response", errRemoteRetriable)
		}
		r := resp.Topics[0].Partitions[0]
		if err := remoteErr(r.ErrorCode, r.ErrorMessage); err != nil {
			return err
		}
		found, stateEpoch = r.StartOffset >= 0, r.StateEpoch
		out = share.State{StartOffset: r.StartOffset}
		for _, sb := range r.StateBatches {
			out.Batches = append(out.Batches, share.StateBatch{First: sb.FirstOffset, Last: sb.LastOffset, State: share.RecordState(sb.DeliveryState), DeliveryCount: sb.DeliveryCount})
		}
		return nil
	})
	return out, stateEpoch, found, err
}

func (p coordPersister) write(ctx context.Context, key sharePartKey, leaderEpoch, stateEpoch int32, st share.State) error {
	b, k := p.b, p.stateKey(key)
	return p.retry(ctx, k, func(ctx context.Context, leader int32) error {
		if leader == b.cfg.NodeID {
			return b.shareCoordWrite(ctx, k, leaderEpoch, stateEpoch, st)
		}
		br, err := b.brokers.Broker(leader)
		if err != nil {
			return fmt.Errorf("%w: %w", errRemoteRetriable, err)
		}
		req := kmsg.NewPtrWriteShareGroupStateRequest()
		req.GroupID = k.Group
		t := kmsg.NewWriteShareGroupStateRequestTopic()
		t.TopicID = k.TopicID
		rp := kmsg.NewWriteShareGroupStateRequestTopicPartition()
		rp.Partition, rp.LeaderEpoch, rp.StartOffset = k.Partition, leaderEpoch, st.StartOffset
		rp.StateEpoch = stateEpoch
		for _, sb := range st.Batches {
			x := kmsg.NewWriteShareGroupStateRequestTopicPartitionStateBatch()
			x.FirstOffset, x.LastOffset, x.DeliveryState, x.DeliveryCount = sb.First, sb.Last, int8(sb.State), sb.DeliveryCount
			rp.StateBatches = append(rp.StateBatches, x)
		}
		t.Partitions = append(t.Partitions, rp)
		req.Topics = append(req.Topics, t)
		resp, err := req.RequestWith(ctx, br)
		if err != nil {
			return fmt.Errorf("%w: %w", errRemoteRetriable, err)
		}
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			return fmt.Errorf("%w: malformed WriteShareGroupState response", errRemoteRetriable)
		}
		r := resp.Topics[0].Partitions[0]
		return remoteErr(r.ErrorCode, r.ErrorMessage)
	})
}

// initialize starts key over at start (AlterShareGroupOffsets) with
// InitializeShareGroupState, at a new state epoch.
func (p coordPersister) initialize(ctx context.Context, key sharePartKey, start int64) error {
	b, k := p.b, p.stateKey(key)
	return p.retry(ctx, k, func(ctx context.Context, leader int32) error {
		if leader == b.cfg.NodeID {
			return b.shareCoordInit(ctx, k, -1, start)
		}
		br, err := b.brokers.Broker(leader)
		if err != nil {
			return fmt.Errorf("%w: %w", errRemoteRetriable, err)
		}
		req := kmsg.NewPtrInitializeShareGroupStateRequest()
		req.GroupID = k.Group
		t := kmsg.NewInitializeShareGroupStateRequestTopic()
		t.TopicID = k.TopicID
		rp := kmsg.NewInitializeShareGroupStateRequestTopicPartition()
		rp.Partition, rp.StateEpoch, rp.StartOffset = k.Partition, -1, start
		t.Partitions = append(t.Partitions, rp)
		req.Topics = append(req.Topics, t)
		resp, err := req.RequestWith(ctx, br)
		if err != nil {
			return fmt.Errorf("%w: %w", errRemoteRetriable, err)
		}
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			return fmt.Errorf("%w: malformed InitializeShareGroupState response", errRemoteRetriable)
		}
		r := resp.Topics[0].Partitions[0]
		return remoteErr(r.ErrorCode, r.ErrorMessage)
	})
}

func (p coordPersister) delete(ctx context.Context, key sharePartKey) error {
	b, k := p.b, p.stateKey(key)
	return p.retry(ctx, k, func(ctx context.Context, leader int32) error {
		if leader == b.cfg.NodeID {
			return b.shareCoordDelete(ctx, k)
		}
		br, err := b.brokers.Broker(leader)
		if err != nil {
			return fmt.Errorf("%w: %w", errRemoteRetriable, err)
		}
		req := kmsg.NewPtrDeleteShareGroupStateRequest()
		req.GroupID = k.Group
		t := kmsg.NewDeleteShareGroupStateRequestTopic()
		t.TopicID = k.TopicID
		rp := kmsg.NewDeleteShareGroupStateRequestTopicPartition()
		rp.Partition = k.Partition
		t.Partitions = append(t.Partitions, rp)
		req.Topics = append(req.Topics, t)
		resp, err := req.RequestWith(ctx, br)
		if err != nil {
			return fmt.Errorf("%w: %w", errRemoteRetriable, err)
		}
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			return fmt.Errorf("%w: malformed DeleteShareGroupState response", errRemoteRetriable)
		}
		r := resp.Topics[0].Partitions[0]
		return remoteErr(r.ErrorCode, r.ErrorMessage)
	})
}
