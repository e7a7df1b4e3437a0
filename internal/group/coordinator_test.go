package group

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// memLog is an in-memory __consumer_offsets partition standing in for the
// broker's replica log. Its offsets start at 0.
type memLog struct {
	mu      sync.Mutex
	entries []Entry
	failErr error // returned by the next Append when set
	// epochs is the newest epoch of each producer, as the replica's
	// producer state refuses an older one.
	epochs map[int64]int16
}

func (l *memLog) Append(ctx context.Context, recs []KV) (int64, error) {
	return l.append(-1, recs)
}

func (l *memLog) AppendTxn(ctx context.Context, pid int64, epoch int16, _ any, recs []KV) (int64, error) {
	l.mu.Lock()
	if l.epochs == nil {
		l.epochs = map[int64]int16{}
	}
	if cur, ok := l.epochs[pid]; ok && epoch < cur {
		l.mu.Unlock()
		return 0, fmt.Errorf("memlog: epoch %d < %d: %w", epoch, cur, ErrInvalidProducerEpoch)
	}
	l.epochs[pid] = epoch
	l.mu.Unlock()
	return l.append(pid, recs)
}

func (l *memLog) append(pid int64, recs []KV) (int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.failErr != nil {
		err := l.failErr
		l.failErr = nil
		return 0, err
	}
	base := int64(len(l.entries))
	for _, r := range recs {
		l.entries = append(l.entries, Entry{Offset: int64(len(l.entries)), ProducerID: pid, Key: bytes.Clone(r.Key), Value: bytes.Clone(r.Value)})
	}
	return base, nil
}

// marker appends an end-transaction marker of pid and returns its offset.
func (l *memLog) marker(pid int64, commit bool) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	off := int64(len(l.entries))
	l.entries = append(l.entries, Entry{Offset: off, ProducerID: pid, Marker: true, Commit: commit})
	return off
}

func (l *memLog) Replay(ctx context.Context, fn func(Entry) error) error {
	l.mu.Lock()
	entries := append([]Entry(nil), l.entries...)
	l.mu.Unlock()
	for _, r := range entries {
		if err := fn(r); err != nil {
			return err
		}
	}
	return nil
}

// stallLog is a memLog whose Appends, once stalled, block until their
// context ends, as the broker's log does while the ISR cannot commit.
type stallLog struct {
	memLog
	stalled atomic.Bool
	entered chan struct{} // one per stalled Append, as it starts to block
	ended   chan error    // the context's error of each stalled Append
}

func newStallLog() *stallLog {
	return &stallLog{entered: make(chan struct{}, 64), ended: make(chan error, 64)}
}

func (l *stallLog) Append(ctx context.Context, recs []KV) (int64, error) {
	if !l.stalled.Load() {
		return l.memLog.Append(ctx, recs)
	}
	l.entered <- struct{}{}
	<-ctx.Done()
	l.ended <- ctx.Err()
	return 0, ctx.Err()
}

// recv returns the next value of ch, failing the test after timeout.
func recv[T any](t *testing.T, ch <-chan T, timeout time.Duration, what string) T {
	t.Helper()
	tm := time.NewTimer(timeout)
	defer tm.Stop()
	select {
	case v := <-ch:
		return v
	case <-tm.C:
		t.Fatalf("no %s within %v", what, timeout)
		panic("unreachable")
	}
}

func testConfig() Config {
	return Config{
		MinSessionTimeout:      10 * time.Millisecond,
		InitialRebalanceDelay:  -1,
		OffsetsTopicPartitions: 1,
	}
}

// newLoaded returns a coordinator serving partition 0 over log.
func newLoaded(t *testing.T, cfg Config, log Log) *Coordinator {
	t.Helper()
	c := NewCoordinator(cfg)
	t.Cleanup(func() { c.Close() })
	if err := c.Load(context.Background(), 0, log); err != nil {
		t.Fatalf("load: %v", err)
	}
	return c
}

