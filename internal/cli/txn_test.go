package cli

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

func TestFindHanging(t *testing.T) {
	t.Parallel()
	const now = int64(10_000_000)
	old := now - (20 * time.Minute).Milliseconds()
	fresh := now - time.Minute.Milliseconds()
	prod := func(pid int64, start, last int64) kadm.DescribedProducer {
		return kadm.DescribedProducer{Topic: "t", Partition: 0, ProducerID: pid, ProducerEpoch: 3,
			CurrentTxnStartOffset: start, LastTimestamp: last}
	}
	set := func(parts ...int32) kadm.TopicsSet {
		s := make(kadm.TopicsSet)
		s.Add("t", parts...)
		return s
	}
	listed := map[int64]kadm.ListedTransaction{
		2: {TxnID: "ongoing-here", ProducerID: 2},
		3: {TxnID: "ongoing-elsewhere", ProducerID: 3},
		4: {TxnID: "completed", ProducerID: 4},
		5: {TxnID: "moved", ProducerID: 5},
		6: {TxnID: "unanswered", ProducerID: 6},
	}
	described := kadm.DescribedTransactions{
		"ongoing-here":      {TxnID: "ongoing-here", ProducerID: 2, State: "Ongoing", Topics: set(0)},
		"ongoing-elsewhere": {TxnID: "ongoing-elsewhere", ProducerID: 3, State: "Ongoing", Topics: set(1)},
		"completed":         {TxnID: "completed", ProducerID: 4, State: "CompleteCommit"},
		"moved":             {TxnID: "moved", ProducerID: 50, State: "Ongoing", Topics: set(0)},
	}
	prods := []kadm.DescribedProducer{
		prod(1, 10, old),   // unknown to every coordinator: hanging
		prod(2, 20, old),   // its coordinator has the partition: live
		prod(3, 30, old),   // its coordinator's transaction lacks the partition: hanging
		prod(4, 40, old),   // its coordinator completed it: hanging
		prod(5, 50, old),   // the id moved to another producer: hanging
		prod(6, 60, old),   // the coordinator did not answer: not provable
		prod(7, 70, fresh), // open for less than the timeout: not a candidate
		prod(8, -1, old),   // no open transaction
	}
	got := findHanging(prods, listed, described, now, 15*time.Minute)
	var pids []int64
	for _, h := range got {
		pids = append(pids, h.ProducerID)
		if h.Why == "" {
			t.Errorf("producer %d: no reason given", h.ProducerID)
		}
	}
	want := []int64{1, 3, 4, 5}
	if len(pids) != len(want) {
		t.Fatalf("hanging producers %v, want %v", pids, want)
	}
	for i := range want {
		if pids[i] != want[i] {
			t.Fatalf("hanging producers %v, want %v", pids, want)
		}
	}
}
