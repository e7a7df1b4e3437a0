package broker

// GetTelemetrySubscriptions: v0 (KIP-714), decoded and answered but not
// advertised in ApiVersions.
//
// samsa has no client metrics receiver, so it answers as a Kafka broker
// without one (no metric.reporters entry implementing ClientTelemetry)
// does. Such a broker leaves GetTelemetrySubscriptions and PushTelemetry
// out of its ApiVersions answer (Reference: Kafka
// DefaultApiVersionManager.apiVersionResponse and
// ApiVersionsResponse.filterApis, while
// ClientMetricsManager.isTelemetryReceiverConfigured is false), and a
// client that finds no key 71 there sends no telemetry (KIP-714: the
// broker does not support metrics), which is what a Java client with
// enable.metrics.push=true needs to stop asking. Kafka still answers the
// keys when a client sends them regardless, so samsa does too (unadvertised in
// versions.go), with the subscription a broker without client-metrics
// resources hands out:
//
//   - ClientInstanceID: the request's, or a new random one when it is
//     the zero UUID.
//   - SubscriptionID: derived from the client instance id (CRC-32C), so
//     every broker hands the same client the same id without keeping
//     state; PushTelemetry checks it the same way.
//   - RequestedMetrics: none; PushIntervalMillis 300000 (Kafka's
//     ClientMetricsConfigs.DEFAULT_INTERVAL_MS); TelemetryMaxBytes
//     1048576 (Kafka's telemetry.max.bytes default); DeltaTemporality
//     true; AcceptedCompressionTypes zstd, lz4, gzip, snappy, in Kafka's
//     order.
//
// Kafka keeps a cache of client instances and answers a second request
// within the push interval THROTTLING_QUOTA_EXCEEDED; samsa keeps no
// instances, so it answers every request alike. With no metrics
// requested a client has nothing to push anyway.
//
// No ACL is needed, as in Kafka's KafkaApis.

import (
	"crypto/rand"
	"encoding/binary"
	"hash/crc32"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Telemetry limits of a broker without client-metrics resources, at
// Kafka's defaults.
const (
	telemetryPushIntervalMillis = 300000  // ClientMetricsConfigs.DEFAULT_INTERVAL_MS
	telemetryMaxBytes           = 1 << 20 // telemetry.max.bytes
)

// telemetryCompressionTypes are the codecs a pushed metrics payload may
// use, in Kafka's order of preference: zstd, lz4, gzip, snappy.
var telemetryCompressionTypes = []int8{4, 3, 1, 2}

func (b *Broker) handleGetTelemetrySubscriptions(req *kmsg.GetTelemetrySubscriptionsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.GetTelemetrySubscriptionsResponse)
	id := req.ClientInstanceID
	if id == ([16]byte{}) {
		id = newClientInstanceID()
	}
	resp.ClientInstanceID = id
	resp.SubscriptionID = telemetrySubscriptionID(id)
	resp.AcceptedCompressionTypes = telemetryCompressionTypes
	resp.PushIntervalMillis = telemetryPushIntervalMillis
	resp.TelemetryMaxBytes = telemetryMaxBytes
	resp.DeltaTemporality = true
	resp.RequestedMetrics = []string{}
	return resp
}

// newClientInstanceID returns a random UUID (version 4) that is not one
// of Kafka's reserved ids (zero, one).
func newClientInstanceID() [16]byte {
	for {
		var id [16]byte
		rand.Read(id[:]) // never fails (crypto/rand)
		id[6] = id[6]&0x0f | 0x40
		id[8] = id[8]&0x3f | 0x80
		if !reservedUUID(id) {
			return id
		}
	}
}

// reservedUUID reports whether id is Kafka's zero or one UUID
// (Uuid.RESERVED), which name no client instance.
func reservedUUID(id [16]byte) bool {
	hi, lo := binary.BigEndian.Uint64(id[:8]), binary.BigEndian.Uint64(id[8:])
	return hi == 0 && lo <= 1
}

// telemetrySubscriptionID is the subscription id of client instance id:
// the CRC-32C of the id and of the (empty) subscription's push interval.
// It depends on nothing else, so a push to any broker can be checked.
func telemetrySubscriptionID(id [16]byte) int32 {
	h := crc32.New(crc32.MakeTable(crc32.Castagnoli))
	h.Write(id[:])
	var iv [4]byte
	binary.BigEndian.PutUint32(iv[:], telemetryPushIntervalMillis)
	h.Write(iv[:])
	return int32(h.Sum32())
}