// poll calls fn every interval until it reports done or fails, and returns
// fn's error, or ctx's once ctx ends first. It is safe to call from any
// goroutine (it does not touch a *testing.T).
func poll(ctx context.Context, interval time.Duration, fn func() (done bool, err error)) error {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		done, err := fn()
		if err != nil || done {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// checkFor polls fn until it returns nil, and fails the test with fn's last
// error when timeout passes first.
func checkFor(t *testing.T, timeout time.Duration, fn func() error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var last error
	if err := poll(ctx, 5*time.Millisecond, func() (bool, error) {
		last = fn()
		return last == nil, nil
	}); err != nil {
		t.Fatalf("after %v: %v", timeout, last)
	}
}

func joinReq(group, member, client string) JoinGroupRequest {
	return JoinGroupRequest{
		Group: group, MemberID: member, ClientID: client, ProtocolType: "consumer",
		Protocols:      []Protocol{{Name: "range", Metadata: subscription("t")}},
		SessionTimeout: 10 * time.Second, RebalanceTimeout: 10 * time.Second,
	}
}

// subscription encodes a version 0 consumer protocol subscription.
func subscription(topics ...string) []byte {
	b := []byte{0, 0, 0, 0, 0, byte(len(topics))}
	for _, t := range topics {
		b = append(b, 0, byte(len(t)))
		b = append(b, t...)
	}
	return append(b, 0, 0, 0, 0) // empty user data
}

func strp(s string) *string { return &s }

// joinAndSync makes a single member group stable and returns its member id
// and generation.
func joinAndSync(t *testing.T, c *Coordinator, group string) (string, int32) {
	t.Helper()
	return joinAndSyncReq(t, c, joinReq(group, "", "c"))
}

// joinAndSyncReq is joinAndSync with the member's JoinGroup request.
func joinAndSyncReq(t *testing.T, c *Coordinator, req JoinGroupRequest) (string, int32) {
	t.Helper()
	ctx := context.Background()
	group := req.Group
	r, err := c.JoinGroup(ctx, req)
	if err != nil {
		t.Fatalf("join: %v", err)
	}
	if _, err := c.SyncGroup(ctx, SyncGroupRequest{Group: group, MemberID: r.MemberID, Generation: r.Generation,
		Assignments: []Assignment{{MemberID: r.MemberID, Assignment: []byte("all")}}}); err != nil {
		t.Fatalf("sync: %v", err)
	}
	return r.MemberID, r.Generation
}

func commit(group, member string, gen int32, topic string, part int32, offset int64) OffsetCommitRequest {
	return OffsetCommitRequest{Group: group, MemberID: member, Generation: gen, Topics: []OffsetCommitTopic{{
		Topic: topic, Partitions: []OffsetCommitPartition{{Partition: part, Offset: offset, LeaderEpoch: 7, Metadata: strp("m")}},
	}}}
}

func fetchOne(t *testing.T, c *Coordinator, group, topic string, part int32) FetchedOffset {
	t.Helper()
	res, err := c.OffsetFetch(context.Background(), OffsetFetchRequest{Group: group, Topics: []OffsetFetchTopic{{Topic: topic, Partitions: []int32{part}}}})
	if err != nil {
		t.Fatalf("fetch: %v", err)
	}
	return res.Topics[0].Partitions[0]
}

func TestCommitSurvivesReload(t *testing.T) {
	ctx := context.Background()
	log := &memLog{}
	c := newLoaded(t, testConfig(), log)
	member, gen := joinAndSync(t, c, "g1")
	if _, err := c.OffsetCommit(ctx, commit("g1", member, gen, "t", 0, 42)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.OffsetCommit(ctx, commit("simple", "", -1, "u", 3, 9)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.OffsetCommit(ctx, commit("g1", member, gen+1, "t", 0, 43)); !errors.Is(err, ErrIllegalGeneration) {
		t.Fatalf("stale generation commit: got %v", err)
	}
	c.Close()

	c2 := newLoaded(t, testConfig(), log)
	if got := fetchOne(t, c2, "g1", "t", 0); got.Offset != 42 || got.LeaderEpoch != 7 || got.Metadata != "m" {
		t.Fatalf("g1 t/0 after reload = %+v", got)
	}
	if got := fetchOne(t, c2, "simple", "u", 3); got.Offset != 9 {
		t.Fatalf("simple u/3 after reload = %+v", got)
	}
	d, err := c2.DescribeGroup(ctx, "g1")
	if err != nil || d.State != "Stable" || len(d.Members) != 1 || d.Members[0].MemberID != member || string(d.Members[0].Assignment) != "all" {
		t.Fatalf("g1 after reload = %+v, %v", d, err)
	}
	// The reloaded member keeps heartbeating in its generation.
	if err := c2.Heartbeat(ctx, HeartbeatRequest{Group: "g1", MemberID: member, Generation: gen}); err != nil {
		t.Fatalf("heartbeat after reload: %v", err)
	}
}

func TestDeleteGroupWritesTombstones(t *testing.T) {
	ctx := context.Background()
	log := &memLog{}
	c := newLoaded(t, testConfig(), log)
	member, gen := joinAndSync(t, c, "g")
	if _, err := c.OffsetCommit(ctx, commit("g", member, gen, "t", 0, 5)); err != nil {
		t.Fatal(err)
	}
	if errs := c.DeleteGroups(ctx, []string{"g", "nope"}); !errors.Is(errs[0], ErrNonEmptyGroup) || !errors.Is(errs[1], ErrGroupIDNotFound) {
		t.Fatalf("delete while stable: %v", errs)
	}
	res, err := c.LeaveGroup(ctx, LeaveGroupRequest{Group: "g", Members: []LeaveMember{{MemberID: member}}})
	if err != nil || res.Members[0].Err != nil {
		t.Fatalf("leave: %+v %v", res, err)
	}
	checkFor(t, 5*time.Second, func() error {
		if d, _ := c.DescribeGroup(ctx, "g"); d.State != "Empty" {
			return fmt.Errorf("state %s, want Empty", d.State)
		}
		return nil
	})
	if errs := c.DeleteGroups(ctx, []string{"g"}); errs[0] != nil {
		t.Fatalf("delete empty: %v", errs[0])
	}
	if got := fetchOne(t, c, "g", "t", 0); got.Offset != -1 {
		t.Fatalf("offset after delete = %d", got.Offset)
	}
	c.Close()
	c2 := newLoaded(t, testConfig(), log)
	if got := fetchOne(t, c2, "g", "t", 0); got.Offset != -1 {
		t.Fatalf("offset after delete and reload = %d", got.Offset)
	}
	if _, err := c2.DescribeGroup(ctx, "g"); !errors.Is(err, ErrGroupIDNotFound) {
		t.Fatalf("describe after delete and reload: %v", err)
	}
}

func TestOffsetsExpireAfterRetention(t *testing.T) {
	ctx := context.Background()
	var mu sync.Mutex
	now := time.UnixMilli(1_000_000)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	cfg := testConfig()
	cfg.Now = clock
	cfg.OffsetsRetention = time.Hour
	cfg.OffsetsRetentionCheck = 10 * time.Millisecond
	log := &memLog{}
	c := newLoaded(t, cfg, log)
	if _, err := c.OffsetCommit(ctx, commit("s", "", -1, "t", 0, 1)); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	now = now.Add(time.Hour)
	mu.Unlock()
	checkFor(t, 5*time.Second, func() error {
		if got, _ := c.ListGroups(ctx, ListGroupsRequest{}); len(got) != 0 {
			return fmt.Errorf("groups %v, want none", got)
		}
		return nil
	})
	if got := fetchOne(t, c, "s", "t", 0); got.Offset != -1 {
		t.Fatalf("offset after expiry = %d", got.Offset)
	}
	c.Close()
	c2 := newLoaded(t, cfg, log)
	if got := fetchOne(t, c2, "s", "t", 0); got.Offset != -1 {
		t.Fatalf("offset after expiry and reload = %d", got.Offset)
	}
}

func TestConcurrentJoinsFormOneGeneration(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cfg := testConfig()
	var observed atomic.Int64
	cfg.OnRebalance = func(d time.Duration) {
		if d >= 0 {
			observed.Add(1)
		}
	}
	c := newLoaded(t, cfg, &memLog{})
	const n = 8
	stable := func() bool {
		d, err := c.DescribeGroup(ctx, "g")
		return err == nil && d.State == "Stable" && len(d.Members) == n
	}
	// Each client behaves as a consumer does: join, sync, heartbeat, and
	// rejoin when told a rebalance is in progress.
	var wg sync.WaitGroup
	gens := make([]int32, n)
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := joinReq("g", "", fmt.Sprintf("c%d", i))
			req.RequireKnownMemberID = true
			for ctx.Err() == nil {
				r, err := c.JoinGroup(ctx, req)
				if errors.Is(err, ErrMemberIDRequired) {
					req.MemberID = r.MemberID
					continue
				}
				if err != nil {
					errs[i] = err
					return
				}
				var assign []Assignment
				for _, m := range r.Members {
					assign = append(assign, Assignment{MemberID: m.MemberID, Assignment: []byte(m.MemberID)})
				}
				s, err := c.SyncGroup(ctx, SyncGroupRequest{Group: "g", MemberID: r.MemberID, Generation: r.Generation, Assignments: assign})
				if errors.Is(err, ErrRebalanceInProgress) {
					continue
				}
				if err != nil {
					errs[i] = err
					return
				}
				if string(s.Assignment) != r.MemberID {
					errs[i] = fmt.Errorf("assignment %q, want %q", s.Assignment, r.MemberID)
					return
				}
				// Heartbeat until the whole group is stable, or until told
				// to rejoin.
				err = poll(ctx, time.Millisecond, func() (bool, error) {
					if err := c.Heartbeat(ctx, HeartbeatRequest{Group: "g", MemberID: r.MemberID, Generation: r.Generation}); err != nil {
						return false, err
					}
					return stable(), nil
				})
				if err == nil {
					gens[i] = r.Generation
					return
				}
				if !errors.Is(err, ErrRebalanceInProgress) {
					errs[i] = err
					return
				}
			}
			errs[i] = ctx.Err()
		}()
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("member %d: %v", i, errs[i])
		}
	}
	d, err := c.DescribeGroup(ctx, "g")
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if gens[i] != gens[0] {
			t.Fatalf("generations differ: %v", gens)
		}
	}
	if len(d.Members) != n || d.State != "Stable" {
		t.Fatalf("group = %s with %d members, want Stable with %d", d.State, len(d.Members), n)
	}
	st := c.Stats()
	if st.Groups[Stable] != 1 || len(st.Groups) != 1 {
		t.Errorf("groups by state %v, want one Stable", st.Groups)
	}
	if st.Rebalances < 1 || observed.Load() != st.Rebalances {
		t.Errorf("rebalances %d, observed %d; want the same, at least 1", st.Rebalances, observed.Load())
	}
}

