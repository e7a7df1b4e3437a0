package cluster

import (
	"fmt"
	"reflect"
	"testing"
)

func TestAssignReplicasExact(t *testing.T) {
	for _, tc := range []struct {
		brokers      []int32
		first, count int32
		rf           int
		start, shift int
		want         [][]int32
	}{
		{[]int32{0}, 0, 3, 1, 0, 0, [][]int32{{0}, {0}, {0}}},
		{[]int32{0, 1, 2}, 0, 3, 2, 0, 0, [][]int32{{0, 1}, {1, 2}, {2, 0}}},
		// The follower distance grows once every len(brokers) partitions.
		{[]int32{0, 1, 2}, 3, 3, 2, 0, 0, [][]int32{{0, 2}, {1, 0}, {2, 1}}},
		{[]int32{0, 1, 2}, 0, 2, 3, 1, 1, [][]int32{{1, 0, 2}, {2, 1, 0}}},
		{[]int32{5, 7, 9, 11}, 0, 4, 2, 2, 0, [][]int32{{9, 11}, {11, 5}, {5, 7}, {7, 9}}},
	} {
		t.Run(fmt.Sprint(tc.brokers, tc.first, tc.count, tc.rf, tc.start, tc.shift), func(t *testing.T) {
			got := assignReplicas(tc.brokers, tc.first, tc.count, tc.rf, tc.start, tc.shift)
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestAssignReplicasSpreadsLeadersAndFollowers(t *testing.T) {
	for n := 1; n <= 6; n++ {
		for rf := 1; rf <= n; rf++ {
			t.Run(fmt.Sprintf("brokers=%d/rf=%d", n, rf), func(t *testing.T) {
				brokers := make([]int32, n)
				for i := range brokers {
					brokers[i] = int32(10 * i)
				}
				parts := int32(n * (n - 1) * 2)
				if parts == 0 {
					parts = 4
				}
				start, shift := placementSeeds("topic", n)
				got := assignReplicas(brokers, 0, parts, rf, start, shift)
				leaders := map[int32]int{}
				pairs := map[[2]int32]int{}
				for p, r := range got {
					if len(r) != rf {
						t.Fatalf("partition %d has %d replicas", p, len(r))
					}
					seen := map[int32]bool{}
					for _, b := range r {
						if seen[b] {
							t.Fatalf("partition %d replicas %v repeat a broker", p, r)
						}
						seen[b] = true
					}
					leaders[r[0]]++
					if rf > 1 {
						pairs[[2]int32{r[0], r[1]}]++
					}
				}
				for _, b := range brokers {
					if leaders[b] != int(parts)/n {
						t.Fatalf("leaders %v not even over %d partitions", leaders, parts)
					}
				}
				// Each leader's first follower goes to every other broker.
				if rf > 1 && len(pairs) != n*(n-1) {
					t.Fatalf("only %d distinct leader/follower pairs, want %d: %v", len(pairs), n*(n-1), pairs)
				}
			})
		}
	}
}

// TestPlaceReplicasRackAware checks Kafka's rack-aware placement: every
// partition's replicas span min(rf, racks) racks, no broker appears twice,
// and leaders are spread evenly. Reference: KIP-36.
func TestPlaceReplicasRackAware(t *testing.T) {
	rack := func(s string) *string { return &s }
	cases := []struct {
		name  string
		racks []string // per broker id 0..n-1
		rf    int
	}{
		{"three racks of two, rf 3", []string{"a", "a", "b", "b", "c", "c"}, 3},
		{"three racks of two, rf 2", []string{"a", "a", "b", "b", "c", "c"}, 2},
		{"two racks, rf 3", []string{"x", "y", "x", "y"}, 3},
		{"uneven racks, rf 3", []string{"a", "a", "a", "b", "c"}, 3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			img := &Image{Brokers: map[int32]Broker{}}
			racks := map[string]bool{}
			for i, r := range c.racks {
				img.Brokers[int32(i)] = Broker{NodeID: int32(i), Rack: rack(r)}
				racks[r] = true
			}
			const parts = 60
			got := placeReplicas(img, "orders", 0, parts, c.rf)
			leaders := map[int32]int{}
			for p, rs := range got {
				if len(rs) != c.rf {
					t.Fatalf("partition %d: %d replicas, want %d", p, len(rs), c.rf)
				}
				seen := map[int32]bool{}
				spanned := map[string]bool{}
				for _, b := range rs {
					if seen[b] {
						t.Fatalf("partition %d: broker %d twice in %v", p, b, rs)
					}
					seen[b] = true
					spanned[c.racks[b]] = true
				}
				if want := min(c.rf, len(racks)); len(spanned) != want {
					t.Fatalf("partition %d: replicas %v span %d racks, want %d", p, rs, len(spanned), want)
				}
				leaders[rs[0]]++
			}
			for id := range c.racks {
				if n := leaders[int32(id)]; n != parts/len(c.racks) && n != parts/len(c.racks)+1 {
					t.Fatalf("broker %d leads %d of %d partitions: %v", id, n, parts, leaders)
				}
			}
		})
	}
}
