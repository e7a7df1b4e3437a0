package broker

// ElectLeaders: v0-2
//
// * v1: ElectionType (PREFERRED=0, UNCLEAN=1) and a top-level ErrorCode
//   (KIP-460); v0 is always a preferred election.
// * v2: flexible versions.
//
// Any broker answers (Kafka sends it to the controller): the new state is
// computed from this broker's image and written to etcd with
// cluster.AlterPartition, a compare-and-swap on the partition key's mod
// revision, so a concurrent change by the controller or a partition leader
// either wins or makes this write fail and be decided again.
//
// Per partition:
//
//  1. A broker is live when it is registered and not shutting down.
//  2. PREFERRED: if the first replica already leads, ELECTION_NOT_NEEDED;
//     if it is live and in the ISR, it becomes leader; otherwise
//     PREFERRED_LEADER_NOT_AVAILABLE.
//  3. UNCLEAN: if the leader is live, ELECTION_NOT_NEEDED. Otherwise the
//     first live replica in the ISR becomes leader (a clean election, as
//     Kafka also prefers), failing that the first live replica with an ISR
//     of itself (records it lacks are lost), failing that
//     ELIGIBLE_LEADERS_NOT_AVAILABLE.
//  4. A new leader bumps LeaderEpoch and PartitionEpoch.
//
// A null topic list means every partition of every topic; then, as in
// Kafka, partitions that needed no election are left out of the response.
// Unknown topics and partitions get UNKNOWN_TOPIC_OR_PARTITION. An unknown
// ElectionType gets INVALID_REQUEST at the top level.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/cluster"
)

// Election types of ElectLeaders v1+ (KIP-460).
const (
	electionPreferred int8 = 0
	electionUnclean   int8 = 1
)

// electAttempts bounds how often one partition's election is decided again
// after losing its compare-and-swap to a concurrent change.
const electAttempts = 5

// errElection carries the Kafka error of an election that was not made.
type errElection struct {
	code *kerr.Error
	msg  string
}

func (e *errElection) Error() string { return e.msg }

func (b *Broker) handleElectLeaders(ctx context.Context, req *kmsg.ElectLeadersRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ElectLeadersResponse)
	kind := electionPreferred
	if req.Version >= 1 {
		kind = req.ElectionType
	}
	if kind != electionPreferred && kind != electionUnclean {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp
	}
	if req.TimeoutMillis > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(req.TimeoutMillis)*time.Millisecond)
		defer cancel()
	}

	all := req.Topics == nil
	type request struct {
		topic      string
		partitions []int32
	}
	var reqs []request
	if all {
		img := b.cluster.Image()
		names := make([]string, 0, len(img.Topics))
		for name := range img.Topics {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			ps := make([]int32, len(img.Topics[name].Partitions))
			for i := range ps {
				ps[i] = int32(i)
			}
			reqs = append(reqs, request{name, ps})
		}
	} else {
		for _, rt := range req.Topics {
			reqs = append(reqs, request{rt.Topic, rt.Partitions})
		}
	}

	for _, r := range reqs {
		st := kmsg.NewElectLeadersResponseTopic()
		st.Topic = r.topic
		for _, p := range r.partitions {
			sp := kmsg.NewElectLeadersResponseTopicPartition()
			sp.Partition = p
			err := b.electLeader(ctx, kind, r.topic, p)
			var ee *errElection
			switch {
			case err == nil:
			case errors.As(err, &ee):
				if all && ee.code == kerr.ElectionNotNeeded {
					continue
				}
				sp.ErrorCode, sp.ErrorMessage = ee.code.Code, errMessage(err)
			default:
				sp.ErrorCode, sp.ErrorMessage = errCode(err).Code, errMessage(err)
			}
			st.Partitions = append(st.Partitions, sp)
		}
		if !all || len(st.Partitions) > 0 {
			resp.Topics = append(resp.Topics, st)
		}
	}
	return resp
}

// electLeader runs one election for topic/p, deciding again from the new
// image each time its write loses to a concurrent change.
func (b *Broker) electLeader(ctx context.Context, kind int8, topic string, p int32) error {
	var err error
	for range electAttempts {
		img := b.cluster.Image()
		var next cluster.PartitionState
		if next, err = decideElection(img, kind, topic, p); err != nil {
			return err
		}
		if _, err = b.cluster.AlterPartition(ctx, topic, p, next); !errors.Is(err, cluster.ErrInvalidUpdateVersion) {
			return err
		}
		// Lost the compare: wait for the image to move past what we
		// decided from, then decide again.
		select {
		case <-b.cluster.Changed():
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return err
}

// decideElection computes the state after an election of kind for topic/p
// in img, or an *errElection (or cluster.ErrUnknownPartition) saying why
// there is none. It is a pure function of its inputs.
func decideElection(img *cluster.Image, kind int8, topic string, p int32) (cluster.PartitionState, error) {
	t := img.Topics[topic]
	if t == nil || p < 0 || int(p) >= len(t.Partitions) || int(p) >= len(t.Replicas) {
		return cluster.PartitionState{}, fmt.Errorf("%w: %s-%d", cluster.ErrUnknownPartition, topic, p)
	}
	st, replicas := t.Partitions[p], t.Replicas[p]
	live := func(id int32) bool { br, ok := img.Brokers[id]; return ok && !br.ShuttingDown }
	next := st
	switch kind {
	case electionPreferred:
		if len(replicas) == 0 {
			return st, &errElection{kerr.PreferredLeaderNotAvailable, fmt.Sprintf("%s-%d has no replicas", topic, p)}
		}
		pref := replicas[0]
		if st.Leader == pref {
			return st, &errElection{kerr.ElectionNotNeeded, fmt.Sprintf("preferred replica %d already leads %s-%d", pref, topic, p)}
		}
		if !live(pref) || !slices.Contains(st.ISR, pref) {
			return st, &errElection{kerr.PreferredLeaderNotAvailable,
				fmt.Sprintf("preferred replica %d of %s-%d is not live and in sync", pref, topic, p)}
		}
		next.Leader = pref
		next.ISR = slices.Clone(st.ISR)
	default: // electionUnclean
		if st.Leader >= 0 && live(st.Leader) {
			return st, &errElection{kerr.ElectionNotNeeded, fmt.Sprintf("%s-%d has live leader %d", topic, p, st.Leader)}
		}
		leader := int32(-1)
		for _, r := range replicas {
			if live(r) && slices.Contains(st.ISR, r) {
				leader = r
				break
			}
		}
		if leader >= 0 {
			next.ISR = nil
			for _, r := range st.ISR {
				if _, ok := img.Brokers[r]; ok {
					next.ISR = append(next.ISR, r)
				}
			}
		} else {
			for _, r := range replicas {
				if live(r) {
					leader = r
					break
				}
			}
			if leader < 0 {
				return st, &errElection{kerr.EligibleLeadersNotAvailable, fmt.Sprintf("no replica of %s-%d is live", topic, p)}
			}
			next.ISR = []int32{leader}
		}
		next.Leader = leader
	}
	next.LeaderEpoch++
	next.LeaderIncarnation = img.Brokers[next.Leader].Incarnation
	next.PartitionEpoch++
	return next, nil
}
