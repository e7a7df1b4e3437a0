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
