package fetchsession

import (
	"errors"
	"math"
	"math/rand/v2"
	"sync"
)

// Session epochs with a meaning of their own (Kafka's FetchMetadata).
const (
	// InitialEpoch asks for a full fetch that opens a session.
	InitialEpoch int32 = 0
	// FinalEpoch asks for a full fetch without a session, closing the
	// session named, if any.
	FinalEpoch int32 = -1
)

// NextEpoch returns the epoch that follows e: FinalEpoch after a negative
// epoch, 1 after math.MaxInt32 (0 is never an incremental epoch).
func NextEpoch(e int32) int32 {
	switch {
	case e < 0:
		return FinalEpoch
	case e == math.MaxInt32:
		return 1
	}
	return e + 1
}

// Errors Open and Context.Respond return; the broker answers them with
// Kafka's error codes.
var (
	// ErrSessionIDNotFound: no session has the id (FETCH_SESSION_ID_NOT_FOUND).
	ErrSessionIDNotFound = errors.New("fetchsession: fetch session id not found")
	// ErrInvalidEpoch: the session expects another epoch
	// (INVALID_FETCH_SESSION_EPOCH).
	ErrInvalidEpoch = errors.New("fetchsession: invalid fetch session epoch")
	// ErrTopicIDMismatch: the request names topics by id and the session by
	// name, or the reverse (FETCH_SESSION_TOPIC_ID_ERROR).
	ErrTopicIDMismatch = errors.New("fetchsession: fetch session and request disagree on topic ids")
)

// Key names a partition in a session: by TopicID in a session that uses
// topic ids (Fetch v13+), with Topic empty; by Topic otherwise, with TopicID
// zero.
type Key struct {
	TopicID   [16]byte
	Topic     string
	Partition int32
}

// Params are what a fetcher asks of one partition. A session keeps the
// last Params sent for each of its partitions.
type Params struct {
	FetchOffset        int64
	LogStartOffset     int64 // the fetcher's (a follower's), else -1
	MaxBytes           int32
	CurrentLeaderEpoch int32
	LastFetchedEpoch   int32
}

// Partition is one partition of a fetch and what is asked of it.
type Partition struct {
	Key
	Params
}

// Request is what Open needs of a Fetch request.
type Request struct {
	SessionID, Epoch int32
	// Privileged marks a follower's fetch (Kafka's isFromFollower).
	Privileged bool
	// UsesTopicIDs is set for Fetch v13+, which names topics by id.
	UsesTopicIDs bool
	Partitions   []Partition
	Forgotten    []Key
}

// Result is what the response says of one partition, for Respond.
type Result struct {
	HighWatermark, LastStableOffset, LogStartOffset int64
	// Records: the response returns record batches for the partition.
	Records bool
	// Error: the partition answers an error code.
	Error bool
}

// Config configures a Cache.
type Config struct {
	// MaxSlots is max.incremental.fetch.session.cache.slots: the most
	// sessions cached. 0 creates none.
	MaxSlots int
	// EvictionMs is min.incremental.fetch.session.eviction.ms: a session
	// unused for longer may be evicted by any new one, and one created
	// longer ago by a more valuable one.
	EvictionMs int64
	// NewID returns a candidate session id; nil draws at random. Ids that
	// are not positive or already in use are drawn again.
	NewID func() int32
}

// Stats are a Cache's gauges and counters (Kafka's
// NumIncrementalFetchSessions, NumIncrementalFetchPartitionsCached and
// IncrementalFetchSessionEvictionsPerSec).
type Stats struct {
	Sessions   int
	Partitions int64
	Evictions  int64
}

// Cache holds the fetch sessions of one broker. It is safe for concurrent
// use.
type Cache struct {
	cfg Config

	mu struct {
		sync.Mutex
		sessions   map[int32]*Session
		partitions int64 // sum of the sessions' size
		evictions  int64
	}
}

// New returns an empty Cache.
func New(cfg Config) *Cache {
	if cfg.NewID == nil {
		cfg.NewID = func() int32 { return rand.Int32N(math.MaxInt32) + 1 }
	}
	c := &Cache{cfg: cfg}
	c.mu.sessions = make(map[int32]*Session)
	return c
}

