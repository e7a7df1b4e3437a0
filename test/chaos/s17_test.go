package chaos

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestS17EtcdPaused is the single-member part of TESTPLAN S-17 (etcd
// faults): the shared etcd is SIGSTOPped for 10 s, longer than the
// brokers' session timeout, then SIGCONTinued; once the cluster is whole
// again, etcd is killed with SIGKILL and restarted on the same data dir
// and socket after 5 s. The safe producer writes throughout.
//
// Pass: no safety anomaly, and on every partition acknowledgements
// resume within T_s + 5 s of etcd answering again. Without etcd no
// leadership or ISR change can be written, but a leader with its full ISR
// needs none to advance its high watermark. What happens to the
// registration leases and to leadership when etcd returns is logged:
// leases whose TTL passed while etcd stood still expire at once, every
// broker registers again, and the controller acts on what it then sees.
func TestS17EtcdPaused(t *testing.T) {
	const (
		topic      = "s17"
		partitions = 5
		// resumeBound is TESTPLAN's "writes resume within T_s + 5 s of
		// etcd returning".
		resumeBound = sessionTimeout + 5*time.Second
		// maxStateWrites bounds the partition state writes after each
		// fault: 8 partitions (5 and 3 of __consumer_offsets) times a few
		// changes each.
		maxStateWrites = 100
	)
	var (
		pause = pick(10*time.Second, 30*time.Second)
		down  = pick(5*time.Second, 20*time.Second)
	)
	c := startCluster(t)
	c.createTopic(topic, partitions)
	hist := watchStates(c, topic, partitions)
	w := startWorkload(t, c, topic, partitions)
	for p := range int32(partitions) {
		w.waitAcks(p, 20, 30*time.Second)
	}

	type phase struct {
		name        string
		from, back  time.Time // fault began; etcd answered again
		before      []partitionState
		during      int // acks while etcd was away
		resumeDelay time.Duration
		resumePart  int32
	}
	var phases []*phase
	marker := func(ph *phase) string { return "etcd fault: " + ph.name }
	begin := func(name string) *phase {
		ph := &phase{name: name}
		for p := range int32(partitions) {
			ph.before = append(ph.before, c.mustState(topic, p))
		}
		for _, b := range c.brokers {
			b.note("%s", marker(ph))
		}
		ph.from = time.Now()
		phases = append(phases, ph)
		return ph
	}
	// etcdBack waits until etcd answers the test's own client again.
	etcdBack := func(ph *phase) {
		waitFor(t, 30*time.Second, func() error {
			_, err := c.state(topic, 0)
			return err
		})
		ph.back = time.Now()
		ph.during = len(w.acksBetween(-1, ph.from, ph.back))
	}
	// observe waits settle after etcd returned, measures how long acks
	// took to resume on each partition, and logs what the brokers and the
	// controller did.
	observe := func(ph *phase) {
		// Watched: until every partition has an ack at least T_s after
		// etcd returned (so a lease expiring late is seen), at most
		// until just past the bound.
		_ = poll(resumeBound+time.Second, func() error {
			for p := range int32(partitions) {
				if len(w.acksBetween(p, ph.back.Add(sessionTimeout), time.Now())) == 0 {
					return fmt.Errorf("partition %d: no ack since etcd returned + T_s", p)
				}
			}
			return nil
		})
		until := time.Now()
		for p := range int32(partitions) {
			d := resumeDelay(w.acksBetween(p, ph.from.Add(-time.Second), until), ph.back, until)
			if d > ph.resumeDelay {
				ph.resumeDelay, ph.resumePart = d, p
			}
		}
		// The rest is read once the cluster is whole again, so late
		// re-registrations and the controller's answer to them count.
		c.waitFullISR(topic, partitions)
		var moved, offline []int32
		for p := range int32(partitions) {
			if _, ok := hist.firstAfter(p, ph.from, func(s partitionState) bool { return s.LeaderEpoch > ph.before[p].LeaderEpoch }); ok {
				moved = append(moved, p)
			}
			if _, ok := hist.firstAfter(p, ph.from, func(s partitionState) bool { return s.Leader < 0 }); ok {
				offline = append(offline, p)
			}
		}
		leaseLost, reregistered, offlineDecisions, decisions, isrWrites := 0, 0, 0, 0, 0
		var regDelays []time.Duration // re-registration, from etcd answering
		for _, b := range c.brokers {
			for _, l := range linesAfter(b.log(), marker(ph)) {
				switch {
				case strings.Contains(l, "registration lease lost"):
					leaseLost++
				case strings.Contains(l, "broker registered again"):
					reregistered++
					if at, ok := logTime(l); ok {
						regDelays = append(regDelays, at.Sub(ph.back).Round(10*time.Millisecond))
					}
				case strings.Contains(l, "replica: ISR changed"):
					isrWrites++
				case strings.Contains(l, "controller: partition state changed"):
					decisions++
					if strings.Contains(l, "leader=-1") {
						offlineDecisions++
					}
				}
			}
		}
		t.Logf("%s: away %s; %d acks while away; acks resumed within %s of etcd answering (partition %d); "+
			"brokers logged %d lease losses, %d re-registrations (at %v from etcd answering); controller wrote %d partition states (%d offline), leaders %d ISR changes; "+
			"leader epoch changed on partitions %v, offline observed on %v",
			ph.name, ph.back.Sub(ph.from).Round(time.Millisecond), ph.during, ph.resumeDelay.Round(time.Millisecond),
			ph.resumePart, leaseLost, reregistered, regDelays, decisions, offlineDecisions, isrWrites, moved, offline)
		// A handful of changes per partition is the cost of the leases
		// expiring; hundreds are the controller and a leader undoing each
		// other's writes (a follower whose lease expired put back into the
		// ISR as fast as the controller took it out).
		if n := decisions + isrWrites; n > maxStateWrites {
			t.Errorf("%s: %d partition state writes after etcd returned (controller %d, leaders %d), above %d",
				ph.name, n, decisions, isrWrites, maxStateWrites)
		}
		if ph.resumeDelay > resumeBound {
			t.Errorf("%s: partition %d acknowledged nothing for %s after etcd returned, above T_s + 5 s",
				ph.name, ph.resumePart, ph.resumeDelay.Round(time.Millisecond))
		}
		for _, b := range c.brokers {
			if err := b.exited(); err != nil {
				t.Fatal(err)
			}
		}
	}

	// Pause.
	ph := begin("pause")
	c.etcd.signal(syscall.SIGSTOP)
	sleepUntil(ph.from.Add(pause))
	c.etcd.signal(syscall.SIGCONT)
	etcdBack(ph)
	observe(ph)

	// Kill -9 and restart on the same data dir.
	ph = begin("kill")
	c.etcd.kill()
	sleepUntil(ph.from.Add(down))
	c.etcd.start()
	etcdBack(ph)
	observe(ph)

	for p := range int32(partitions) {
		w.waitAcks(p, 20, 30*time.Second)
	}
	w.stop(30 * time.Second)
	hist.stop()
	r := w.check(c)
	t.Logf("S-17: %v", r)
}

// resumeDelay returns, for acks of one partition, how long after back
// (etcd answering again) the partition went without an ack at worst: the
// largest gap between consecutive acks that ends after back, counted from
// back if it began before; a partition with no ack after its last one up
// to until counts that gap too. acks is in arrival order.
func resumeDelay(acks []ack, back, until time.Time) time.Duration {
	var worst time.Duration
	gap := func(start, end time.Time) {
		if !end.After(back) {
			return
		}
		if start.Before(back) {
			start = back
		}
		worst = max(worst, end.Sub(start))
	}
	for i := 1; i < len(acks); i++ {
		gap(acks[i-1].at, acks[i].at)
	}
	if len(acks) > 0 {
		gap(acks[len(acks)-1].at, until)
	} else {
		gap(back, until)
	}
	return worst
}

// logTime parses the time= field slog's text handler starts a line with.
func logTime(line string) (time.Time, bool) {
	rest, ok := strings.CutPrefix(line, "time=")
	if !ok {
		return time.Time{}, false
	}
	v, _, _ := strings.Cut(rest, " ")
	at, err := time.Parse(time.RFC3339Nano, v)
	return at, err == nil
}

// linesAfter returns the lines of log after the last line containing
// marker.
func linesAfter(log, marker string) []string {
	i := strings.LastIndex(log, marker)
	if i < 0 {
		return nil
	}
	return strings.Split(log[i:], "\n")[1:]
}
