package fetchsession

import (
	"cmp"
	"slices"
	"sync"
)

// Plan is the session part of the next Fetch request a Handler built.
type Plan struct {
	SessionID, Epoch int32
	// Full marks a full fetch: Send holds every partition wanted.
	Full bool
	// Send are the partitions the request names: all of them in a full
	// fetch; in an incremental one, those added to the session or whose
	// Params or topic id changed.
	Send []Partition
	// Forget are the partitions the session drops (ForgottenTopics).
	// Each names its topic both by name and by id; the request's version
	// decides which goes on the wire.
	Forget []Key
}

// Handler is a fetcher's side of the sessions with one broker (Kafka's
// FetchSessionHandler): it remembers what the session holds and sends only
// what changed. Build, then Done or Failed, once per request, in turn. It
// is safe for concurrent use, but the requests of one Handler must not
// overlap.
type Handler struct {
	mu struct {
		sync.Mutex
		id, epoch int32 // of the next request
		// topicIDs: the session was opened at a version that names
		// topics by id.
		topicIDs bool
		// sent holds the partitions the session has, by topic name and
		// partition, with the Key (name and id) and Params last sent.
		sent map[nameKey]*sentPartition
		// gen numbers the Builds, to mark the partitions each wants.
		gen uint64
		// full: the request in flight is a full fetch.
		full bool
	}
}

type nameKey struct {
	topic     string
	partition int32
}

// sentPartition is a partition of the session and the Build that last
// wanted it.
type sentPartition struct {
	Partition
	gen uint64
}

// Build returns the next request's Plan for the partitions wanted now,
// each with both its topic name and its id set in Key. The Handler takes it
// that the broker will hold the session so; Done or Failed says whether it
// did.
func (h *Handler) Build(want []Partition) Plan {
	h.mu.Lock()
	defer h.mu.Unlock()
	plan := Plan{SessionID: h.mu.id, Epoch: h.mu.epoch}
	h.mu.gen++
	gen := h.mu.gen
	if h.mu.epoch == InitialEpoch || h.mu.epoch == FinalEpoch {
		h.mu.full = true
		h.mu.sent = make(map[nameKey]*sentPartition, len(want))
		for _, p := range want {
			h.mu.sent[nameKey{p.Topic, p.Partition}] = &sentPartition{Partition: p, gen: gen}
		}
		plan.Full, plan.Send = true, want
		return plan
	}
	h.mu.full = false
	// NB: an idle fetch of many partitions changes nothing here: one
	// lookup per partition, no allocation.
	kept, added := 0, 0
	for _, p := range want {
		k := nameKey{p.Topic, p.Partition}
		prev := h.mu.sent[k]
		switch {
		case prev == nil:
			h.mu.sent[k] = &sentPartition{Partition: p, gen: gen}
			plan.Send = append(plan.Send, p)
			added++
			continue
		case prev.gen == gen:
			continue // named twice
		case prev.TopicID != p.TopicID && h.mu.topicIDs:
			// A topic recreated under its name is another partition
			// to a session keyed by id.
			plan.Forget = append(plan.Forget, prev.Key)
			plan.Send = append(plan.Send, p)
		case prev.Partition != p:
			plan.Send = append(plan.Send, p)
		}
		prev.Partition, prev.gen = p, gen
		kept++
	}
	if kept+added < len(h.mu.sent) {
		// Some partitions are no longer wanted.
		for k, prev := range h.mu.sent {
			if prev.gen != gen {
				plan.Forget = append(plan.Forget, prev.Key)
				delete(h.mu.sent, k)
			}
		}
	}
	slices.SortFunc(plan.Forget, func(a, b Key) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	return plan
}

// Done takes the answer to the request last built: sessionErr is nil or a
// session error of this package (the response's top-level error code),
// sessionID the response's session id, and topicIDs whether the request's
// version named topics by id (v13+). After ErrSessionIDNotFound the next
// request opens a new session; after another error or a full fetch the
// broker did not give a session, the next is full; otherwise it is the
// next incremental one.
func (h *Handler) Done(sessionErr error, sessionID int32, topicIDs bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case sessionErr == ErrSessionIDNotFound:
		h.mu.id, h.mu.epoch = 0, InitialEpoch
	case sessionErr != nil:
		// Close the session named and open a new one.
		h.mu.epoch = InitialEpoch
	case sessionID == 0:
		// No session was created, or the broker closed it.
		h.mu.id, h.mu.epoch = 0, InitialEpoch
	case h.mu.full:
		h.mu.id, h.mu.epoch, h.mu.topicIDs = sessionID, NextEpoch(InitialEpoch), topicIDs
	default:
		h.mu.epoch = NextEpoch(h.mu.epoch)
	}
}

// Failed says that the request last built got no answer (a broken
// connection, a timeout): the next request is a full fetch that closes the
// session, whose state the broker may or may not have moved on.
func (h *Handler) Failed() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.mu.epoch = InitialEpoch
}

// Session returns the session id and epoch the next request carries.
func (h *Handler) Session() (id, epoch int32) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.mu.id, h.mu.epoch
}