// Session is one cached fetch session.
type Session struct {
	id           int32
	privileged   bool
	usesTopicIDs bool
	createdMs    int64
	// lastUsedMs and size (the partition count as of the last use) are
	// guarded by Cache.mu.
	lastUsedMs int64
	size       int

	mu struct {
		sync.Mutex
		// epoch is the epoch the next incremental fetch must carry.
		epoch int32
		parts map[Key]*entry
		// head and tail are the partitions in fetch order: a partition
		// that returned records moves to the tail, so that the others
		// come first in the next response's max_bytes (Kafka's
		// IncrementalFetchContext).
		head, tail *entry
	}
}

// entry is one partition of a session: the last Params the fetcher sent,
// and the offsets the fetcher was last told.
type entry struct {
	Partition
	// hw is -1 once the partition answered an error or its answer was
	// withheld, so that it answers again.
	hw, lso, logStart int64
	prev, next        *entry
}

func (s *Session) pushLocked(e *entry) {
	e.prev, e.next = s.mu.tail, nil
	if s.mu.tail != nil {
		s.mu.tail.next = e
	} else {
		s.mu.head = e
	}
	s.mu.tail = e
}

func (s *Session) unlinkLocked(e *entry) {
	if e.prev != nil {
		e.prev.next = e.next
	} else {
		s.mu.head = e.next
	}
	if e.next != nil {
		e.next.prev = e.prev
	} else {
		s.mu.tail = e.prev
	}
	e.prev, e.next = nil, nil
}

// updateLocked applies an incremental request: its partitions are added
// (at the end) or have their Params replaced (in place), then the forgotten
// ones are dropped, in Kafka's order.
func (s *Session) updateLocked(parts []Partition, forgotten []Key) {
	for _, p := range parts {
		if e := s.mu.parts[p.Key]; e != nil {
			e.Params = p.Params
			continue
		}
		e := &entry{Partition: p, hw: -1, lso: -1, logStart: -1}
		s.mu.parts[p.Key] = e
		s.pushLocked(e)
	}
	for _, k := range forgotten {
		if e := s.mu.parts[k]; e != nil {
			delete(s.mu.parts, k)
			s.unlinkLocked(e)
		}
	}
}

type kind uint8

const (
	sessionless kind = iota
	full
	incremental
)

// Context is one Fetch request's use of the cache, from Open to Respond.
// It belongs to that request and is not safe for concurrent use.
type Context struct {
	c     *Cache
	kind  kind
	req   Request
	parts []Partition

	// incremental: the session, the epoch it moved to at Open, and its
	// entries in the order of parts.
	s       *Session
	epoch   int32
	entries []*entry

	responded bool
	id        int32 // the session id Respond answered
	include   []bool
	err       error
}

// Open starts a Fetch request's use of the cache (step 1 of the package
// doc). A full fetch that names a session closes it. An incremental fetch
// updates its session and moves the session's epoch on, so that a second
// request with the same epoch fails; it fails with ErrSessionIDNotFound,
// ErrInvalidEpoch or ErrTopicIDMismatch. An incremental fetch that leaves
// its session without partitions closes it and reads nothing. Open keeps
// req.Partitions (for a full fetch) without copying them.
func (c *Cache) Open(req Request, nowMs int64) (*Context, error) {
	c.mu.Lock()
	if req.Epoch == InitialEpoch || req.Epoch == FinalEpoch {
		if s := c.mu.sessions[req.SessionID]; s != nil && req.SessionID != 0 {
			c.removeLocked(s)
		}
		c.mu.Unlock()
		k := full
		if req.Epoch == FinalEpoch {
			k = sessionless
		}
		return &Context{c: c, kind: k, req: req, parts: req.Partitions}, nil
	}
	s := c.mu.sessions[req.SessionID]
	c.mu.Unlock()
	if s == nil {
		return nil, ErrSessionIDNotFound
	}
	x, size, err := s.open(req)
	if err != nil {
		return nil, err
	}
	// NB: the session's own work is done without Cache.mu; a session
	// evicted meanwhile is left as it is.
	c.mu.Lock()
	if c.mu.sessions[s.id] == s {
		if size == 0 {
			c.removeLocked(s)
		} else {
			c.touchLocked(s, size, nowMs)
		}
	}
	c.mu.Unlock()
	x.c = c
	return x, nil
}

