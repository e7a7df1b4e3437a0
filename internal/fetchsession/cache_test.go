package fetchsession

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
)

// ids returns a NewID that hands out 101, 102, ...
func ids() func() int32 {
	next := int32(100)
	return func() int32 { next++; return next }
}

func part(topic string, p int32, offset int64) Partition {
	return Partition{Key: Key{Topic: topic, Partition: p}, Params: Params{FetchOffset: offset, LogStartOffset: -1, MaxBytes: 1 << 20, CurrentLeaderEpoch: -1, LastFetchedEpoch: -1}}
}

func key(topic string, p int32) Key { return Key{Topic: topic, Partition: p} }

// step is one Fetch through the cache: Open, then (unless it fails)
// Respond with results looked up by "topic-partition" (default: hw 10, no
// records).
type step struct {
	name      string
	req       Request
	nowMs     int64
	results   map[string]Result
	abandon   bool
	wantErr   error
	wantID    int32
	wantParts string // the partitions read: "t-0@5 t-1@0"
	wantIncl  string // the partitions answered: "t-0 t-1"
}

func run(t *testing.T, c *Cache, steps []step) {
	t.Helper()
	for i, s := range steps {
		x, err := c.Open(s.req, s.nowMs)
		if s.wantErr != nil && err != nil {
			if !errors.Is(err, s.wantErr) {
				t.Fatalf("step %d %s: Open error %v, want %v", i, s.name, err, s.wantErr)
			}
			continue
		}
		if err != nil {
			t.Fatalf("step %d %s: Open: %v", i, s.name, err)
		}
		var read []string
		results := make([]Result, len(x.Partitions()))
		for j, p := range x.Partitions() {
			read = append(read, fmt.Sprintf("%s-%d@%d", p.Topic, p.Partition, p.FetchOffset))
			r, ok := s.results[fmt.Sprintf("%s-%d", p.Topic, p.Partition)]
			if !ok {
				r = Result{HighWatermark: 10, LastStableOffset: 10, LogStartOffset: 0}
			}
			results[j] = r
		}
		if got := strings.Join(read, " "); got != s.wantParts {
			t.Fatalf("step %d %s: read %q, want %q", i, s.name, got, s.wantParts)
		}
		id, include, err := x.Respond(results, s.nowMs)
		if !errors.Is(err, s.wantErr) {
			t.Fatalf("step %d %s: Respond error %v, want %v", i, s.name, err, s.wantErr)
		}
		if s.abandon {
			id = x.Abandon()
		}
		if id != s.wantID {
			t.Fatalf("step %d %s: session id %d, want %d", i, s.name, id, s.wantID)
		}
		if err != nil {
			continue
		}
		var incl []string
		for j, p := range x.Partitions() {
			if include == nil || include[j] {
				incl = append(incl, fmt.Sprintf("%s-%d", p.Topic, p.Partition))
			}
		}
		if got := strings.Join(incl, " "); got != s.wantIncl && !s.abandon {
			t.Fatalf("step %d %s: answered %q, want %q", i, s.name, got, s.wantIncl)
		}
	}
}

