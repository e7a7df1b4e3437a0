package config

import (
	"errors"
	"strings"
	"testing"
)

// Reference: Kafka GroupConfig.validate (bounds from GroupCoordinatorConfig
// and ShareGroupConfig, session timeout above heartbeat interval).
func TestValidateGroup(t *testing.T) {
	b := Default()
	for _, tc := range []struct {
		name    string
		configs map[string]string
		want    error
		mention string
	}{
		{"empty", nil, nil, ""},
		{"all good", map[string]string{
			"consumer.heartbeat.interval.ms": "6000", "consumer.session.timeout.ms": "50000",
			"share.heartbeat.interval.ms": "15000", "share.session.timeout.ms": "60000",
			"share.record.lock.duration.ms": "15000", "share.delivery.count.limit": "10",
			"share.auto.offset.reset": "earliest", "share.isolation.level": "read_committed",
		}, nil, ""},
		{"unknown", map[string]string{"consumer.max.poll.records": "1"}, ErrUnknownConfig, "consumer.max.poll.records"},
		{"broker name is not a group name", map[string]string{"group.consumer.session.timeout.ms": "50000"}, ErrUnknownConfig, "group.consumer.session.timeout.ms"},
		{"streams configs are not served", map[string]string{"streams.session.timeout.ms": "50000"}, ErrUnknownConfig, "streams.session.timeout.ms"},
		{"consumer heartbeat below min", map[string]string{"consumer.heartbeat.interval.ms": "4999"}, ErrInvalidConfig, "group.consumer.min.heartbeat.interval.ms"},
		{"consumer heartbeat above max", map[string]string{"consumer.heartbeat.interval.ms": "15001"}, ErrInvalidConfig, "group.consumer.max.heartbeat.interval.ms"},
		{"consumer session below min", map[string]string{"consumer.session.timeout.ms": "44999"}, ErrInvalidConfig, "group.consumer.min.session.timeout.ms"},
		{"consumer session above max", map[string]string{"consumer.session.timeout.ms": "60001"}, ErrInvalidConfig, "group.consumer.max.session.timeout.ms"},
		{"share session below min", map[string]string{"share.session.timeout.ms": "1000"}, ErrInvalidConfig, "group.share.min.session.timeout.ms"},
		{"share heartbeat above max", map[string]string{"share.heartbeat.interval.ms": "20000"}, ErrInvalidConfig, "group.share.max.heartbeat.interval.ms"},
		{"lock duration below min", map[string]string{"share.record.lock.duration.ms": "14999"}, ErrInvalidConfig, "group.share.min.record.lock.duration.ms"},
		{"lock duration above max", map[string]string{"share.record.lock.duration.ms": "60001"}, ErrInvalidConfig, "group.share.max.record.lock.duration.ms"},
		{"lock duration below its own floor", map[string]string{"share.record.lock.duration.ms": "999"}, ErrInvalidConfig, "share.record.lock.duration.ms"},
		{"delivery count above max", map[string]string{"share.delivery.count.limit": "11"}, ErrInvalidConfig, "group.share.max.delivery.count.limit"},
		{"delivery count below its floor", map[string]string{"share.delivery.count.limit": "1"}, ErrInvalidConfig, "share.delivery.count.limit"},
		{"renew not a boolean", map[string]string{"share.renew.acknowledge.enable": "1"}, ErrInvalidConfig, "share.renew.acknowledge.enable"},
		{"record locks above max", map[string]string{"share.partition.max.record.locks": "4001"}, ErrInvalidConfig, "group.share.max.partition.max.record.locks"},
		{"record locks below its floor", map[string]string{"share.partition.max.record.locks": "99"}, ErrInvalidConfig, "share.partition.max.record.locks"},
		{"not a number", map[string]string{"consumer.session.timeout.ms": "45s"}, ErrInvalidConfig, "consumer.session.timeout.ms"},
		{"not an int32", map[string]string{"consumer.session.timeout.ms": "4294967296"}, ErrInvalidConfig, "consumer.session.timeout.ms"},
		{"reset by_duration", map[string]string{"share.auto.offset.reset": "by_duration:PT1H"}, ErrInvalidConfig, "share.auto.offset.reset"},
		{"reset case", map[string]string{"share.auto.offset.reset": "EARLIEST"}, ErrInvalidConfig, "share.auto.offset.reset"},
		{"isolation level", map[string]string{"share.isolation.level": "committed"}, ErrInvalidConfig, "share.isolation.level"},
		{"heartbeats at max, sessions at min", map[string]string{
			"consumer.heartbeat.interval.ms": "15000", "consumer.session.timeout.ms": "45000",
			"share.session.timeout.ms": "45000", "share.heartbeat.interval.ms": "15000",
		}, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := b.ValidateGroup(tc.configs)
			if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Fatalf("ValidateGroup = %v, want %v", err, tc.want)
			}
			if err != nil && !strings.Contains(err.Error(), tc.mention) {
				t.Errorf("error %q does not mention %q", err, tc.mention)
			}
		})
	}
}