// open checks and applies an incremental request, and returns its Context
// and the session's new size.
func (s *Session) open(req Request) (*Context, int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.epoch != req.Epoch {
		return nil, 0, ErrInvalidEpoch
	}
	if s.usesTopicIDs != req.UsesTopicIDs {
		return nil, 0, ErrTopicIDMismatch
	}
	s.updateLocked(req.Partitions, req.Forgotten)
	if len(s.mu.parts) == 0 {
		// Nothing left to fetch: the session closes (Kafka answers
		// without a session).
		s.mu.epoch = FinalEpoch
		return &Context{kind: sessionless, req: req}, 0, nil
	}
	s.mu.epoch = NextEpoch(s.mu.epoch)
	x := &Context{kind: incremental, req: req, s: s, epoch: s.mu.epoch}
	x.parts = make([]Partition, 0, len(s.mu.parts))
	x.entries = make([]*entry, 0, len(s.mu.parts))
	for e := s.mu.head; e != nil; e = e.next {
		x.parts = append(x.parts, e.Partition)
		x.entries = append(x.entries, e)
	}
	return x, len(s.mu.parts), nil
}

// Partitions returns the partitions the request reads, in order: a full
// fetch's own, or every partition of an incremental fetch's session with
// the Params last sent. The caller must not modify them.
func (x *Context) Partitions() []Partition { return x.parts }

// Incremental reports whether the request is an incremental fetch.
func (x *Context) Incremental() bool { return x.kind == incremental }

// Respond takes the Result of each partition of Partitions, in order, and
// returns the session id the response carries and, per partition, whether
// the response holds it (step 3 of the package doc); include is nil when
// the response holds every partition. A full fetch that asked for a
// session gets one if a slot is free or can be freed (id 0 if not). An
// incremental fetch returns ErrInvalidEpoch if another request used the
// session since Open (the response then carries the id, the error and no
// partitions); otherwise the session remembers what the response tells.
// Calling Respond again returns the first answer.
func (x *Context) Respond(results []Result, nowMs int64) (id int32, include []bool, err error) {
	if x.responded {
		return x.id, x.include, x.err
	}
	x.responded = true
	switch x.kind {
	case full:
		x.id = x.c.create(x.req, results, nowMs)
	case incremental:
		x.id, x.include, x.err = x.respondIncremental(results)
	}
	return x.id, x.include, x.err
}

func (x *Context) respondIncremental(results []Result) (int32, []bool, error) {
	s := x.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.epoch != x.epoch {
		return s.id, nil, ErrInvalidEpoch
	}
	include := make([]bool, len(x.entries))
	for i, e := range x.entries {
		r := results[i]
		must := r.Records || r.Error || e.hw != r.HighWatermark || e.lso != r.LastStableOffset || e.logStart != r.LogStartOffset
		e.hw, e.lso, e.logStart = r.HighWatermark, r.LastStableOffset, r.LogStartOffset
		if r.Error {
			e.hw = -1
		}
		include[i] = must
		if r.Records && s.mu.parts[e.Key] == e {
			s.unlinkLocked(e)
			s.pushLocked(e)
		}
	}
	return s.id, include, nil
}

