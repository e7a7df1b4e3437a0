package broker_test

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"samsa/internal/testutil"
)

// TestShareGroupReadCommittedSkipsAbortedRecords: under
// share.isolation.level=read_committed a share group delivers each
// committed transactional record (and each non-transactional one) once,
// never a record of an aborted transaction, and nothing past the last
// stable offset: the records of an open transaction, and what follows
// them, only once it commits. Reference: KIP-932 "share.isolation.level",
// KIP-98 (last stable offset).
func TestShareGroupReadCommittedSkipsAbortedRecords(t *testing.T) {
	t.Parallel()
	b := testutil.StartBroker(t, append(shareBrokerConfig, "share.isolation.level=read_committed")...)
	const topic, group = "share-rc", "sg-rc"
	testutil.CreateTopic(t, b.Admin(), topic, 1)
	p := txnProducer(t, []string{b.Addr()}, "share-rc-txn", topic)
	runTxn(t, p, kgo.TryCommit, txnValues("c1", 5)...)
	runTxn(t, p, kgo.TryAbort, txnValues("a1", 4)...)
	plain := b.Client(kgo.DefaultProduceTopic(topic))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := plain.ProduceSync(ctx, &kgo.Record{Value: []byte("plain-0")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	runTxn(t, p, kgo.TryCommit, txnValues("c2", 3)...)
	runTxn(t, p, kgo.TryAbort, txnValues("a2", 2)...)
	// An open transaction, then a plain record after it.
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for _, v := range txnValues("o1", 2) {
		if err := p.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if err := plain.ProduceSync(ctx, &kgo.Record{Value: []byte("plain-1")}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	seen := map[string]int{}
	snapshot := func() []string {
		mu.Lock()
		defer mu.Unlock()
		var out []string
		for v, n := range seen {
			out = append(out, fmt.Sprintf("%s*%d", v, n))
		}
		sort.Strings(out)
		return out
	}
	cctx, ccancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for i := 0; i < 2; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			shareConsumer(cctx, t, b.Addr(), group, topic, func(r *kgo.Record) kgo.AckStatus {
				mu.Lock()
				seen[string(r.Value)]++
				mu.Unlock()
				return kgo.AckAccept
			})
		}()
	}
	committed := fmt.Sprint([]string{"c1-0*1", "c1-1*1", "c1-2*1", "c1-3*1", "c1-4*1", "c2-0*1", "c2-1*1", "c2-2*1", "plain-0*1"})
	testutil.Eventually(t, 20*time.Second, func() error {
		if got := fmt.Sprint(snapshot()); got != committed {
			return fmt.Errorf("delivered %s, want %s", got, committed)
		}
		return nil
	})
	// The open transaction holds the last stable offset: neither its
	// records nor the plain record after them come.
	time.Sleep(1500 * time.Millisecond)
	if got := fmt.Sprint(snapshot()); got != committed {
		t.Fatalf("with a transaction open, delivered %s, want %s", got, committed)
	}
	if err := p.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	all := fmt.Sprint([]string{"c1-0*1", "c1-1*1", "c1-2*1", "c1-3*1", "c1-4*1", "c2-0*1", "c2-1*1", "c2-2*1", "o1-0*1", "o1-1*1", "plain-0*1", "plain-1*1"})
	testutil.Eventually(t, 20*time.Second, func() error {
		if got := fmt.Sprint(snapshot()); got != all {
			return fmt.Errorf("delivered %s, want %s", got, all)
		}
		return nil
	})
	// Give duplicates a chance to show.
	time.Sleep(2500 * time.Millisecond)
	ccancel()
	wg.Wait()
	if got := fmt.Sprint(snapshot()); got != all {
		t.Fatalf("finally delivered %s, want %s", got, all)
	}
}