// A session timeout that is not above the heartbeat interval, the other
// taken from the broker, is refused.
func TestValidateGroupSessionAboveHeartbeat(t *testing.T) {
	b := Default()
	b.GroupConsumerMinSessionTimeoutMs = 1000
	b.GroupShareMinSessionTimeoutMs = 1000
	for _, tc := range []struct {
		name    string
		configs map[string]string
		mention string
	}{
		{"consumer", map[string]string{"consumer.session.timeout.ms": "5000"}, "consumer.session.timeout.ms (5000) must be greater than consumer.heartbeat.interval.ms (5000)"},
		{"share", map[string]string{"share.session.timeout.ms": "4000"}, "share.session.timeout.ms (4000) must be greater than share.heartbeat.interval.ms (5000)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := b.ValidateGroup(tc.configs)
			if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tc.mention) {
				t.Fatalf("ValidateGroup = %v, want %q", err, tc.mention)
			}
		})
	}
}

func TestResolveGroupFallsBackAndClamps(t *testing.T) {
	b := Default()
	b.ShareAutoOffsetReset = "earliest"
	g := b.ResolveGroup(nil)
	if g.ShareAutoOffsetReset != "earliest" || g.ConsumerHeartbeatIntervalMs != 5000 || g.ShareRecordLockDurationMs != 30000 {
		t.Fatalf("defaults: %+v", g)
	}
	g = b.ResolveGroup(map[string]string{
		"share.auto.offset.reset":        "latest",
		"share.record.lock.duration.ms":  "120000", // stored before the bound narrowed
		"consumer.session.timeout.ms":    "1000",
		"share.isolation.level":          "bogus",
		"share.renew.acknowledge.enable": "FALSE",
	})
	want := b.ResolveGroup(nil)
	want.ShareAutoOffsetReset = "latest"
	want.ShareRecordLockDurationMs = 60000
	want.ConsumerSessionTimeoutMs = 45000
	want.ShareRenewAcknowledgeEnable = false
	if g != want {
		t.Fatalf("ResolveGroup = %+v, want %+v", g, want)
	}
	if len(b.GroupDefaults()) != len(GroupDefs()) {
		t.Fatalf("GroupDefaults has %d configs, GroupDefs %d", len(b.GroupDefaults()), len(GroupDefs()))
	}
	for _, d := range GroupDefs() {
		fb, _, _, ok := GroupFallback(d.Name)
		if ok && fb == "" {
			// Its own default: the resolved value is it.
			if got := b.GroupDefaults()[d.Name]; got != d.Default {
				t.Errorf("%s resolves to %q without an override, want its default %q", d.Name, got, d.Default)
			}
			continue
		}
		if bd, found := LookupBroker(fb); !ok || !found || bd.Default != d.Default {
			t.Errorf("%s falls back to %q (known %v), whose default differs", d.Name, fb, found)
		}
	}
}

// BenchmarkResolveGroup is the cost of the lookup every share fetch,
// share-partition load and group heartbeat makes.
func BenchmarkResolveGroup(b *testing.B) {
	cfg := Default()
	for _, tc := range []struct {
		name      string
		overrides map[string]string
	}{
		{"overrides=0", nil},
		{"overrides=3", map[string]string{
			"share.auto.offset.reset": "earliest", "share.record.lock.duration.ms": "15000", "consumer.heartbeat.interval.ms": "6000",
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			var g Group
			for i := 0; i < b.N; i++ {
				g = cfg.ResolveGroup(tc.overrides)
			}
			if g.ShareRecordLockDurationMs == 0 {
				b.Fatal("no lock duration")
			}
		})
	}
}