func TestPartitionMatchesJavaHashCode(t *testing.T) {
	// Java: "my-group".hashCode() == 1507458006 ... values computed with
	// Java's String.hashCode over UTF-16 code units.
	for _, tc := range []struct {
		group string
		n     int32
		want  int32
	}{
		{"", 50, 0},
		{"a", 50, 97 % 50},
		{"ab", 50, (97*31 + 98) % 50},
		{"𝄞", 50, int32((0xD834*31 + 0xDD1E) & 0x7fffffff % 50)},
	} {
		if got := Partition(tc.group, tc.n); got != tc.want {
			t.Errorf("Partition(%q, %d) = %d, want %d", tc.group, tc.n, got, tc.want)
		}
	}
}

func TestNotCoordinatorAndLoading(t *testing.T) {
	ctx := context.Background()
	c := NewCoordinator(testConfig())
	defer c.Close()
	if _, err := c.JoinGroup(ctx, joinReq("g", "", "c")); !errors.Is(err, ErrNotCoordinator) {
		t.Fatalf("join before load: %v", err)
	}
	if err := c.Load(ctx, 0, &memLog{}); err != nil {
		t.Fatal(err)
	}
	if err := c.Owns("g"); err != nil {
		t.Fatal(err)
	}
	c.Unload(0)
	if err := c.Heartbeat(ctx, HeartbeatRequest{Group: "g"}); !errors.Is(err, ErrNotCoordinator) {
		t.Fatalf("heartbeat after unload: %v", err)
	}
}

