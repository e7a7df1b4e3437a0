package broker_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"samsa/internal/testutil"
)

// TestStartupRepairsAndDeletesLogsWithoutTopicID covers partition
// directories left without partition.metadata by a broker killed while it
// created them: one of a partition still assigned here gets its topic id
// back and keeps its records; one of a partition of a live topic that is
// not assigned here (it moved away meanwhile) is deleted, as a stray
// replica with the topic id would be. A log of a topic the cluster does
// not know is still left alone.
func TestStartupRepairsAndDeletesLogsWithoutTopicID(t *testing.T) {
	t.Parallel()
	c := testutil.StartCluster(t, 1, "default.replication.factor=1")
	const topic = "strays"
	testutil.CreateTopic(t, c.Admin(), topic, 2)
	addr := c.Brokers[0].Addr()
	wantProduce(t, "a", produceRawAcks(t, addr, -1, topic, 0, plainBatch(t, "a", 3)), 0, 0)
	wantProduce(t, "b", produceRawAcks(t, addr, -1, topic, 1, plainBatch(t, "b", 3)), 0, 0)
	c.Stop(0)

	dir := c.Brokers[0].Dir
	if err := os.Remove(filepath.Join(dir, topic+"-0", "partition.metadata")); err != nil {
		t.Fatal(err)
	}
	copyDir := func(from, to string) {
		t.Helper()
		if err := os.MkdirAll(to, 0o755); err != nil {
			t.Fatal(err)
		}
		ents, err := os.ReadDir(from)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			if e.Name() == "partition.metadata" || e.IsDir() {
				continue
			}
			data, err := os.ReadFile(filepath.Join(from, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(to, e.Name()), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	stray := filepath.Join(dir, topic+"-7")  // a partition the topic does not have here
	unknown := filepath.Join(dir, "other-0") // a topic the cluster does not know
	copyDir(filepath.Join(dir, topic+"-1"), stray)
	copyDir(filepath.Join(dir, topic+"-1"), unknown)

	c.Start(0)
	testutil.Eventually(t, 20*time.Second, func() error {
		if _, err := os.Stat(stray); !os.IsNotExist(err) {
			return fmt.Errorf("%s still there (%v)", stray, err)
		}
		return nil
	})
	if _, err := os.Stat(filepath.Join(dir, topic+"-0", "partition.metadata")); err != nil {
		t.Fatalf("partition.metadata of %s-0 not written again: %v", topic, err)
	}
	if _, err := os.Stat(unknown); err != nil {
		t.Fatalf("the log of an unknown topic was removed: %v", err)
	}
	addr = c.Brokers[0].Addr()
	if vs := values(consumeFrom(t, addr, topic, 0, 3)); !slices.Equal(vs, tagged("a", 3)) {
		t.Fatalf("%s-0 after the restart: %q", topic, vs)
	}
	wantProduce(t, "c", produceRawAcks(t, addr, -1, topic, 0, plainBatch(t, "c", 1)), 0, 3)
}
