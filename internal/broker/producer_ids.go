package broker

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"samsa/internal/cluster"
)

// producerIDBlock is how many producer ids a broker reserves in etcd at a
// time (Kafka reserves 1000 too).
const producerIDBlock = 1000

// producerIDPrefetchAt is how many ids of the current block are handed
// out before the next block is reserved in the background (80 %), so that
// InitProducerId finds the next block ready when the current one runs out.
const producerIDPrefetchAt = producerIDBlock * 8 / 10

// producerIDTimeout bounds one etcd call of the background work: a block
// reservation or a read of the cluster's limit.
const producerIDTimeout = 5 * time.Second

// producerIDRecheck is how many ids above the limit the broker remembers
// while it finds out whether they were issued (see issued).
const producerIDRecheck = 1024

// producerIDs hands out producer ids from blocks reserved in etcd, and
// tells whether an id was ever issued by any broker of the cluster. It is
// safe for concurrent use.
//
// Neither call waits on etcd while the broker has what it needs: the next
// block is reserved in the background once 80 % of the current one is
// handed out, and the cluster's limit is read in the background when a
// produce names an id above it. allocate waits for etcd only when both
// blocks are used up (at start, or when etcd has been unreachable for a
// whole block); issued never does.
//
// Its goroutines (one reservation and one limit read at most, each
// bounded by producerIDTimeout) belong to it: close waits for them.
type producerIDs struct {
	cluster *cluster.Cluster
	ctx     context.Context // the broker's lifetime: cancelled by Broker.Close
	wg      sync.WaitGroup  // the background reservations and limit reads

	// limit is the lowest id no broker had reserved when it was last
	// known (this broker's own blocks or a read of etcd). It only grows.
	limit atomic.Int64

	// mu guards the fields below. No etcd call is made under it.
	mu sync.Mutex
	// next and end are the current block: next id to hand out, and its
	// end (exclusive).
	next, end int64
	// spare is the next block, [spare, spare+producerIDBlock), reserved
	// ahead; hasSpare says whether there is one.
	spare    int64
	hasSpare bool
	// reserving is closed when the reservation under way ends (nil: none
	// under way); reserveErr is the error of the last one that failed.
	reserving  chan struct{}
	reserveErr error
	// reading says a read of the limit is under way; readSeq counts the
	// reads started, readDone the last one that succeeded.
	reading           bool
	readSeq, readDone uint64
	// above holds ids seen above the limit, with the readSeq of the first
	// read that started after they were seen.
	above map[int64]uint64
}

// init sets up p and starts a read of the cluster's limit, so that ids
// issued before this broker started are known by the time producers come.
func (p *producerIDs) init(ctx context.Context, c *cluster.Cluster) {
	p.ctx, p.cluster = ctx, c
	p.mu.Lock()
	p.readLimitLocked()
	p.mu.Unlock()
}

// close waits for the background etcd calls, which end when the broker's
// context is cancelled. Call it after cancelling that context.
func (p *producerIDs) close() { p.wg.Wait() }

// allocate returns a new producer id. It blocks on etcd only when no
// reserved id is left (the first call after start, or etcd down for a
// whole block), until the reservation ends or ctx is done.
func (p *producerIDs) allocate(ctx context.Context) (int64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for {
		if p.next >= p.end && p.hasSpare {
			p.next, p.end = p.spare, p.spare+producerIDBlock
			p.hasSpare = false
		}
		if p.next < p.end {
			id := p.next
			p.next++
			if p.end-p.next <= producerIDBlock-producerIDPrefetchAt && !p.hasSpare {
				p.reserveLocked()
			}
			return id, nil
		}
		// No id left: wait for the reservation (starting one if none is
		// under way).
		done := p.reserveLocked()
		p.mu.Unlock()
		select {
		case <-done:
		case <-ctx.Done():
			p.mu.Lock()
			return 0, ctx.Err()
		}
		p.mu.Lock()
		if !p.hasSpare && p.next >= p.end && p.reserveErr != nil {
			return 0, p.reserveErr
		}
	}
}

// reserveLocked starts a reservation of the next block unless one is under
// way, and returns a channel closed when it ends. Called with mu held.
func (p *producerIDs) reserveLocked() <-chan struct{} {
	if p.reserving != nil {
		return p.reserving
	}
	done := make(chan struct{})
	p.reserving = done
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		ctx, cancel := context.WithTimeout(p.ctx, producerIDTimeout)
		first, err := p.cluster.ReserveProducerIDs(ctx, producerIDBlock)
		cancel()
		p.mu.Lock()
		if err == nil {
			p.spare, p.hasSpare = first, true
			p.raiseLimit(first + producerIDBlock)
		}
		p.reserveErr = err
		p.reserving = nil
		p.mu.Unlock()
		close(done)
	}()
	return done
}

// raiseLimit moves limit up to at least l.
func (p *producerIDs) raiseLimit(l int64) {
	for {
		cur := p.limit.Load()
		if l <= cur || p.limit.CompareAndSwap(cur, l) {
			return
		}
	}
}

// issued reports whether id may have been issued by a broker of the
// cluster. It never waits: an id below the limit was issued; for an id
// above it a read of the limit from etcd starts in the background, and the
// id is refused (false) once a read that started after the id was first
// seen has ended with the id still above the limit.
//
// NB: until then, and while etcd cannot be read, an id above the limit is
// treated as Kafka treats every producer id: Kafka keeps no record of
// issued ids on the produce path, so an id a partition does not know
// starts a new producer there at sequence 0 and is refused
// (UNKNOWN_PRODUCER_ID, KIP-360) at any other sequence. Such an id most
// likely comes from a block another broker has just reserved, and a
// producer is not refused for what this broker cannot find out yet; a
// forged id gets in at most until the read ends, as it always would in
// Kafka.
func (p *producerIDs) issued(id int64) bool {
	if id < p.limit.Load() {
		return true
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if id < p.limit.Load() {
		return true
	}
	need, seen := p.above[id]
	if !seen {
		if p.above == nil || len(p.above) >= producerIDRecheck {
			// NB: forgetting ids only delays their refusal.
			p.above = make(map[int64]uint64)
		}
		need = p.readSeq + 1 // the next read to start
		p.above[id] = need
	}
	if p.readDone >= need {
		return false
	}
	if !p.reading {
		p.readLimitLocked()
	}
	return true
}

// readLimitLocked starts a read of the cluster's limit. Called with mu
// held and no read under way.
func (p *producerIDs) readLimitLocked() {
	p.reading = true
	p.readSeq++
	seq := p.readSeq
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		ctx, cancel := context.WithTimeout(p.ctx, producerIDTimeout)
		limit, err := p.cluster.ProducerIDLimit(ctx)
		cancel()
		p.mu.Lock()
		defer p.mu.Unlock()
		p.reading = false
		if err != nil {
			return
		}
		p.raiseLimit(limit)
		p.readDone = seq
		for id := range p.above {
			if id < p.limit.Load() {
				delete(p.above, id)
			}
		}
	}()
}