// Abandon is called instead of sending the answer of Respond when the
// response goes out without its partitions (a throttled response). It
// returns the session id to send: 0 for a full fetch, whose new session is
// dropped (as Kafka creates none for a throttled full fetch), or the
// session's for an incremental fetch, whose partitions that would have
// been answered will answer again.
func (x *Context) Abandon() int32 {
	switch x.kind {
	case full:
		if x.id != 0 {
			x.c.mu.Lock()
			if s := x.c.mu.sessions[x.id]; s != nil {
				x.c.removeLocked(s)
			}
			x.c.mu.Unlock()
		}
		x.id = 0
		return 0
	case incremental:
		s := x.s
		if x.err != nil {
			return s.id
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		for i, e := range x.entries {
			if x.include == nil || x.include[i] {
				e.hw = -1
			}
		}
		return s.id
	}
	return 0
}

// create makes a session of a full fetch's partitions with what the
// response told of them, if a slot is free or can be freed, and returns
// its id, or 0. A fetch of no partitions gets no session.
func (c *Cache) create(req Request, results []Result, nowMs int64) int32 {
	if c.cfg.MaxSlots <= 0 || len(req.Partitions) == 0 {
		return 0
	}
	s := &Session{privileged: req.Privileged, usesTopicIDs: req.UsesTopicIDs, createdMs: nowMs}
	s.mu.epoch = NextEpoch(InitialEpoch)
	s.mu.parts = make(map[Key]*entry, len(req.Partitions))
	for i, p := range req.Partitions {
		r := results[i]
		if e := s.mu.parts[p.Key]; e != nil {
			// Named twice: the last Params count, in the first place.
			e.Params = p.Params
			continue
		}
		e := &entry{Partition: p, hw: r.HighWatermark, lso: r.LastStableOffset, logStart: r.LogStartOffset}
		if r.Error {
			e.hw = -1
		}
		s.mu.parts[p.Key] = e
		s.pushLocked(e)
	}
	size := len(s.mu.parts)
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.mu.sessions) >= c.cfg.MaxSlots && !c.tryEvictLocked(req.Privileged, size, nowMs) {
		return 0
	}
	for {
		id := c.cfg.NewID()
		if id > 0 && c.mu.sessions[id] == nil {
			s.id = id
			break
		}
	}
	c.mu.sessions[s.id] = s
	c.touchLocked(s, size, nowMs)
	return s.id
}

// tryEvictLocked frees a slot for a new session, as the package doc says,
// and reports whether it did.
func (c *Cache) tryEvictLocked(privileged bool, size int, nowMs int64) bool {
	var lru *Session
	for _, s := range c.mu.sessions {
		if lru == nil || s.lastUsedMs < lru.lastUsedMs || s.lastUsedMs == lru.lastUsedMs && s.id < lru.id {
			lru = s
		}
	}
	if lru == nil {
		return false
	}
	if nowMs-lru.lastUsedMs > c.cfg.EvictionMs {
		c.removeLocked(lru)
		c.mu.evictions++
		return true
	}
	var victim *Session
	for _, s := range c.mu.sessions {
		old := nowMs-s.createdMs > c.cfg.EvictionMs
		if !old && !(privileged && !s.privileged) {
			continue
		}
		if victim == nil || worthLess(s.privileged, s.size, s.id, victim.privileged, victim.size, victim.id) {
			victim = s
		}
	}
	// The new session (id 0) is worth less than an equal one.
	if victim == nil || worthLess(privileged, size, 0, victim.privileged, victim.size, victim.id) {
		return false
	}
	c.removeLocked(victim)
	c.mu.evictions++
	return true
}

// worthLess orders sessions by (privileged, size, id), Kafka's EvictableKey.
func worthLess(ap bool, as int, aid int32, bp bool, bs int, bid int32) bool {
	if ap != bp {
		return !ap
	}
	if as != bs {
		return as < bs
	}
	return aid < bid
}

func (c *Cache) touchLocked(s *Session, size int, nowMs int64) {
	c.mu.partitions += int64(size - s.size)
	s.size = size
	s.lastUsedMs = nowMs
}

func (c *Cache) removeLocked(s *Session) {
	if c.mu.sessions[s.id] != s {
		return
	}
	delete(c.mu.sessions, s.id)
	c.mu.partitions -= int64(s.size)
}

// Stats returns the cache's gauges and counters.
func (c *Cache) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return Stats{Sessions: len(c.mu.sessions), Partitions: c.mu.partitions, Evictions: c.mu.evictions}
}
