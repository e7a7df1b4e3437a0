package group

import (
	"slices"
	"sort"
)

// Server-side assignors (group.consumer.assignors). Kafka's class names
// name the same assignors.
const (
	UniformAssignor = "uniform"
	RangeAssignor   = "range"
)

// AssignorName maps a group.consumer.assignors entry (a short name or
// Kafka's class name) to the assignor's name; ok is false for an
// unknown one.
func AssignorName(s string) (string, bool) {
	switch s {
	case UniformAssignor, "org.apache.kafka.coordinator.group.assignor.UniformAssignor":
		return UniformAssignor, true
	case RangeAssignor, "org.apache.kafka.coordinator.group.assignor.RangeAssignor":
		return RangeAssignor, true
	}
	return "", false
}

type assignMember struct {
	id     string
	topics []string // sorted, existing topics only
}

type assignInput struct {
	members []assignMember // sorted by id
	topics  map[string]TopicInfo
	// prev is the previous target assignment, for stickiness.
	prev map[string]PartitionSet
}

// assign computes the target assignment of every member (an empty one
// for members without partitions). Both assignors are deterministic: the
// same input gives the same output.
func assign(name string, in assignInput) map[string]PartitionSet {
	if name == RangeAssignor {
		return assignRange(in)
	}
	return assignUniform(in)
}

// assignRange gives each topic's partitions to the members subscribed to
// it in contiguous ranges, by member id: with n members and p partitions
// the first p%n members get p/n+1, the others p/n. Members subscribed to
// the same topics with the same partition counts get the same partition
// numbers of each (co-partitioning), as Kafka's range assignor.
func assignRange(in assignInput) map[string]PartitionSet {
	out := make(map[string]PartitionSet, len(in.members))
	byTopic := map[string][]string{}
	for _, m := range in.members {
		out[m.id] = PartitionSet{}
		for _, t := range m.topics {
			byTopic[t] = append(byTopic[t], m.id)
		}
	}
	for name, ids := range byTopic {
		t := in.topics[name]
		n, p := int32(len(ids)), t.Partitions
		next := int32(0)
		for i, id := range ids {
			count := p / n
			if int32(i) < p%n {
				count++
			}
			if count == 0 {
				continue
			}
			ps := make([]int32, 0, count)
			for k := range count {
				ps = append(ps, next+k)
			}
			next += count
			out[id][t.ID] = ps
		}
	}
	return out
}

type part struct {
	topic TopicID
	name  string
	p     int32
}

// assignUniform spreads the partitions evenly over the members that
// subscribe to their topics, moving as few as it can from the previous
// target: every member keeps the partitions it had (up to its share),
// and the others go, in topic-name and partition order, to the members
// with the fewest.
//
// With every member subscribed to the same topics (the common case) each
// member gets p/n or p/n+1 of the p partitions; the +1 shares go to the
// members that already held the most. Otherwise a partition goes to the
// eligible member with the fewest partitions, and partitions then move
// from a member to an eligible one with at least two fewer until none
// can.
func assignUniform(in assignInput) map[string]PartitionSet {
	out := make(map[string]PartitionSet, len(in.members))
	for _, m := range in.members {
		out[m.id] = PartitionSet{}
	}
	if len(in.members) == 0 {
		return out
	}
	homogeneous := true
	for _, m := range in.members[1:] {
		if !slices.Equal(m.topics, in.members[0].topics) {
			homogeneous = false
			break
		}
	}
	// Every partition of a subscribed topic, in topic-name order.
	names := make([]string, 0, len(in.topics))
	subscribed := map[string]bool{}
	for _, m := range in.members {
		for _, t := range m.topics {
			subscribed[t] = true
		}
	}
	for n := range subscribed {
		names = append(names, n)
	}
	sort.Strings(names)
	var parts []part
	for _, n := range names {
		t := in.topics[n]
		for p := range t.Partitions {
			parts = append(parts, part{t.ID, n, p})
		}
	}
	if homogeneous {
		return uniformHomogeneous(in, parts, out)
	}
	return uniformHeterogeneous(in, parts, out)
}