// shortSession is a join request whose session ends 50ms after the last
// heartbeat.
func shortSession(group string) JoinGroupRequest {
	req := joinReq(group, "", "c")
	req.SessionTimeout = 50 * time.Millisecond
	return req
}

// testClock is a clock that moves only when told. A coordinator on it
// still wakes on real time (its timer waits deadline - now), so sessions
// end promptly after an advance past them, and never before one, however
// slow the machine.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func newTestClock() *testClock { return &testClock{now: time.UnixMilli(1_000_000)} }

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func TestCloseCancelsStalledTimerAppend(t *testing.T) {
	cfg := testConfig()
	cfg.OffsetsCommitTimeout = time.Hour // only Close can end the Append
	clock := newTestClock()
	cfg.Now = clock.Now
	log := newStallLog()
	c := NewCoordinator(cfg)
	defer c.Close()
	if err := c.Load(context.Background(), 0, log); err != nil {
		t.Fatal(err)
	}
	joinAndSyncReq(t, c, shortSession("g"))
	log.stalled.Store(true)
	clock.advance(time.Second)
	// The member stops heartbeating: the timer goroutine removes it and,
	// holding the group, stores the Empty group into the stalled log.
	recv(t, log.entered, 5*time.Second, "Append from the timer goroutine")

	closed := make(chan error, 1)
	go func() { closed <- c.Close() }()
	if err := recv(t, closed, 5*time.Second, "return from Close"); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := recv(t, log.ended, time.Second, "end of the stalled Append"); !errors.Is(err, context.Canceled) {
		t.Fatalf("stalled Append ended with %v, want context.Canceled", err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestStalledAppendTimesOutAndTimersGoOn(t *testing.T) {
	ctx := context.Background()
	cfg := testConfig()
	cfg.OffsetsCommitTimeout = 100 * time.Millisecond
	clock := newTestClock()
	cfg.Now = clock.Now
	log := newStallLog()
	c := newLoaded(t, cfg, log)
	joinAndSyncReq(t, c, shortSession("g"))
	joinAndSyncReq(t, c, shortSession("h"))
	log.stalled.Store(true)
	clock.advance(time.Second)

	// Both sessions end; the second group's expiry is not held up for
	// longer than the first group's store may take.
	for range 2 {
		recv(t, log.entered, 5*time.Second, "Append from the timer goroutine")
		if err := recv(t, log.ended, 5*time.Second, "end of the stalled Append"); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("stalled Append ended with %v, want context.DeadlineExceeded", err)
		}
	}
	for _, g := range []string{"g", "h"} {
		checkFor(t, 5*time.Second, func() error {
			d, err := c.DescribeGroup(ctx, g)
			if err != nil || d.State != "Empty" || len(d.Members) != 0 {
				return fmt.Errorf("group %s = %s with %d members (%v), want Empty with none", g, d.State, len(d.Members), err)
			}
			return nil
		})
	}

	// A request's Append is bounded the same way, even without a deadline
	// of its own.
	res, err := c.OffsetCommit(ctx, commit("s", "", -1, "t", 0, 1))
	if err != nil {
		t.Fatalf("commit: %v", err)
	}
	if perr := res.Topics[0].Partitions[0].Err; !errors.Is(perr, ErrCoordinatorNotAvailable) || !errors.Is(perr, context.DeadlineExceeded) {
		t.Fatalf("commit into a stalled log: partition error %v, want coordinator not available (deadline exceeded)", perr)
	}
	recv(t, log.entered, time.Second, "Append of the commit")
	recv(t, log.ended, time.Second, "end of the commit's Append")
	if got := fetchOne(t, c, "s", "t", 0); got.Offset != -1 {
		t.Fatalf("offset of a failed commit = %d, want -1", got.Offset)
	}
}
