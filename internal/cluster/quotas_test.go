package cluster

import (
	"fmt"
	"sync"
	"testing"
)

// Quotas altered on one broker reach every broker's image; an edit merges
// into the entity's stored values, an entity left without values is
// deleted, and the quota set is replaced only when a quota key changes.
func TestClientQuotasReachEveryImage(t *testing.T) {
	t.Parallel()
	a := openTest(t, 0, t.TempDir())
	b := openTest(t, 1, t.TempDir(), a.ClientURL())
	ctx := testCtx(t)

	const alice, app = "users/alice", "users/alice/clients/a%2Fb"
	err := a.AlterClientQuotas(ctx, []QuotaEdit{
		{Entity: alice, Set: map[string]float64{"producer_byte_rate": 1024, "consumer_byte_rate": 2048}},
		{Entity: app, Set: map[string]float64{"request_percentage": 12.5}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := a.Image().Quotas.Entries[alice]["producer_byte_rate"]; got != 1024 {
		t.Errorf("writer's own image: producer_byte_rate %v, want 1024 (AlterClientQuotas waits for it)", got)
	}
	img := waitImage(t, b, "quotas", func(img *Image) bool { return len(img.Quotas.Entries) == 2 })
	if got := img.Quotas.Entries[app]["request_percentage"]; got != 12.5 {
		t.Errorf("request_percentage %v, want 12.5", got)
	}
	set := img.Quotas
	if err := a.SetBrokerConfigs(ctx, "", map[string]string{"log.retention.ms": "1000"}); err != nil {
		t.Fatal(err)
	}
	img = waitImage(t, b, "broker config", func(img *Image) bool { return len(img.BrokerConfigs[""]) == 1 })
	if img.Quotas != set {
		t.Error("an unrelated write replaced the quota set")
	}

	err = a.AlterClientQuotas(ctx, []QuotaEdit{
		{Entity: alice, Set: map[string]float64{"producer_byte_rate": 4096}, Remove: []string{"consumer_byte_rate"}},
		{Entity: app, Remove: []string{"request_percentage", "not_set"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	img = waitImage(t, b, "second alter", func(img *Image) bool { return len(img.Quotas.Entries) == 1 })
	if got := img.Quotas.Entries[alice]; len(got) != 1 || got["producer_byte_rate"] != 4096 {
		t.Errorf("alice %v, want only producer_byte_rate 4096", got)
	}
	if len(set.Entries) != 2 || set.Entries[alice]["consumer_byte_rate"] != 2048 {
		t.Error("an earlier image's quota set was modified")
	}
}

// Concurrent alters of one entity from two brokers lose no key: each
// write compares the entity's revision and retries on a change.
func TestClientQuotasConcurrentAltersLoseNothing(t *testing.T) {
	t.Parallel()
	a := openTest(t, 0, t.TempDir())
	b := openTest(t, 1, t.TempDir(), a.ClientURL())
	ctx := testCtx(t)

	const n = 10
	var wg sync.WaitGroup
	errs := make(chan error, 2*n)
	for w, c := range []*Cluster{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range n {
				key := fmt.Sprintf("k%d_%d", w, i)
				errs <- c.AlterClientQuotas(ctx, []QuotaEdit{{Entity: "clients/<default>", Set: map[string]float64{key: 1}}})
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	img := waitImage(t, a, "every key", func(img *Image) bool { return len(img.Quotas.Entries["clients/<default>"]) == 2*n })
	if len(img.Quotas.Entries) != 1 {
		t.Errorf("entries %v", img.Quotas.Entries)
	}
}