// Reference: KIP-227 "Fetch Session Epochs" and Kafka's FetchManager.newContext.
func TestCacheSessionLifecycle(t *testing.T) {
	three := []Partition{part("t", 0, 5), part("t", 1, 0), part("u", 0, 7)}
	tests := []struct {
		name  string
		steps []step
	}{
		{"sessionless full fetch answers every partition without a session", []step{
			{req: Request{SessionID: 0, Epoch: FinalEpoch, Partitions: three}, wantParts: "t-0@5 t-1@0 u-0@7", wantIncl: "t-0 t-1 u-0"},
			{name: "no session was made", req: Request{SessionID: 101, Epoch: 1}, wantErr: ErrSessionIDNotFound},
		}},
		{"epoch 0 opens a session; an idle incremental fetch reads all and answers none", []step{
			{req: Request{Epoch: InitialEpoch, Partitions: three}, wantID: 101, wantParts: "t-0@5 t-1@0 u-0@7", wantIncl: "t-0 t-1 u-0"},
			{req: Request{SessionID: 101, Epoch: 1}, wantID: 101, wantParts: "t-0@5 t-1@0 u-0@7", wantIncl: ""},
			{req: Request{SessionID: 101, Epoch: 2}, wantID: 101, wantParts: "t-0@5 t-1@0 u-0@7", wantIncl: ""},
		}},
		{"a changed high watermark, last stable offset, log start or an error is answered", []step{
			{req: Request{Epoch: InitialEpoch, Partitions: three}, wantID: 101, wantParts: "t-0@5 t-1@0 u-0@7", wantIncl: "t-0 t-1 u-0"},
			{req: Request{SessionID: 101, Epoch: 1}, results: map[string]Result{
				"t-0": {HighWatermark: 11, LastStableOffset: 10},
				"t-1": {HighWatermark: 10, LastStableOffset: 9},
				"u-0": {HighWatermark: 10, LastStableOffset: 10, LogStartOffset: 3},
			}, wantID: 101, wantParts: "t-0@5 t-1@0 u-0@7", wantIncl: "t-0 t-1 u-0"},
			{name: "told once", req: Request{SessionID: 101, Epoch: 2}, results: map[string]Result{
				"t-0": {HighWatermark: 11, LastStableOffset: 10},
				"t-1": {HighWatermark: 10, LastStableOffset: 9},
				"u-0": {HighWatermark: 10, LastStableOffset: 10, LogStartOffset: 3},
			}, wantID: 101, wantParts: "t-0@5 t-1@0 u-0@7", wantIncl: ""},
			{name: "an error every time", req: Request{SessionID: 101, Epoch: 3}, results: map[string]Result{
				"t-0": {HighWatermark: -1, LastStableOffset: -1, LogStartOffset: -1, Error: true},
				"t-1": {HighWatermark: 10, LastStableOffset: 9},
				"u-0": {HighWatermark: 10, LastStableOffset: 10, LogStartOffset: 3},
			}, wantID: 101, wantParts: "t-0@5 t-1@0 u-0@7", wantIncl: "t-0"},
			{req: Request{SessionID: 101, Epoch: 4}, results: map[string]Result{
				"t-0": {HighWatermark: -1, LastStableOffset: -1, LogStartOffset: -1, Error: true},
				"t-1": {HighWatermark: 10, LastStableOffset: 9},
				"u-0": {HighWatermark: 10, LastStableOffset: 10, LogStartOffset: 3},
			}, wantID: 101, wantParts: "t-0@5 t-1@0 u-0@7", wantIncl: "t-0"},
			{name: "and once more when the error clears", req: Request{SessionID: 101, Epoch: 5}, results: map[string]Result{
				"t-0": {HighWatermark: 11, LastStableOffset: -1, LogStartOffset: -1},
				"t-1": {HighWatermark: 10, LastStableOffset: 9},
				"u-0": {HighWatermark: 10, LastStableOffset: 10, LogStartOffset: 3},
			}, wantID: 101, wantParts: "t-0@5 t-1@0 u-0@7", wantIncl: "t-0"},
		}},
		{"records are answered and move their partition to the end of the session", []step{
			{req: Request{Epoch: InitialEpoch, Partitions: three}, wantID: 101, wantParts: "t-0@5 t-1@0 u-0@7", wantIncl: "t-0 t-1 u-0"},
			{req: Request{SessionID: 101, Epoch: 1}, results: map[string]Result{
				"t-0": {HighWatermark: 10, LastStableOffset: 10, Records: true},
			}, wantID: 101, wantParts: "t-0@5 t-1@0 u-0@7", wantIncl: "t-0"},
			{name: "the new offset is sent; the session keeps the rest", req: Request{SessionID: 101, Epoch: 2, Partitions: []Partition{part("t", 0, 9)}},
				wantID: 101, wantParts: "t-1@0 u-0@7 t-0@9", wantIncl: ""},
		}},
		{"an incremental fetch adds at the end, updates in place, forgets", []step{
			{req: Request{Epoch: InitialEpoch, Partitions: three}, wantID: 101, wantParts: "t-0@5 t-1@0 u-0@7", wantIncl: "t-0 t-1 u-0"},
			{req: Request{SessionID: 101, Epoch: 1, Partitions: []Partition{part("v", 0, 1), part("t", 1, 4)}, Forgotten: []Key{key("t", 0), key("nope", 3)}},
				wantID: 101, wantParts: "t-1@4 u-0@7 v-0@1", wantIncl: "v-0"},
		}},
		{"a partition both sent and forgotten is dropped (adds first, as Kafka)", []step{
			{req: Request{Epoch: InitialEpoch, Partitions: three}, wantID: 101, wantParts: "t-0@5 t-1@0 u-0@7", wantIncl: "t-0 t-1 u-0"},
			{req: Request{SessionID: 101, Epoch: 1, Partitions: []Partition{part("t", 0, 6)}, Forgotten: []Key{key("t", 0)}},
				wantID: 101, wantParts: "t-1@0 u-0@7", wantIncl: ""},
		}},
		{"forgetting every partition closes the session", []step{
			{req: Request{Epoch: InitialEpoch, Partitions: three[:1]}, wantID: 101, wantParts: "t-0@5", wantIncl: "t-0"},
			{req: Request{SessionID: 101, Epoch: 1, Forgotten: []Key{key("t", 0)}}, wantID: 0, wantParts: "", wantIncl: ""},
			{req: Request{SessionID: 101, Epoch: 2}, wantErr: ErrSessionIDNotFound},
		}},
		{"wrong epochs, unknown ids and topic id disagreement are refused", []step{
			{req: Request{Epoch: InitialEpoch, Partitions: three}, wantID: 101, wantParts: "t-0@5 t-1@0 u-0@7", wantIncl: "t-0 t-1 u-0"},
			{name: "epoch 2 before 1", req: Request{SessionID: 101, Epoch: 2}, wantErr: ErrInvalidEpoch},
			{name: "negative epoch", req: Request{SessionID: 101, Epoch: -7}, wantErr: ErrInvalidEpoch},
			{name: "unknown id", req: Request{SessionID: 999, Epoch: 1}, wantErr: ErrSessionIDNotFound},
			{name: "id 0 incremental", req: Request{SessionID: 0, Epoch: 1}, wantErr: ErrSessionIDNotFound},
			{name: "v13 in a v12 session", req: Request{SessionID: 101, Epoch: 1, UsesTopicIDs: true}, wantErr: ErrTopicIDMismatch},
			{name: "the refusals did not move the epoch", req: Request{SessionID: 101, Epoch: 1}, wantID: 101, wantParts: "t-0@5 t-1@0 u-0@7", wantIncl: ""},
		}},
		{"epoch -1 with an id closes the session", []step{
			{req: Request{Epoch: InitialEpoch, Partitions: three}, wantID: 101, wantParts: "t-0@5 t-1@0 u-0@7", wantIncl: "t-0 t-1 u-0"},
			{req: Request{SessionID: 101, Epoch: FinalEpoch, Partitions: three[:1]}, wantID: 0, wantParts: "t-0@5", wantIncl: "t-0"},
			{req: Request{SessionID: 101, Epoch: 1}, wantErr: ErrSessionIDNotFound},
		}},
		{"epoch 0 with an id replaces the session", []step{
			{req: Request{Epoch: InitialEpoch, Partitions: three}, wantID: 101, wantParts: "t-0@5 t-1@0 u-0@7", wantIncl: "t-0 t-1 u-0"},
			{req: Request{SessionID: 101, Epoch: InitialEpoch, Partitions: three[1:]}, wantID: 102, wantParts: "t-1@0 u-0@7", wantIncl: "t-1 u-0"},
			{req: Request{SessionID: 101, Epoch: 1}, wantErr: ErrSessionIDNotFound},
			{req: Request{SessionID: 102, Epoch: 1}, wantID: 102, wantParts: "t-1@0 u-0@7", wantIncl: ""},
		}},
		{"a full fetch of nothing gets no session", []step{
			{req: Request{Epoch: InitialEpoch}, wantID: 0, wantParts: "", wantIncl: ""},
		}},
		{"an abandoned full fetch leaves no session", []step{
			{req: Request{Epoch: InitialEpoch, Partitions: three}, abandon: true, wantID: 0, wantParts: "t-0@5 t-1@0 u-0@7"},
			{req: Request{SessionID: 101, Epoch: 1}, wantErr: ErrSessionIDNotFound},
		}},
		{"what an abandoned incremental response would have told is told again", []step{
			{req: Request{Epoch: InitialEpoch, Partitions: three}, wantID: 101, wantParts: "t-0@5 t-1@0 u-0@7", wantIncl: "t-0 t-1 u-0"},
			{req: Request{SessionID: 101, Epoch: 1}, results: map[string]Result{"t-1": {HighWatermark: 12, LastStableOffset: 12}},
				abandon: true, wantID: 101, wantParts: "t-0@5 t-1@0 u-0@7"},
			{req: Request{SessionID: 101, Epoch: 2}, results: map[string]Result{"t-1": {HighWatermark: 12, LastStableOffset: 12}},
				wantID: 101, wantParts: "t-0@5 t-1@0 u-0@7", wantIncl: "t-1"},
		}},
		{"a session named by topic id", []step{
			{req: Request{Epoch: InitialEpoch, UsesTopicIDs: true, Partitions: []Partition{{Key: Key{TopicID: [16]byte{1}, Partition: 0}}}}, wantID: 101, wantParts: "-0@0", wantIncl: "-0"},
			{req: Request{SessionID: 101, Epoch: 1, UsesTopicIDs: false}, wantErr: ErrTopicIDMismatch},
			{req: Request{SessionID: 101, Epoch: 1, UsesTopicIDs: true, Forgotten: []Key{{TopicID: [16]byte{2}}}}, wantID: 101, wantParts: "-0@0", wantIncl: ""},
			{name: "forgotten by id", req: Request{SessionID: 101, Epoch: 2, UsesTopicIDs: true, Forgotten: []Key{{TopicID: [16]byte{1}}}}, wantID: 0, wantParts: "", wantIncl: ""},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := New(Config{MaxSlots: 10, EvictionMs: 1000, NewID: ids()})
			run(t, c, tt.steps)
		})
	}
}

