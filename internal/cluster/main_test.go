package cluster

import (
	"context"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// openTest opens a Cluster for node with data in dir (embedded etcd unless
// endpoints is set) and closes it at the end of the test.
func openTest(t *testing.T, node int32, dir string, endpoints ...string) *Cluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := Open(ctx, Config{
		NodeID:         node,
		DataDir:        dir,
		EtcdEndpoints:  endpoints,
		AdvertisedHost: "127.0.0.1",
		AdvertisedPort: 9092 + node,
		SessionTimeout: 2 * time.Second,
	})
	if err != nil {
		t.Fatalf("Open node %d: %v", node, err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("Close node %d: %v", node, err)
		}
	})
	return c
}

// waitImage waits until cond holds for c's image, failing after 10 s.
func waitImage(t *testing.T, c *Cluster, what string, cond func(*Image) bool) *Image {
	t.Helper()
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()
	for {
		ch := c.Changed()
		img := c.Image()
		if cond(img) {
			return img
		}
		select {
		case <-ch:
		case <-deadline.C:
			t.Fatalf("timed out waiting for %s; image at revision %d", what, img.Revision)
		}
	}
}

func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func leaseID(id int64) clientv3.LeaseID { return clientv3.LeaseID(id) }

func clientKeysOnly() []clientv3.OpOption {
	return []clientv3.OpOption{clientv3.WithPrefix(), clientv3.WithKeysOnly()}
}
