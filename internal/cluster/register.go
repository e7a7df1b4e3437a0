package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"strconv"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// register writes brokers/<id> and the controller election candidate
// controller/<id> under a new lease with TTL SessionTimeout.
// A key left by an earlier process of the same node (whose lease has not
// expired yet) is taken over: putting it with the new lease detaches it
// from the old one. It returns the revision of the write and the lease.
func (c *Cluster) register(ctx context.Context) (int64, clientv3.LeaseID, error) {
	ttl := max(int64(math.Ceil(c.cfg.SessionTimeout.Seconds())), 1)
	lease, err := c.cli.Grant(ctx, ttl)
	if err != nil {
		return 0, 0, fmt.Errorf("cluster: register broker %d: grant lease: %w", c.cfg.NodeID, err)
	}
	c.regMu.Lock()
	defer c.regMu.Unlock()
	val := mustJSON(c.brokerValueLocked())
	// The election candidate shares the lease, so it goes with the
	// registration. Putting it again over an earlier process's key keeps
	// that key's CreateRevision: a broker that restarts within its session
	// timeout keeps its place in the election.
	resp, err := c.cli.Txn(ctx).Then(
		clientv3.OpPut(c.keys.broker(c.cfg.NodeID), val, clientv3.WithLease(lease.ID), clientv3.WithPrevKV()),
		clientv3.OpPut(c.keys.controllerCandidate(c.cfg.NodeID), strconv.Itoa(int(c.cfg.NodeID)), clientv3.WithLease(lease.ID)),
	).Commit()
	if err != nil {
		// Best effort: an orphaned lease expires by itself after ttl.
		rctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
		_, _ = c.cli.Revoke(rctx, lease.ID)
		cancel()
		return 0, 0, fmt.Errorf("cluster: register broker %d: %w", c.cfg.NodeID, err)
	}
	if prev := resp.Responses[0].GetResponsePut().PrevKv; prev != nil {
		var old brokerValue
		if json.Unmarshal(prev.Value, &old) == nil && old.Incarnation != c.incarnation {
			c.log.Warn("cluster: replaced the registration of another process with the same node id",
				"node", c.cfg.NodeID, "incarnation", old.Incarnation, "host", old.Host, "port", old.Port)
		}
	}
	return resp.Header.Revision, lease.ID, nil
}

// brokerValueLocked returns the registration's value as of now. The
// caller holds regMu.
func (c *Cluster) brokerValueLocked() brokerValue {
	return brokerValue{
		Host:            c.cfg.AdvertisedHost,
		Port:            c.cfg.AdvertisedPort,
		Rack:            c.cfg.Rack,
		Incarnation:     c.incarnation,
		Endpoints:       c.cfg.Endpoints,
		ShuttingDown:    c.reg.shuttingDown,
		OfflineLogDirs:  c.reg.offlineDirs,
		OfflineReplicas: c.reg.offlineReplicas,

		UncleanShutdown:       c.reg.unclean,
		EmptyLogDir:           c.reg.unclean && c.cfg.EmptyLogDir,
		FlushIntervalMessages: c.cfg.FlushIntervalMessages,
	}
}

// putRegistration writes the registration as of now under the current
// lease and waits for the image to show it.
func (c *Cluster) putRegistration(ctx context.Context) error {
	c.regMu.Lock()
	val := mustJSON(c.brokerValueLocked())
	resp, err := c.cli.Put(ctx, c.keys.broker(c.cfg.NodeID), val, clientv3.WithLease(clientv3.LeaseID(c.leaseID.Load())))
	c.regMu.Unlock()
	if err != nil {
		return fmt.Errorf("cluster: update the registration of broker %d: %w", c.cfg.NodeID, err)
	}
	return c.waitRevision(ctx, resp.Header.Revision)
}