// A request that used the session after Open makes the first one's
// response fail: the fetcher sent two requests of one epoch.
// Reference: Kafka IncrementalFetchContext.updateAndGenerateResponseData.
func TestCacheRespondRefusesASessionUsedMeanwhile(t *testing.T) {
	c := New(Config{MaxSlots: 10, EvictionMs: 1000, NewID: ids()})
	x, _ := c.Open(Request{Epoch: InitialEpoch, Partitions: []Partition{part("t", 0, 0)}}, 0)
	id, _, _ := x.Respond([]Result{{}}, 0)
	a, err := c.Open(Request{SessionID: id, Epoch: 1}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Open(Request{SessionID: id, Epoch: 1}, 1); !errors.Is(err, ErrInvalidEpoch) {
		t.Fatalf("a second request at epoch 1: %v, want ErrInvalidEpoch", err)
	}
	if _, err := c.Open(Request{SessionID: id, Epoch: 2}, 1); err != nil {
		t.Fatal(err)
	}
	if got, _, err := a.Respond([]Result{{}}, 1); !errors.Is(err, ErrInvalidEpoch) || got != id {
		t.Fatalf("the first response: id %d err %v, want %d ErrInvalidEpoch", got, err, id)
	}
}

func TestNextEpoch(t *testing.T) {
	for _, tt := range []struct{ in, want int32 }{{-1, -1}, {-5, -1}, {0, 1}, {1, 2}, {math.MaxInt32, 1}} {
		if got := NextEpoch(tt.in); got != tt.want {
			t.Errorf("NextEpoch(%d) = %d, want %d", tt.in, got, tt.want)
		}
	}
}

// open makes a session of n partitions of topic at nowMs and returns its id
// (0 if none was made).
func open(c *Cache, topic string, n int, privileged bool, nowMs int64) int32 {
	var parts []Partition
	for i := range n {
		parts = append(parts, part(topic, int32(i), 0))
	}
	x, _ := c.Open(Request{Epoch: InitialEpoch, Privileged: privileged, Partitions: parts}, nowMs)
	id, _, _ := x.Respond(make([]Result, n), nowMs)
	return id
}

func use(t *testing.T, c *Cache, id, epoch int32, nowMs int64) {
	t.Helper()
	x, err := c.Open(Request{SessionID: id, Epoch: epoch}, nowMs)
	if err != nil {
		t.Fatalf("use session %d: %v", id, err)
	}
	x.Respond(make([]Result, len(x.Partitions())), nowMs)
}

func alive(c *Cache, ids ...int32) string {
	var out []string
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range ids {
		if c.mu.sessions[id] != nil {
			out = append(out, fmt.Sprint(id))
		}
	}
	slices.Sort(out)
	return strings.Join(out, " ")
}

// Reference: Kafka FetchSessionCacheShard.tryEvict (KIP-227 "Fetch Session
// Caching"): a stale session goes first; else a privileged session beats an
// unprivileged one, and a larger one a smaller one created more than
// min.incremental.fetch.session.eviction.ms ago.
func TestCacheEviction(t *testing.T) {
	const evict = 1000
	tests := []struct {
		name string
		// build fills the two slots and returns the new session's
		// id (0 if refused) and the sessions left.
		build func(t *testing.T, c *Cache) (newID int32, left string)
		want  string
	}{
		{"a full cache refuses an equal new session", func(t *testing.T, c *Cache) (int32, string) {
			a, b := open(c, "a", 2, false, 0), open(c, "b", 2, false, 0)
			return open(c, "c", 2, false, 500), alive(c, a, b)
		}, "0: 101 102"},
		{"the session unused longest goes once stale", func(t *testing.T, c *Cache) (int32, string) {
			a, b := open(c, "a", 5, false, 0), open(c, "b", 5, false, 0)
			use(t, c, a, 1, 500)
			return open(c, "c", 1, false, 1001), alive(c, a, b)
		}, "103: 101"},
		{"no session is stale: a larger one evicts the smallest old unprivileged one", func(t *testing.T, c *Cache) (int32, string) {
			a, b := open(c, "a", 3, false, 0), open(c, "b", 2, false, 0)
			use(t, c, a, 1, 1500)
			use(t, c, b, 1, 1500)
			return open(c, "c", 4, false, 1600), alive(c, a, b)
		}, "103: 101"},
		{"a larger unprivileged session does not evict a young one", func(t *testing.T, c *Cache) (int32, string) {
			a, b := open(c, "a", 3, false, 900), open(c, "b", 2, false, 900)
			return open(c, "c", 4, false, 1600), alive(c, a, b)
		}, "0: 101 102"},
		{"an unprivileged session never evicts a privileged one that is not stale", func(t *testing.T, c *Cache) (int32, string) {
			a, b := open(c, "a", 1, true, 0), open(c, "b", 1, true, 0)
			use(t, c, a, 1, 1500)
			use(t, c, b, 1, 1500)
			return open(c, "c", 100, false, 1600), alive(c, a, b)
		}, "0: 101 102"},
		{"a privileged session evicts a young unprivileged one, the smallest", func(t *testing.T, c *Cache) (int32, string) {
			a, b := open(c, "a", 3, false, 100), open(c, "b", 7, false, 100)
			return open(c, "c", 1, true, 200), alive(c, a, b)
		}, "103: 102"},
		{"a privileged session evicts an old privileged smaller one", func(t *testing.T, c *Cache) (int32, string) {
			a, b := open(c, "a", 3, true, 0), open(c, "b", 7, true, 0)
			use(t, c, a, 1, 1500)
			use(t, c, b, 1, 1500)
			return open(c, "c", 4, true, 1600), alive(c, a, b)
		}, "103: 102"},
		{"but not a young one", func(t *testing.T, c *Cache) (int32, string) {
			a, b := open(c, "a", 3, true, 1000), open(c, "b", 7, true, 1000)
			return open(c, "c", 40, true, 1600), alive(c, a, b)
		}, "0: 101 102"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := New(Config{MaxSlots: 2, EvictionMs: evict, NewID: ids()})
			id, left := tt.build(t, c)
			if got := fmt.Sprintf("%d: %s", id, left); got != tt.want {
				t.Fatalf("new session and those left: %q, want %q", got, tt.want)
			}
			st := c.Stats()
			if st.Sessions != 2 {
				t.Fatalf("Stats %+v: want 2 sessions", st)
			}
		})
	}
}

