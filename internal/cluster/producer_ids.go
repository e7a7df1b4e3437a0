package cluster

import (
	"context"
	"encoding/json"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// producerIDsKey holds the next producer id no broker has reserved yet, as
// JSON {"next": N}. Brokers reserve blocks of ids with a compare-and-swap on
// its mod revision, so ids are unique across brokers and restarts.
const producerIDsKey = "producer-ids"

type producerIDsValue struct {
	Next int64 `json:"next"`
}

// ReserveProducerIDs reserves a block of n producer ids and returns the
// first; the block is [first, first+n). It retries on concurrent
// reservations until ctx is done.
func (c *Cluster) ReserveProducerIDs(ctx context.Context, n int64) (first int64, err error) {
	key := c.keys.prefix + producerIDsKey
	for {
		resp, err := c.cli.Get(ctx, key)
		if err != nil {
			return 0, fmt.Errorf("cluster: read %s: %w", key, err)
		}
		var cur producerIDsValue
		var cmp clientv3.Cmp
		if len(resp.Kvs) == 0 {
			cmp = clientv3.Compare(clientv3.CreateRevision(key), "=", 0)
		} else {
			if err := json.Unmarshal(resp.Kvs[0].Value, &cur); err != nil {
				return 0, fmt.Errorf("cluster: decode %s: %w", key, err)
			}
			cmp = clientv3.Compare(clientv3.ModRevision(key), "=", resp.Kvs[0].ModRevision)
		}
		next, _ := json.Marshal(producerIDsValue{Next: cur.Next + n})
		tr, err := c.cli.Txn(ctx).If(cmp).Then(clientv3.OpPut(key, string(next))).Commit()
		if err != nil {
			return 0, fmt.Errorf("cluster: reserve producer ids: %w", err)
		}
		if tr.Succeeded {
			return cur.Next, nil
		}
		if err := ctx.Err(); err != nil {
			return 0, err
		}
	}
}

// ProducerIDLimit returns the lowest producer id no broker has reserved:
// every id below it may have been issued, none at or above it was.
func (c *Cluster) ProducerIDLimit(ctx context.Context) (int64, error) {
	key := c.keys.prefix + producerIDsKey
	resp, err := c.cli.Get(ctx, key)
	if err != nil {
		return 0, fmt.Errorf("cluster: read %s: %w", key, err)
	}
	if len(resp.Kvs) == 0 {
		return 0, nil
	}
	var cur producerIDsValue
	if err := json.Unmarshal(resp.Kvs[0].Value, &cur); err != nil {
		return 0, fmt.Errorf("cluster: decode %s: %w", key, err)
	}
	return cur.Next, nil
}
