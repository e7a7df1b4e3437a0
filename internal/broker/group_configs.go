package broker

import (
	"time"

	"samsa/internal/config"
	"samsa/internal/share"
)

// groupConfig returns the effective group configs of group id (the GROUP
// config resource): its overrides in the current metadata image, else
// the broker's configs. Every broker watches the overrides' keys, so a
// change reaches the coordinators and share-partition leaders without a
// restart: each lookup reads the latest image.
//
// What reads it, and when a change takes effect:
//
//   - consumer.session.timeout.ms, consumer.heartbeat.interval.ms: the
//     consumer group's next heartbeat (group.Config.GroupTimeouts).
//   - share.session.timeout.ms, share.heartbeat.interval.ms: the share
//     group's next heartbeat.
//   - share.auto.offset.reset: the next initialization of a
//     share-partition without state.
//   - share.isolation.level: the next share fetch.
//   - share.record.lock.duration.ms, share.delivery.count.limit: the next
//     acquisition, release or lock expiry.
func (b *Broker) groupConfig(id string) config.Group {
	return b.cfg.ResolveGroup(b.cluster.Image().GroupConfigs[id])
}

// consumerGroupTimeouts is group.Config.GroupTimeouts: a consumer group's
// session timeout and heartbeat interval.
func (b *Broker) consumerGroupTimeouts(id string) (session, heartbeat time.Duration) {
	gc := b.groupConfig(id)
	return time.Duration(gc.ConsumerSessionTimeoutMs) * time.Millisecond,
		time.Duration(gc.ConsumerHeartbeatIntervalMs) * time.Millisecond
}

// shareGroupConfig is the share.GroupConfig of share group id.
func (b *Broker) shareGroupConfig(id string) share.GroupConfig {
	gc := b.groupConfig(id)
	return share.GroupConfig{
		HeartbeatInterval: time.Duration(gc.ShareHeartbeatIntervalMs) * time.Millisecond,
		SessionTimeout:    time.Duration(gc.ShareSessionTimeoutMs) * time.Millisecond,
		MaxSize:           int(b.cfg.GroupShareMaxSize),
	}
}

func derefString(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