func TestCacheStatsCountPartitionsAndEvictions(t *testing.T) {
	c := New(Config{MaxSlots: 1, EvictionMs: 10, NewID: ids()})
	a := open(c, "a", 3, false, 0)
	x, _ := c.Open(Request{SessionID: a, Epoch: 1, Partitions: []Partition{part("z", 0, 0)}, Forgotten: []Key{key("a", 0), key("a", 1)}}, 5)
	x.Respond(make([]Result, len(x.Partitions())), 5)
	if st := c.Stats(); st != (Stats{Sessions: 1, Partitions: 2}) {
		t.Fatalf("after an update: %+v", st)
	}
	open(c, "b", 4, false, 100)
	if st := c.Stats(); st != (Stats{Sessions: 1, Partitions: 4, Evictions: 1}) {
		t.Fatalf("after an eviction: %+v", st)
	}
}

func TestCacheWithoutSlotsMakesNoSession(t *testing.T) {
	c := New(Config{MaxSlots: 0, EvictionMs: 10})
	if id := open(c, "a", 3, true, 0); id != 0 {
		t.Fatalf("session %d with 0 slots", id)
	}
}

// Session ids are drawn again while taken or not positive.
func TestCacheSessionIDsAreUniqueAndPositive(t *testing.T) {
	seq := []int32{7, 0, -3, 7, 9}
	c := New(Config{MaxSlots: 10, EvictionMs: 10, NewID: func() int32 { v := seq[0]; seq = seq[1:]; return v }})
	if a, b := open(c, "a", 1, false, 0), open(c, "b", 1, false, 0); a != 7 || b != 9 {
		t.Fatalf("ids %d %d, want 7 9", a, b)
	}
	d := New(Config{MaxSlots: 1000, EvictionMs: 10})
	for range 100 {
		if id := open(d, "a", 1, false, 0); id <= 0 {
			t.Fatalf("random id %d", id)
		}
	}
	if st := d.Stats(); st.Sessions != 100 {
		t.Fatalf("%d sessions, want 100", st.Sessions)
	}
}
