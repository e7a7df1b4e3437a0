package broker

import (
	"sync"
	"sync/atomic"

	"samsa/internal/cluster"
	"samsa/internal/quota"
)

// Client quotas (KIP-13, KIP-55, KIP-124, KIP-219, KIP-546). The quota
// configuration lives in etcd (cluster.QuotaSet); the broker turns the set of
// the image it reads into a quota.Image the first time a request sees a new
// set (a new pointer), as it does for ACLs, so a quota change applies as soon
// as the broker's etcd watch delivers it.

// quotaState caches the quota.Image built from the newest quota set seen.
type quotaState struct {
	// mu serialises builds; built is read without it.
	mu    sync.Mutex
	built atomic.Pointer[builtQuotas]
}

// builtQuotas is a quota.Image over the quotas of src.
type builtQuotas struct {
	src *cluster.QuotaSet
	img *quota.Image
}

// quotaImage returns the quota image of the broker's current cluster image,
// building it if this quota set is new. It never returns nil.
func (b *Broker) quotaImage() *quota.Image {
	return b.quotaImageOf(b.cluster.Image().Quotas)
}

func (b *Broker) quotaImageOf(set *cluster.QuotaSet) *quota.Image {
	s := &b.quotas
	if cur := s.built.Load(); cur != nil && cur.src == set {
		return cur.img
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if cur := s.built.Load(); cur != nil && cur.src == set {
		return cur.img
	}
	cfg := make(quota.Config, len(set.Entries))
	for key, values := range set.Entries {
		e, err := quota.ParseEntityKey(key)
		if err != nil {
			b.log.Error("quota: ignoring a stored entity that does not decode", "key", key, "err", err)
			continue
		}
		for k, v := range values {
			if err := cfg.Alter(e, k, v, false); err != nil {
				b.log.Error("quota: ignoring a stored quota that is not valid", "entity", e, "key", k, "value", v, "err", err)
			}
		}
	}
	img := quota.NewImage(cfg)
	s.built.Store(&builtQuotas{src: set, img: img})
	return img
}
