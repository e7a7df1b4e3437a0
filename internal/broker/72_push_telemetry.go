package broker

// PushTelemetry: v0 (KIP-714), decoded and answered but not advertised in
// ApiVersions, as GetTelemetrySubscriptions (71_get_telemetry_subscriptions.go
// gives the reason).
//
// A push is checked as Kafka's ClientMetricsManager.validatePushRequest
// checks it, as far as that needs no per-client state, then accepted and
// its metrics dropped: there is no receiver to export them to.
//
//   - A zero or one (reserved) ClientInstanceID: INVALID_REQUEST.
//   - A SubscriptionID other than the one GetTelemetrySubscriptions hands
//     that client instance: UNKNOWN_SUBSCRIPTION_ID, so the client asks
//     for its subscription again.
//   - A CompressionType other than none, gzip, snappy, lz4 or zstd:
//     UNSUPPORTED_COMPRESSION_TYPE.
//   - Metrics longer than telemetry.max.bytes (1 MiB):
//     TELEMETRY_TOO_LARGE.
//
// Kafka's checks that need the client instance it caches are not made: a
// push before the push interval has passed (THROTTLING_QUOTA_EXCEEDED)
// and a push after a terminating one (INVALID_REQUEST).
//
// No ACL is needed, as in Kafka's KafkaApis.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *Broker) handlePushTelemetry(req *kmsg.PushTelemetryRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.PushTelemetryResponse)
	switch {
	case reservedUUID(req.ClientInstanceID):
		resp.ErrorCode = kerr.InvalidRequest.Code
	case req.SubscriptionID != telemetrySubscriptionID(req.ClientInstanceID):
		resp.ErrorCode = kerr.UnknownSubscriptionID.Code
	case req.CompressionType < 0 || req.CompressionType > 4:
		resp.ErrorCode = kerr.UnsupportedCompressionType.Code
	case len(req.Metrics) > telemetryMaxBytes:
		resp.ErrorCode = kerr.TelemetryTooLarge.Code
	}
	return resp
}
