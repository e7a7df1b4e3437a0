package broker

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/cluster"
	"samsa/internal/config"
	"samsa/internal/quota"
	"samsa/internal/server"
)

// Client quotas (KIP-13, KIP-55, KIP-124, KIP-219, KIP-546), as Kafka's
// KafkaApis applies them:
//
//   - Produce records its request size against producer_byte_rate, also
//     with acks=0, whose connection is muted without a response.
//   - A consumer Fetch records its response size against
//     consumer_byte_rate (fetch.go: fetchQuota). A follower's fetch is
//     exempt. A consumer fetch reads at most what the quota allows in a
//     window, quota x (quota.window.num - 1) x quota.window.size.seconds,
//     and a throttled fetch takes back what it recorded and answers with no
//     data, so the client fetches it again after the throttle. Unlike
//     Kafka, a first batch larger than that cap (which a fetch returns
//     whole) goes out with its throttle rather than being withheld for
//     ever.
//   - Every other request records its handler time against
//     request_percentage (quota.RequestPercentage): the time Handle runs on
//     the connection's read goroutine. Work done in Reply.Wait (waiting
//     for acks=all, a long poll, the group APIs run in order) is not
//     counted; a Fetch counts the time its reads take. Exempt, as in
//     Kafka: the inter-broker requests (a follower's Fetch and
//     OffsetForLeaderEpoch, which need CLUSTER_ACTION), Produce with
//     acks=0, and, unlike Kafka, ApiVersions (SASL is answered by the
//     server before Handle).
//   - CreateTopics, CreatePartitions and DeleteTopics take one
//     controller_mutation_rate token per partition created or deleted
//     (KIP-599, mutationQuota). From CreateTopics v6, CreatePartitions v3
//     and DeleteTopics v5 on, a topic asked for once the tokens are spent
//     fails with THROTTLING_QUOTA_EXCEEDED (strict); older versions always
//     go through and are only throttled. The handler puts the throttle in
//     throttle_time_ms; Handle mutes the connection for it.
//
// The throttle time of a request is the largest of its quotas'. It goes in
// the response's throttle_time_ms, and the server mutes the connection for
// it (server.Reply.Throttle). A response at a version older than KIP-219
// (where kmsg's ThrottleResponse reports the throttle is not applied after
// the response) is held back for the throttle time instead, as Kafka does
// for such clients.
//
// The quota configuration lives in etcd (cluster.QuotaSet); the broker turns
// the set of the image it reads into a quota.Image the first time a request
// sees a new set (a new pointer), as it does for ACLs, so a change applies
// as soon as the broker's etcd watch delivers it. The reconciler does the
// same on every image change, so that the connection limiter learns new
// connection_creation_rate values without waiting for a request. With no
// quota configured a request costs two atomic loads and a comparison.

// quotaState holds the quota image and the rate trackers.
type quotaState struct {
	// mu serialises image builds; built is read without it.
	mu    sync.Mutex
	built atomic.Pointer[builtQuotas]

	window    quota.WindowConfig
	bytes     *quota.Tracker         // producer_byte_rate and consumer_byte_rate
	requests  *quota.Tracker         // request_percentage
	mutations *quota.MutationTracker // controller_mutation_rate
	conns     *quota.ConnLimiter     // nil without connection limits
}

// builtQuotas is a quota.Image over the quotas of src.
type builtQuotas struct {
	src *cluster.QuotaSet
	img *quota.Image
}

// quotaWindow is the rate window of cfg's quota.window.num and
// quota.window.size.seconds.
func quotaWindow(cfg *config.Broker) quota.WindowConfig {
	return quota.WindowConfig{Samples: int(cfg.QuotaWindowNum), Size: time.Duration(cfg.QuotaWindowSizeSeconds) * time.Second}
}

func (s *quotaState) init(cfg *config.Broker, conns *quota.ConnLimiter) {
	s.window = quotaWindow(cfg)
	s.bytes = quota.NewTracker(quota.TrackerConfig{Window: s.window})
	s.requests = quota.NewTracker(quota.RequestTrackerConfig(s.window))
	s.mutations = quota.NewMutationTracker(s.window, 0)
	s.conns = conns
}

// expire drops rate sensors no client has used for an hour.
func (s *quotaState) expire(now time.Time) {
	s.bytes.Expire(now)
	s.requests.Expire(now)
	s.mutations.Expire(now)
	if s.conns != nil {
		s.conns.Expire(now)
	}
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
	if s.conns != nil {
		s.conns.SetImage(img)
	}
	s.built.Store(&builtQuotas{src: set, img: img})
	return img
}

// quotaUser is the user name quotas match for a principal: the name of a
// User principal ("User:alice" is alice), else the whole principal.
func quotaUser(principal string) string {
	if name, ok := strings.CutPrefix(principal, "User:"); ok {
		return name
	}
	return principal
}

func quotaClientID(id *string) string {
	if id == nil {
		return ""
	}
	return *id
}

// requestQuotaExempt reports whether req is not recorded against
// request_percentage here: the exempt requests, and Fetch, which records
// its own.
func requestQuotaExempt(req *server.Request) bool {
	switch r := req.Body.(type) {
	case *kmsg.ApiVersionsRequest, *kmsg.FetchRequest:
		return true
	case *kmsg.OffsetForLeaderEpochRequest:
		return r.ReplicaID >= 0
	case *kmsg.ProduceRequest:
		return r.Acks == 0
	}
	return false
}