// SetOfflineReplicas reports this broker's failed log dirs and the
// partitions whose replicas were in them (by topic) in its registration
// (brokers/<node>: offline_log_dirs, offline_replicas), so that the
// controller moves their leadership to other in-sync replicas and removes
// them from the ISR (Decide). Each call replaces what the last one said.
// A registration written again after a lost lease keeps it. It returns
// once the image shows the write; on an error the caller calls it again
// (the state is kept for the next registration either way). The slices
// and map are the Cluster's once passed.
func (c *Cluster) SetOfflineReplicas(ctx context.Context, dirs []string, replicas map[string][]int32) error {
	c.regMu.Lock()
	c.reg.offlineDirs, c.reg.offlineReplicas = dirs, replicas
	c.regMu.Unlock()
	return c.putRegistration(ctx)
}

// keepAliveLoop keeps the registration lease alive. If the lease is lost
// (expired while etcd was unreachable, or revoked), it registers again
// under a new lease. It returns when the Cluster closes.
func (c *Cluster) keepAliveLoop() {
	for {
		lease := clientv3.LeaseID(c.leaseID.Load())
		ch, err := c.cli.KeepAlive(c.ctx, lease)
		if err == nil {
			for range ch {
				c.leaseRenewals.Add(1)
			}
		}
		if c.ctx.Err() != nil {
			return
		}
		c.log.Warn("cluster: broker registration lease lost; registering again",
			"node", c.cfg.NodeID, "lease", int64(lease), "err", err)
		wait := retryMin
		for {
			// NB: each attempt is bounded by the session timeout: a
			// request sent to an etcd member that hangs (paused, or cut
			// off without its connections closing) is never answered, and
			// the retry goes to another member.
			ctx, cancel := context.WithTimeout(c.ctx, c.cfg.SessionTimeout)
			_, next, err := c.register(ctx)
			cancel()
			if err == nil {
				c.leaseID.Store(int64(next))
				c.log.Info("cluster: broker registered again", "node", c.cfg.NodeID, "lease", int64(next))
				break
			}
			if c.ctx.Err() != nil {
				return
			}
			c.log.Warn("cluster: register broker", "node", c.cfg.NodeID, "err", err)
			if !c.sleep(wait) {
				return
			}
			wait = min(2*wait, retryMax)
		}
	}
}

// clearUncleanShutdown runs while the registration says UncleanShutdown:
// once no partition holds this broker in a place its unclean shutdown
// disqualifies it from (UncleanPending: the controller takes it out of
// them), it registers again without the flag, so that the ELR and ISR
// memberships it earns from now on count as any other broker's.
func (c *Cluster) clearUncleanShutdown() {
	waited := false
	for {
		st := c.state.Load()
		// NB: only an image that holds this process's own registration
		// tells: an older one still shows the registration from before
		// the restart, without the flags and with the old incarnation,
		// where nothing is pending yet.
		br, ok := st.img.Brokers[c.cfg.NodeID]
		current := ok && br.Incarnation == c.incarnation
		if current && !UncleanPending(st.img, c.cfg.NodeID) {
			c.regMu.Lock()
			c.reg.unclean = false
			c.regMu.Unlock()
			ctx, cancel := context.WithTimeout(c.ctx, c.cfg.SessionTimeout)
			err := c.putRegistration(ctx)
			cancel()
			if err == nil {
				// A new broker, or one that held no partition where its
				// restart mattered, has nothing to report.
				lvl := slog.LevelDebug
				if waited {
					lvl = slog.LevelInfo
				}
				c.log.Log(c.ctx, lvl, "cluster: the controller has taken this broker out of what its unclean shutdown or empty log dir disqualified it for; registration cleared of both", "node", c.cfg.NodeID)
				return
			}
			if c.ctx.Err() != nil {
				return
			}
			c.regMu.Lock()
			c.reg.unclean = true
			c.regMu.Unlock()
			c.log.Warn("cluster: clear unclean shutdown from the registration", "node", c.cfg.NodeID, "err", err)
			if !c.sleep(retryMin) {
				return
			}
			continue
		}
		waited = waited || current
		select {
		case <-c.ctx.Done():
			return
		case <-st.changed:
		}
	}
}