func uniformHomogeneous(in assignInput, parts []part, out map[string]PartitionSet) map[string]PartitionSet {
	n := len(in.members)
	base, extra := len(parts)/n, len(parts)%n
	// What each member keeps of its previous target (still existing).
	live := map[topicPart]bool{}
	for _, p := range parts {
		live[topicPart{p.topic, p.p}] = true
	}
	kept := make([][]topicPart, n)
	for i, m := range in.members {
		for t, ps := range in.prev[m.id] {
			for _, p := range ps {
				if live[topicPart{t, p}] {
					kept[i] = append(kept[i], topicPart{t, p})
				}
			}
		}
		sort.Slice(kept[i], func(a, b int) bool {
			x, y := kept[i][a], kept[i][b]
			if x.topic != y.topic {
				return string(x.topic[:]) < string(y.topic[:])
			}
			return x.part < y.part
		})
	}
	// The +1 shares go to the members keeping the most (then by id).
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return len(kept[order[a]]) > len(kept[order[b]]) })
	quota := make([]int, n)
	for rank, i := range order {
		quota[i] = base
		if rank < extra {
			quota[i]++
		}
	}
	taken := map[topicPart]bool{}
	count := make([]int, n)
	for i, m := range in.members {
		for _, tp := range kept[i] {
			if count[i] == quota[i] {
				break
			}
			out[m.id][tp.topic] = append(out[m.id][tp.topic], tp.part)
			taken[tp] = true
			count[i]++
		}
	}
	i := 0
	for _, p := range parts {
		k := topicPart{p.topic, p.p}
		if taken[k] {
			continue
		}
		for count[i] >= quota[i] {
			i = (i + 1) % n
		}
		m := in.members[i].id
		out[m][p.topic] = append(out[m][p.topic], p.p)
		count[i]++
	}
	for _, a := range out {
		for t, ps := range a {
			slices.Sort(ps)
			a[t] = ps
		}
	}
	return out
}

func uniformHeterogeneous(in assignInput, parts []part, out map[string]PartitionSet) map[string]PartitionSet {
	eligible := map[string][]int{} // topic name -> member indexes
	for i, m := range in.members {
		for _, t := range m.topics {
			eligible[t] = append(eligible[t], i)
		}
	}
	subs := make([]map[string]bool, len(in.members))
	for i, m := range in.members {
		subs[i] = map[string]bool{}
		for _, t := range m.topics {
			subs[i][t] = true
		}
	}
	owner := make([]int, len(parts))
	count := make([]int, len(in.members))
	prevOwner := map[topicPart]string{}
	for id, a := range in.prev {
		for t, ps := range a {
			for _, p := range ps {
				prevOwner[topicPart{t, p}] = id
			}
		}
	}
	index := map[string]int{}
	for i, m := range in.members {
		index[m.id] = i
	}
	for k, p := range parts {
		owner[k] = -1
		if id, ok := prevOwner[topicPart{p.topic, p.p}]; ok {
			if i, ok := index[id]; ok && subs[i][p.name] {
				owner[k] = i
				count[i]++
			}
		}
	}
	fewest := func(cands []int) int {
		best := cands[0]
		for _, c := range cands[1:] {
			if count[c] < count[best] {
				best = c
			}
		}
		return best
	}
	for k, p := range parts {
		if owner[k] < 0 {
			i := fewest(eligible[p.name])
			owner[k] = i
			count[i]++
		}
	}
	// Move partitions from a member to an eligible one with at least two
	// fewer; each move lowers the sum of squares, so this ends.
	for moved := true; moved; {
		moved = false
		for k, p := range parts {
			from := owner[k]
			to := fewest(eligible[p.name])
			if count[from] > count[to]+1 {
				owner[k] = to
				count[from]--
				count[to]++
				moved = true
			}
		}
	}
	for k, p := range parts {
		m := in.members[owner[k]].id
		out[m][p.topic] = append(out[m][p.topic], p.p)
	}
	for _, a := range out {
		for t, ps := range a {
			slices.Sort(ps)
			a[t] = ps
		}
	}
	return out
}