// recordQuotas records a handled request against producer_byte_rate and
// request_percentage (handlerTime, when timed) and returns its throttle
// time.
func (b *Broker) recordQuotas(img *quota.Image, c *server.Conn, req *server.Request, timed bool, handlerTime time.Duration) time.Duration {
	isProduce := req.APIKey == 0 && img.Has(quota.KeyProducerByteRate)
	if !isProduce && !timed {
		return 0
	}
	user, clientID := quotaUser(c.Principal), quotaClientID(req.ClientID)
	now := b.now()
	var throttle time.Duration
	if isProduce {
		if res := img.Resolve(user, clientID, quota.KeyProducerByteRate); res.Found {
			throttle = b.quotas.bytes.Record(now, res.Sensor, res.Quota, float64(req.Size))
		}
	}
	if timed {
		if res := img.Resolve(user, clientID, quota.KeyRequestPercentage); res.Found {
			throttle = max(throttle, b.quotas.requests.Record(now, res.Sensor, res.Quota, quota.RequestPercentage(handlerTime)))
		}
	}
	return throttle
}

// throttleReply puts d in the throttle_time_ms of r's response (of the
// response Wait returns, for a deferred reply) and has the server mute the
// connection for it. A response at a version before KIP-219 is held back
// for d instead of going out at once.
func throttleReply(r server.Reply, version int16, d time.Duration) server.Reply {
	if d <= 0 {
		return r
	}
	switch {
	case r.Wait != nil:
		inner := r.Wait
		return server.Reply{Wait: func(ctx context.Context) server.Reply {
			return throttleReply(inner(ctx), version, d)
		}}
	case r.Msg != nil:
		r.Msg.SetVersion(version)
		after := true
		if tr, ok := r.Msg.(kmsg.ThrottleResponse); ok {
			var ms int32
			ms, after = tr.Throttle()
			if st, ok := r.Msg.(kmsg.SetThrottleResponse); ok {
				st.SetThrottle(max(ms, throttleMillis(d)))
			}
		}
		if !after {
			return delayReply(r, d)
		}
	case r.Body != nil:
		// NB: a laid-out body carries its own throttle_time_ms (the
		// share fetch's; the Fetch's is set by its own quota path).
		if st, ok := r.Body.(throttleSetter); ok {
			st.SetThrottle(throttleMillis(d))
		}
	}
	r.Throttle = d
	return r
}

// throttleSetter is a laid-out response body whose throttle_time_ms can be
// set after it is encoded; its version is past KIP-219.
type throttleSetter interface{ SetThrottle(ms int32) }

// delayReply answers r after d: Kafka delays the responses of clients that
// predate KIP-219, which do not back off on their own. The connection is
// muted meanwhile.
func delayReply(r server.Reply, d time.Duration) server.Reply {
	return server.Reply{Throttle: d, Wait: func(ctx context.Context) server.Reply {
		start := time.Now()
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
		}
		// Throttling is not slowness (server/slow.go).
		r.Parked += time.Since(start)
		return r
	}}
}

// throttleMillis converts a throttle time to throttle_time_ms.
func throttleMillis(d time.Duration) int32 {
	ms := d.Milliseconds()
	if ms > math.MaxInt32 {
		return math.MaxInt32
	}
	return int32(ms)
}

// mutationQuota applies controller_mutation_rate to one CreateTopics,
// CreatePartitions or DeleteTopics request (KIP-599). The zero value
// applies nothing.
type mutationQuota struct {
	b        *Broker
	res      quota.Resolution // Found: the quota applies
	strict   bool
	throttle time.Duration
}

func (b *Broker) newMutationQuota(c *server.Conn, clientID *string, key, version int16) *mutationQuota {
	img := b.quotaImage()
	if !img.Has(quota.KeyControllerMutationRate) {
		return &mutationQuota{}
	}
	res := img.Resolve(quotaUser(c.Principal), quotaClientID(clientID), quota.KeyControllerMutationRate)
	return &mutationQuota{b: b, res: res, strict: quota.StrictMutationQuota(key, version)}
}

// record takes n partitions' worth of tokens for one topic. In strict mode
// it fails with quota.ErrThrottlingQuotaExceeded, taking nothing, once the
// tokens are spent; call it after the topic's other checks, and create or
// delete the topic only if it succeeds.
func (m *mutationQuota) record(n int) error {
	if !m.res.Found {
		return nil
	}
	now := m.b.now()
	if !m.strict {
		m.throttle = max(m.throttle, m.b.quotas.mutations.RecordPermissive(now, m.res.Sensor, m.res.Quota, float64(n)))
		return nil
	}
	th, err := m.b.quotas.mutations.RecordStrict(now, m.res.Sensor, m.res.Quota, float64(n))
	if err != nil {
		m.throttle = max(m.throttle, th)
		return fmt.Errorf("%w: %s of %s spent", err, quota.KeyControllerMutationRate, m.res.Entity)
	}
	return nil
}

// throttleMillis is the request's throttle_time_ms: in strict mode the time
// until a refused topic could go through, else the time until the bucket
// the request drew below zero is back at zero.
func (m *mutationQuota) throttleMillis() int32 { return throttleMillis(m.throttle) }
