package broker

import (
	"context"
	"sync"
	"time"

	"samsa/internal/cluster"
)

// producerIDBlock is how many producer ids a broker reserves in etcd at a
// time (Kafka reserves 1000 too).
const producerIDBlock = 1000

// producerIDs hands out producer ids from blocks reserved in etcd, and
// tells whether an id was ever issued by any broker of the cluster. It is
// safe for concurrent use.
type producerIDs struct {
	cluster *cluster.Cluster

	mu    sync.Mutex
	next  int64 // guarded by mu: next id of the current block
	end   int64 // guarded by mu: end of the current block (exclusive)
	limit int64 // guarded by mu: no id at or above it has been issued, as last read
}

// allocate returns a new producer id.
func (p *producerIDs) allocate(ctx context.Context) (int64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.next >= p.end {
		first, err := p.cluster.ReserveProducerIDs(ctx, producerIDBlock)
		if err != nil {
			return 0, err
		}
		p.next, p.end = first, first+producerIDBlock
		p.limit = max(p.limit, p.end)
	}
	id := p.next
	p.next++
	return id, nil
}

// issued reports whether id lies in a block some broker reserved. It reads
// etcd only for an id above every block seen so far.
func (p *producerIDs) issued(id int64) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if id < p.limit {
		return true
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	limit, err := p.cluster.ProducerIDLimit(ctx)
	if err != nil {
		// Cannot tell; do not refuse a producer for an etcd hiccup.
		return true
	}
	p.limit = max(p.limit, limit)
	return id < p.limit
}
