package cluster

import (
	"context"
	"strings"
	"time"

	"google.golang.org/grpc"
)

// Stats is a snapshot of this broker's cluster counters for metrics.
type Stats struct {
	// Controller reports whether this broker is the active controller
	// in its current image.
	Controller bool
	// LeaseRenewals counts keepalive responses for the registration lease.
	LeaseRenewals int64
	// ControllerWrites counts partition state changes this broker wrote
	// as controller; ControllerWriteErrors those that failed other than
	// by losing their compare.
	ControllerWrites, ControllerWriteErrors int64
}

// Stats returns the counters. Safe for concurrent use.
func (c *Cluster) Stats() Stats {
	return Stats{
		Controller:            c.Image().ControllerID == c.cfg.NodeID,
		LeaseRenewals:         c.leaseRenewals.Load(),
		ControllerWrites:      c.controllerWrites.Load(),
		ControllerWriteErrors: c.controllerFailed.Load(),
	}
}

// etcdDialOptions adds an interceptor that times each unary etcd request
// for obs; none without an observer.
func etcdDialOptions(obs EtcdObserver) []grpc.DialOption {
	if obs == nil {
		return nil
	}
	return []grpc.DialOption{grpc.WithChainUnaryInterceptor(
		func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			start := time.Now()
			err := invoker(ctx, method, req, reply, cc, opts...)
			op := method
			if i := strings.LastIndexByte(method, '/'); i >= 0 {
				op = method[i+1:]
			}
			obs.ObserveEtcd(op, time.Since(start), err)
			return err
		})}
}
