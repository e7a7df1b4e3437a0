package cluster

import (
	"hash/fnv"
	"slices"
	"sort"
)

// assignReplicas assigns replicas to partitions first, first+1, ...,
// first+count-1 over brokers (sorted ids, len(brokers) >= rf > 0), rack
// unaware, in the way Kafka spreads them:
//
//   - the first replica (the preferred leader) of partition p is
//     brokers[(p+start) % n], so leaders go round robin;
//   - the other replicas follow it at a distance 1 + (shift+j) % (n-1),
//     and shift grows by one every n partitions, so the followers of a
//     broker's partitions are spread over all other brokers rather than
//     always being its neighbours.
//
// start and shift are in [0, n); callers derive them from the topic name so
// that topics do not all put partition 0 on the same broker.
//
// Reference: Kafka AdminUtils/ReplicaPlacer, rack-unaware assignment.
func assignReplicas(brokers []int32, first, count int32, rf int, start, shift int) [][]int32 {
	n := len(brokers)
	out := make([][]int32, count)
	for i := range count {
		p := int(first + i)
		s := shift + p/n
		lead := (p + start) % n
		r := make([]int32, 0, rf)
		r = append(r, brokers[lead])
		for j := 0; j < rf-1; j++ {
			dist := 1 + (s+j)%(n-1)
			r = append(r, brokers[(lead+dist)%n])
		}
		out[i] = r
	}
	return out
}

// placementSeeds derives assignReplicas' start and shift for a topic from
// its name, for n brokers.
func placementSeeds(name string, n int) (start, shift int) {
	h := fnv.New64a()
	h.Write([]byte(name))
	v := h.Sum64()
	return int(v % uint64(n)), int((v >> 32) % uint64(n))
}

// placeReplicas assigns replicas like assignReplicas, rack aware when every
// broker of img has a rack (Kafka's rule: racks set on some brokers only
// is treated as no racks here, as no rack information).
//
// Rack aware, in Kafka's way: the brokers are ordered so that racks
// alternate, the leaders go round robin over that order, and each
// follower is the next candidate (at the distances assignReplicas uses)
// whose rack holds no replica of the partition yet, until every rack holds
// one; then racks repeat. So a partition's replicas span min(rf, racks)
// racks and losing a rack loses at most its share of each partition.
//
// Reference: KIP-36 (rack aware replica assignment).
func placeReplicas(img *Image, name string, first, count int32, rf int) [][]int32 {
	ids := img.BrokerIDs()
	rackOf := make(map[int32]string, len(ids))
	for _, id := range ids {
		if r := img.Brokers[id].Rack; r != nil && *r != "" {
			rackOf[id] = *r
		}
	}
	start, shift := placementSeeds(name, len(ids))
	if len(rackOf) != len(ids) || len(ids) == 0 {
		return assignReplicas(ids, first, count, rf, start, shift)
	}
	return assignRackAware(rackAlternated(ids, rackOf), rackOf, first, count, rf, start, shift)
}

// rackAlternated orders brokers so that consecutive ones are in different
// racks where possible: the first broker of each rack (racks sorted), then
// the second of each, and so on.
func rackAlternated(ids []int32, rackOf map[int32]string) []int32 {
	byRack := make(map[string][]int32)
	for _, id := range ids {
		byRack[rackOf[id]] = append(byRack[rackOf[id]], id)
	}
	racks := make([]string, 0, len(byRack))
	for r := range byRack {
		racks = append(racks, r)
	}
	sort.Strings(racks)
	out := make([]int32, 0, len(ids))
	for i := 0; len(out) < len(ids); i++ {
		for _, r := range racks {
			if i < len(byRack[r]) {
				out = append(out, byRack[r][i])
			}
		}
	}
	return out
}

// assignRackAware is assignReplicas over a rack-alternated broker list,
// skipping followers whose rack already holds a replica while some rack
// holds none.
func assignRackAware(brokers []int32, rackOf map[int32]string, first, count int32, rf int, start, shift int) [][]int32 {
	n := len(brokers)
	racks := make(map[string]bool)
	for _, r := range rackOf {
		racks[r] = true
	}
	out := make([][]int32, count)
	for i := range count {
		p := int(first + i)
		s := shift + p/n
		lead := (p + start) % n
		r := make([]int32, 0, rf)
		r = append(r, brokers[lead])
		used := map[string]bool{rackOf[brokers[lead]]: true}
		for k := 0; len(r) < rf && k < 2*n*n; k++ {
			cand := brokers[(lead+1+(s+k)%max(n-1, 1))%n]
			if slices.Contains(r, cand) {
				continue
			}
			if used[rackOf[cand]] && len(used) < len(racks) && k < n*n {
				continue
			}
			r = append(r, cand)
			used[rackOf[cand]] = true
		}
		out[i] = r
	}
	return out
}
