package cluster

import (
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

const (
	retryMin = 50 * time.Millisecond
	retryMax = 2 * time.Second
)

// watchLoop keeps the image current: it watches the cluster prefix from
// rev+1, applies each response to b and publishes the result. When the
// watch ends (compaction, cancellation, lost leader) it reloads the whole
// prefix and watches again from the reload's revision. It returns when the
// Cluster closes. It owns b.
func (c *Cluster) watchLoop(b *builder, rev int64) {
	for {
		err := c.watch(b, rev)
		if c.ctx.Err() != nil {
			return
		}
		c.log.Warn("cluster: metadata watch ended; reloading", "revision", c.Image().Revision, "err", err)
		var ok bool
		if rev, ok = c.reload(b); !ok {
			return
		}
	}
}

// watch applies watch responses until the watch ends, and says why.
func (c *Cluster) watch(b *builder, rev int64) error {
	// NB: WithRequireLeader makes the server end the watch when its member
	// loses the leader, instead of keeping a watch that may never deliver.
	wctx := clientv3.WithRequireLeader(c.ctx)
	wch := c.cli.Watch(wctx, c.keys.prefix, clientv3.WithPrefix(), clientv3.WithRev(rev+1))
	for resp := range wch {
		if resp.CompactRevision != 0 {
			return fmt.Errorf("cluster: watch from revision %d: compacted at %d", rev+1, resp.CompactRevision)
		}
		if err := resp.Err(); err != nil {
			return fmt.Errorf("cluster: watch: %w", err)
		}
		if len(resp.Events) > 0 {
			c.publish(b.apply(resp.Events, 0))
		}
	}
	return fmt.Errorf("cluster: watch: %w", c.ctx.Err())
}

// reload reads the whole prefix again, retrying until it works or the
// Cluster closes, and publishes a fresh image. It returns the revision the
// image was read at.
func (c *Cluster) reload(b *builder) (int64, bool) {
	wait := retryMin
	for {
		resp, err := c.cli.Get(c.ctx, c.keys.prefix, clientv3.WithPrefix())
		if err == nil {
			c.publish(b.load(resp.Kvs, resp.Header.Revision))
			return resp.Header.Revision, true
		}
		if c.ctx.Err() != nil {
			return 0, false
		}
		c.log.Warn("cluster: reload metadata", "err", err)
		if !c.sleep(wait) {
			return 0, false
		}
		wait = min(2*wait, retryMax)
	}
}
