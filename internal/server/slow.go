package server

import (
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The slow request log (log.slow.request.ms).
//
// A request's broker time is the time its Handle call took plus the time
// its Reply's Wait calls took, less what those Waits report as Parked.
// That leaves out, on purpose:
//
//   - waiting by design: a Fetch parked up to its max wait for MinBytes, a
//     JoinGroup or SyncGroup waiting for the other members of the group.
//     These are as long as the client asked for, and say nothing about the
//     broker;
//   - queueing behind earlier responses of the same connection (a Produce
//     sent after a long-polling Fetch on one connection waits for it);
//   - quota throttling, the failed authentication delay, and the socket
//     write to the client.
//
// It keeps what an operator wants to see: decoding nothing aside, the
// handler's own work, log appends and the fsync of acks=all, the wait
// for followers to replicate an acks=all Produce, etcd writes.

// slowTiming is the broker time of one request so far, and who sent it.
type slowTiming struct {
	on        bool
	took      time.Duration
	principal string
}

// slowStart returns the time to measure from, or the zero time when the
// slow request log is off (so that it costs no clock read).
func (s *Server) slowStart() time.Time {
	if s.cfg.SlowRequest <= 0 {
		return time.Time{}
	}
	return time.Now()
}

// slowHandled starts the timing of a request whose Handle began at start.
// It runs on the read goroutine, so it may read the principal.
func (c *conn) slowHandled(start time.Time) slowTiming {
	if start.IsZero() || c.s.cfg.SlowRequest <= 0 {
		return slowTiming{}
	}
	return slowTiming{on: true, took: time.Since(start), principal: c.pub.Principal}
}

// waited adds a Wait call that began at start and was parked for parked.
func (t *slowTiming) waited(start time.Time, parked time.Duration) {
	if !t.on || start.IsZero() {
		return
	}
	t.took += max(time.Since(start)-parked, 0)
}

// logIfSlow logs p's request at WARN if its broker time is above
// log.slow.request.ms.
func (c *conn) logIfSlow(p *pending) {
	if !p.slow.on || p.slow.took <= c.s.cfg.SlowRequest {
		return
	}
	req := p.req
	clientID := ""
	if req.ClientID != nil {
		clientID = *req.ClientID
	}
	attrs := []slog.Attr{
		slog.String("api", kmsg.NameForKey(req.APIKey)),
		slog.Int("api_key", int(req.APIKey)),
		slog.Int("api_version", int(req.APIVersion)),
		slog.Int64("took_ms", p.slow.took.Milliseconds()),
		slog.Int64("threshold_ms", c.s.cfg.SlowRequest.Milliseconds()),
		slog.String("client_id", clientID),
		slog.String("listener", c.lc.Name),
		slog.String("principal", p.slow.principal),
		slog.String("remote", c.pub.Remote.String()),
		slog.Int("correlation_id", int(req.CorrelationID)),
	}
	if topics, partitions := requestPartitions(req.Body); partitions > 0 {
		attrs = append(attrs, slog.Any("topics", topics), slog.Int("partitions", partitions))
	}
	c.s.log.LogAttrs(c.ctx, slog.LevelWarn, "server: slow request", attrs...)
}

// maxLoggedTopics bounds the topic names a slow request line lists.
const maxLoggedTopics = 10

// requestPartitions returns the topics (at most maxLoggedTopics) and the
// number of partitions of the requests that name partitions and are
// cheap to walk; 0 partitions for the others.
func requestPartitions(body kmsg.Request) (topics []string, partitions int) {
	add := func(topic string, n int) {
		if topic != "" && len(topics) < maxLoggedTopics {
			topics = append(topics, topic)
		}
		partitions += n
	}
	switch r := body.(type) {
	case *kmsg.ProduceRequest:
		for _, t := range r.Topics {
			add(t.Topic, len(t.Partitions))
		}
	case *kmsg.FetchRequest:
		for _, t := range r.Topics {
			add(t.Topic, len(t.Partitions))
		}
	case *kmsg.ListOffsetsRequest:
		for _, t := range r.Topics {
			add(t.Topic, len(t.Partitions))
		}
	case *kmsg.OffsetCommitRequest:
		for _, t := range r.Topics {
			add(t.Topic, len(t.Partitions))
		}
	case *kmsg.DeleteRecordsRequest:
		for _, t := range r.Topics {
			add(t.Topic, len(t.Partitions))
		}
	}
	return topics, partitions
}
