package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strings"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Keys of the client quotas (KIP-546), under the cluster prefix:
//
//	quotas/<entity>   {"producer_byte_rate": 1024, ...}: the quota values
//	                  of one entity; the key is deleted when none is left
//
// <entity> is an entity key as the quota package encodes it
// (users/alice/clients/<default>, ips/10.0.0.1); this package treats it as
// an opaque string.
const quotasDir = "quotas/"

// QuotaSet is every configured client quota: entity key -> quota key ->
// value. A new QuotaSet (a new pointer) is made only when a quota key
// changes, so a reader can rebuild what it derives from it on identity
// change. Never modify one.
type QuotaSet struct {
	Entries map[string]map[string]float64
}

// QuotaEdit is the change of one entity that AlterClientQuotas makes: the
// keys to set and the keys to remove. Removing a key that is not set is
// not an error; an entity left with no key is deleted.
type QuotaEdit struct {
	Entity string
	Set    map[string]float64
	Remove []string
}

func (k keys) quota(entity string) string { return k.prefix + quotasDir + entity }

// parseQuota returns the entity of a key under quotas/, or ok false.
func parseQuota(rest string) (entity string, ok bool) {
	entity, ok = strings.CutPrefix(rest, quotasDir)
	return entity, ok && entity != ""
}

// applyQuota applies one event on a quotas/ key to next. cloned tracks
// copy-on-write of the image's quota set.
func (b *builder) applyQuota(next, prev *Image, entity string, kv *mvccpb.KeyValue, del bool, cloned *bool) {
	if !*cloned {
		next.Quotas, *cloned = &QuotaSet{Entries: maps.Clone(prev.Quotas.Entries)}, true
	}
	var v map[string]float64
	if del || !b.decode(kv, &v) || len(v) == 0 {
		delete(next.Quotas.Entries, entity)
		return
	}
	next.Quotas.Entries[entity] = v
}

// AlterClientQuotas applies edits in one etcd transaction, so that all of
// them take effect at once or none does, and waits until this broker's
// image has them. It reads the entities' current values and writes only if
// none changed meanwhile, retrying a concurrent change up to maxCASRetries
// times (then ErrConflict). The edits must already be valid; this package
// does not know the quota keys. Each entity may appear once.
func (c *Cluster) AlterClientQuotas(ctx context.Context, edits []QuotaEdit) error {
	if len(edits) == 0 {
		return nil
	}
	gets := make([]clientv3.Op, len(edits))
	for i, e := range edits {
		gets[i] = clientv3.OpGet(c.keys.quota(e.Entity))
	}
	for range maxCASRetries {
		read, err := c.cli.Txn(ctx).Then(gets...).Commit()
		if err != nil {
			return fmt.Errorf("cluster: read client quotas: %w", err)
		}
		conds := make([]clientv3.Cmp, 0, len(edits))
		ops := make([]clientv3.Op, 0, len(edits))
		for i, e := range edits {
			key := c.keys.quota(e.Entity)
			cur := map[string]float64{}
			var rev int64
			if kvs := read.Responses[i].GetResponseRange().Kvs; len(kvs) == 1 {
				rev = kvs[0].ModRevision
				if err := json.Unmarshal(kvs[0].Value, &cur); err != nil {
					// A value this package never writes: replace it.
					cur = map[string]float64{}
				}
			}
			for _, k := range e.Remove {
				delete(cur, k)
			}
			maps.Copy(cur, e.Set)
			conds = append(conds, clientv3.Compare(clientv3.ModRevision(key), "=", rev))
			if len(cur) == 0 {
				ops = append(ops, clientv3.OpDelete(key))
			} else {
				ops = append(ops, clientv3.OpPut(key, mustJSON(cur)))
			}
		}
		resp, err := c.cli.Txn(ctx).If(conds...).Then(ops...).Commit()
		if err != nil {
			return fmt.Errorf("cluster: alter client quotas: %w", err)
		}
		if resp.Succeeded {
			return c.waitRevision(ctx, resp.Header.Revision)
		}
	}
	return fmt.Errorf("%w: client quotas changed %d times while altering them", ErrConflict, maxCASRetries)
}
