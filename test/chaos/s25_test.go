package chaos

import (
	"fmt"
	"slices"
	"sort"
	"testing"
	"time"
)

// TestS25AutoCommitMembersKilled is TESTPLAN S-25: members that leave
// committing to franz-go's autocommit (every 500 ms and before a revoke;
// it commits what the poll before the last returned, as Kafka's consumer
// does) consume a topic the safe producer keeps writing, and one of them
// is killed with SIGKILL every 5 s (long: 30 s) and replaced. A poller
// reads the committed offsets every 200 ms. No committed offset may ever
// be above what some member had received by the time the poller saw it
// (the member reports a record before its next poll, and autocommit only
// covers polls before that); after the producer stops and the members
// catch up, every record below the final committed offsets was processed
// by some member (groupHistory.check's skipped count).
func TestS25AutoCommitMembersKilled(t *testing.T) {
	const (
		topic      = "s25"
		groupID    = "s25-group"
		partitions = 6
	)
	var (
		runFor = pick(20*time.Second, 5*time.Minute)
		every  = pick(5*time.Second, 30*time.Second)
	)
	c := startCluster(t)
	c.createTopic(topic, partitions)
	w := startWorkload(t, c, topic, partitions)
	w.waitAcks(0, 50, 30*time.Second)
	g := startGroupRun(t, c, topic, groupID, partitions)
	g.autoCommit, g.hist.autoCommit = true, true
	for range 3 {
		g.startMember("")
	}
	began := time.Now()
	kills := 0
	for kills == 0 || time.Since(began)+every <= runFor {
		time.Sleep(every)
		live := g.live()
		if len(live) == 0 {
			t.Fatal("no member left alive")
		}
		victim := live[kills%len(live)]
		g.kill(victim)
		kills++
		g.startMember("")
	}
	w.stop(30 * time.Second)
	final := g.waitCaughtUp(90 * time.Second)
	g.hist.stopFetching()
	for _, m := range g.members {
		g.kill(m)
	}
	r := w.check(c)
	logs := readAll(t, c, topic, partitions)
	gr := g.hist.check(t, logs, final, partitions)
	beyond, seen := g.hist.committedBeyondReceived()
	for i, b := range beyond {
		if i < 10 {
			t.Errorf("S-25: %s", b)
		}
	}
	if len(beyond) > 0 {
		t.Errorf("S-25: %d committed offsets above what the members had received", len(beyond))
	}
	t.Logf("S-25: %d kills of %d member processes in %s; %d committed offsets observed, %d above what was received; final %v",
		kills, len(g.members), time.Since(began).Round(time.Second), seen, len(beyond), final)
	t.Logf("S-25: group: %v", gr)
	t.Logf("S-25: producer: %v", r)
}

// committedBeyondReceived compares every committed offset the poller
// observed with the records members had reported by the time the answer
// arrived: an offset o on partition p needs a reported record at o-1 or
// above (the initial commit of 0 needs none). It returns the observations
// that break this and how many observations there were.
func (h *groupHistory) committedBeyondReceived() (bad []string, seen int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	recs := map[int32][]consumed{}
	for _, r := range h.recs {
		recs[r.p] = append(recs[r.p], r)
	}
	for p := range recs {
		sort.Slice(recs[p], func(i, j int) bool { return recs[p][i].at.Before(recs[p][j].at) })
	}
	obs := slices.Clone(h.fetches)
	sort.Slice(obs, func(i, j int) bool { return obs[i].at.Before(obs[j].at) })
	next := map[int32]int{}   // index into recs[p] of the first record after the last observation
	high := map[int32]int64{} // highest offset reported on p so far
	for _, o := range obs {
		rs := recs[o.p]
		i := next[o.p]
		for i < len(rs) && !rs[i].at.After(o.at) {
			high[o.p] = max(high[o.p], rs[i].o+1)
			i++
		}
		next[o.p] = i
		seen++
		if o.o > 0 && o.o > high[o.p] {
			bad = append(bad, fmt.Sprintf("partition %d committed at %d (seen %s from broker %d), highest record received by then %d",
				o.p, o.o, o.at.Format("15:04:05.000"), o.node, high[o.p]-1))
		}
	}
	return bad, seen
}
