package cluster

import (
	"slices"
	"strconv"
)

// Eligible leader replicas (KIP-966).
//
// A partition's high watermark advances only while its ISR has at least
// min.insync.replicas members (replica.LeaderState). So a replica that
// leaves the ISR at a change that takes the ISR below that size holds
// every committed record, and keeps holding them while the ISR stays
// below it: nothing is committed in between. Such replicas form the
// partition's ELR. When no ISR member can lead (they are gone, or their
// unclean shutdown may have lost records), the controller elects the
// first live ELR member in assignment order instead of leaving the
// partition offline, and without the loss of an unclean election.
//
// An unclean shutdown matters only under a relaxed flush policy
// (flush.messages above 1): there a replica reports to its leader what it
// has in the page cache, and a power loss can take records the high
// watermark counted. Under samsa's default policy a replica reports only
// what it has fsynced, so a crash takes nothing the ISR counted on and an
// uncleanly restarted replica stays electable.

// UpdateELR sets next.ELR from the ISR change prev -> next of a partition
// with replica list replicas and min.insync.replicas minISR: cleared
// (with LastKnownELR) once the ISR has minISR members; otherwise the
// replicas that left the ISR join the ELR, replicas that joined it leave
// the ELR, and only assigned replicas are kept, in assignment order.
func UpdateELR(prev PartitionState, next *PartitionState, replicas []int32, minISR int) {
	if len(next.ISR) >= minISR {
		next.ELR, next.LastKnownELR = nil, nil
		return
	}
	var elr []int32
	for _, r := range replicas {
		if slices.Contains(next.ISR, r) {
			continue
		}
		if slices.Contains(prev.ELR, r) || slices.Contains(prev.ISR, r) {
			elr = append(elr, r)
		}
	}
	next.ELR = elr
	var lk []int32
	for _, r := range prev.LastKnownELR {
		if slices.Contains(replicas, r) && !slices.Contains(next.ISR, r) && !slices.Contains(elr, r) {
			lk = append(lk, r)
		}
	}
	next.LastKnownELR = lk
}

// minISROf is the min.insync.replicas of topic: the topic's config, else
// the cluster-wide dynamic broker config, else def.
func minISROf(img *Image, topic string, def int) int {
	if t := img.Topics[topic]; t != nil {
		if n, ok := positiveConfig(t.Configs, "min.insync.replicas"); ok {
			return int(n)
		}
	}
	if n, ok := positiveConfig(img.BrokerConfigs[""], "min.insync.replicas"); ok {
		return int(n)
	}
	return max(def, 1)
}

// durableOn reports whether broker r keeps topic under samsa's
// fsync-before-report policy (flush.messages at most 1): the topic's
// config, else r's dynamic broker config, else the cluster-wide one, else
// the static value r registered.
func durableOn(img *Image, topic string, r int32) bool {
	if t := img.Topics[topic]; t != nil {
		if n, ok := positiveConfig(t.Configs, "flush.messages"); ok {
			return n <= 1
		}
	}
	if n, ok := positiveConfig(img.BrokerConfigs[strconv.Itoa(int(r))], "log.flush.interval.messages"); ok {
		return n <= 1
	}
	if n, ok := positiveConfig(img.BrokerConfigs[""], "log.flush.interval.messages"); ok {
		return n <= 1
	}
	return img.Brokers[r].FlushIntervalMessages <= 1
}

func positiveConfig(m map[string]string, key string) (int64, bool) {
	v, ok := m[key]
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(v, 10, 64)
	return n, err == nil && n > 0
}

// MayHaveLostReported reports whether broker r, as registered in img, may
// have lost records of topic it had reported to a leader: it started on
// an empty log dir (a new or replaced disk), or after an unclean shutdown
// and keeps topic under a relaxed flush policy.
func MayHaveLostReported(img *Image, topic string, r int32) bool {
	br, ok := img.Brokers[r]
	return ok && (br.EmptyLogDir || br.UncleanShutdown && !durableOn(img, topic, r))
}

// ApplyELR updates next's ELR for an ISR change of topic's partition p
// from prev, with the topic's min.insync.replicas; a leader's ISR change
// calls it before its compare-and-swap. It does nothing when eligible
// leader replicas are off.
func (c *Cluster) ApplyELR(img *Image, topic string, p int32, prev PartitionState, next *PartitionState) {
	if !c.cfg.EligibleLeaderReplicas {
		next.ELR, next.LastKnownELR = nil, nil
		return
	}
	t := img.Topics[topic]
	if t == nil || int(p) >= len(t.Replicas) {
		return
	}
	UpdateELR(prev, next, t.Replicas[p], minISROf(img, topic, c.cfg.MinInsyncReplicas))
}

// UncleanPending reports whether img still holds broker r where its
// unclean shutdown disqualifies it, for a topic it keeps under a relaxed
// flush policy: in an ELR, in the ISR of an offline partition, or as a
// leader elected before it restarted. Decide takes it out of each; then
// the broker clears the flag from its registration
// (Cluster.clearUncleanShutdown). An ELR membership it earns while the
// flag is still set is voided too: that errs on the side of safety, and
// lasts only until the flag is cleared.
func UncleanPending(img *Image, r int32) bool {
	br, ok := img.Brokers[r]
	if !ok || !br.UncleanShutdown && !br.EmptyLogDir {
		return false
	}
	for name, t := range img.Topics {
		for p := range t.Partitions {
			st := &t.Partitions[p]
			held := slices.Contains(st.ELR, r) ||
				(st.Leader < 0 && slices.Contains(st.ISR, r)) ||
				(st.Leader == r && st.LeaderIncarnation != "" && st.LeaderIncarnation != br.Incarnation)
			if held && MayHaveLostReported(img, name, r) {
				return true
			}
		}
	}
	return false
}
