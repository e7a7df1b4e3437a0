package cluster

import "hash/fnv"

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
