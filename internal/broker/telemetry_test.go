package broker_test

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/testutil"
)

// TestTelemetryAPIsAnsweredButNotAdvertised: ApiVersions leaves out
// GetTelemetrySubscriptions and PushTelemetry, as a Kafka broker without a
// client metrics receiver does, so clients push nothing; sent anyway, they
// hand out a subscription with no metrics and accept a push that carries
// its subscription id.
//
// Reference: KIP-714; Kafka ApiVersionsResponse.filterApis,
// ClientMetricsManager.processPushTelemetryRequest.
func TestTelemetryAPIsAnsweredButNotAdvertised(t *testing.T) {
	t.Parallel()
	b := testutil.StartBroker(t)
	versions := request[*kmsg.ApiVersionsResponse](t, b.Client(), kmsg.NewPtrApiVersionsRequest())
	for _, k := range versions.ApiKeys {
		if k.ApiKey == 71 || k.ApiKey == 72 {
			t.Fatalf("ApiVersions advertises key %d", k.ApiKey)
		}
	}

	get := func(id [16]byte) *kmsg.GetTelemetrySubscriptionsResponse {
		t.Helper()
		req := kmsg.NewPtrGetTelemetrySubscriptionsRequest()
		req.ClientInstanceID = id
		resp := rawRequest(t, b.Addr(), req).(*kmsg.GetTelemetrySubscriptionsResponse)
		if resp.ErrorCode != 0 {
			t.Fatalf("GetTelemetrySubscriptions: %v", kerr.ErrorForCode(resp.ErrorCode))
		}
		return resp
	}
	sub := get([16]byte{})
	if sub.ClientInstanceID == ([16]byte{}) {
		t.Fatal("no client instance id handed out for the zero id")
	}
	if len(sub.RequestedMetrics) != 0 || sub.PushIntervalMillis != 300000 || sub.TelemetryMaxBytes != 1<<20 || len(sub.AcceptedCompressionTypes) == 0 {
		t.Fatalf("subscription: metrics %v, push interval %d, max bytes %d, codecs %v; want no metrics, 300000, 1048576, some codecs",
			sub.RequestedMetrics, sub.PushIntervalMillis, sub.TelemetryMaxBytes, sub.AcceptedCompressionTypes)
	}
	if other := get([16]byte{}); other.ClientInstanceID == sub.ClientInstanceID {
		t.Fatal("two new clients got the same instance id")
	}
	again := get(sub.ClientInstanceID)
	if again.ClientInstanceID != sub.ClientInstanceID || again.SubscriptionID != sub.SubscriptionID {
		t.Fatalf("asked again: instance %x subscription %d, want %x %d", again.ClientInstanceID, again.SubscriptionID, sub.ClientInstanceID, sub.SubscriptionID)
	}

	push := func(id [16]byte, subID int32, codec int8, metrics []byte) int16 {
		t.Helper()
		req := kmsg.NewPtrPushTelemetryRequest()
		req.ClientInstanceID, req.SubscriptionID, req.CompressionType, req.Metrics = id, subID, codec, metrics
		return rawRequest(t, b.Addr(), req).(*kmsg.PushTelemetryResponse).ErrorCode
	}
	for _, c := range []struct {
		name    string
		id      [16]byte
		subID   int32
		codec   int8
		metrics []byte
		want    *kerr.Error
	}{
		{"accepted", sub.ClientInstanceID, sub.SubscriptionID, 0, []byte("metrics"), nil},
		{"empty, zstd", sub.ClientInstanceID, sub.SubscriptionID, 4, nil, nil},
		{"zero instance id", [16]byte{}, sub.SubscriptionID, 0, nil, kerr.InvalidRequest},
		{"stale subscription", sub.ClientInstanceID, sub.SubscriptionID + 1, 0, nil, kerr.UnknownSubscriptionID},
		{"unknown codec", sub.ClientInstanceID, sub.SubscriptionID, 9, nil, kerr.UnsupportedCompressionType},
		{"too large", sub.ClientInstanceID, sub.SubscriptionID, 0, make([]byte, 1<<20+1), kerr.TelemetryTooLarge},
	} {
		t.Run(c.name, func(t *testing.T) {
			want := int16(0)
			if c.want != nil {
				want = c.want.Code
			}
			if got := push(c.id, c.subID, c.codec, c.metrics); got != want {
				t.Fatalf("PushTelemetry: %v, want %v", kerr.ErrorForCode(got), kerr.ErrorForCode(want))
			}
		})
	}
}
