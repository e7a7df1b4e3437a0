package broker

import (
	"context"
	"sync"

	"samsa/internal/share"
)

// sharePersister stores share-partition state for the partition leaders
// (Kafka's Persister): read before a leader serves a share-partition,
// write before it answers a change.
type sharePersister interface {
	read(ctx context.Context, key sharePartKey, leaderEpoch int32) (share.State, bool, error)
	write(ctx context.Context, key sharePartKey, leaderEpoch int32, st share.State) error
}

// memPersister keeps state in this broker's memory only.
type memPersister struct {
	mu sync.Mutex
	m  map[sharePartKey]share.State
}

func (p *memPersister) read(_ context.Context, key sharePartKey, _ int32) (share.State, bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	st, ok := p.m[key]
	return st, ok, nil
}

func (p *memPersister) write(_ context.Context, key sharePartKey, _ int32, st share.State) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil {
		p.m = map[sharePartKey]share.State{}
	}
	p.m[key] = st
	return nil
}
