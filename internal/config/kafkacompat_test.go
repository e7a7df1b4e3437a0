package config

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// A KRaft-era and a ZooKeeper-era server.properties, trimmed to what
// matters here.
const (
	kraftProps = `process.roles=broker,controller
node.id=1
controller.quorum.voters=1@localhost:9093
listeners=PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093
advertised.listeners=PLAINTEXT://127.0.0.1:9092
controller.listener.names=CONTROLLER
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
log.dirs=/tmp/kraft-combined-logs
metadata.log.dir=/tmp/kraft-metadata
`
	zkProps = `broker.id=0
listeners=PLAINTEXT://127.0.0.1:9092
log.dirs=/tmp/kafka-logs
zookeeper.connect=localhost:2181
zookeeper.connection.timeout.ms=18000
num.network.threads=3
log.cleaner.dedupe.buffer.size=134217728
group.initial.rebalance.delay.ms=0
`
)

func TestKRaftControllerListenerIsNotOpened(t *testing.T) {
	b, err := Load(writeProps(t, kraftProps), nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := []Listener{{Name: "PLAINTEXT", Host: "127.0.0.1", Port: 9092}}; !reflect.DeepEqual(b.Listeners, want) {
		t.Fatalf("listeners %v, want only %v", b.Listeners, want)
	}
	for _, l := range b.SecureListeners {
		if l.Name == "CONTROLLER" {
			t.Fatalf("CONTROLLER among the secured listeners: %+v", b.SecureListeners)
		}
	}
	joined := strings.Join(b.Warnings, "\n")
	if !strings.Contains(joined, "not opening CONTROLLER://127.0.0.1:9093") || !strings.Contains(joined, "metadata.log.dir") {
		t.Fatalf("warnings %q", b.Warnings)
	}

	// A file with controller listeners only has no broker listener.
	_, err = Load("", []string{"listeners=CONTROLLER://127.0.0.1:9093", "controller.listener.names=CONTROLLER"})
	if !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("controller listeners only: %v", err)
	}
}

func TestZooKeeperEraFileLoadsWithOneWarning(t *testing.T) {
	b, err := Load(writeProps(t, zkProps), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"ignored Kafka configs that have no meaning in samsa: log.cleaner.dedupe.buffer.size, zookeeper.connect, zookeeper.connection.timeout.ms"}
	if !reflect.DeepEqual(b.Warnings, want) {
		t.Fatalf("warnings %q, want %q", b.Warnings, want)
	}
	if _, set := b.Raw["zookeeper.connect"]; set {
		t.Fatal("an ignored config is among the values set")
	}
	if b.NodeID != 0 || b.LogDirs[0] != "/tmp/kafka-logs" {
		t.Fatalf("the configs samsa knows were not applied: node.id %d, log.dirs %v", b.NodeID, b.LogDirs)
	}
}

func TestKafkaConfigsThatWouldChangeBehaviourAreRefused(t *testing.T) {
	for _, tt := range []struct {
		set     string
		refused bool
	}{
		{"principal.builder.class=com.example.Builder", true},
		{"principal.builder.class=org.apache.kafka.common.security.authenticator.DefaultKafkaPrincipalBuilder", false},
		{"create.topic.policy.class.name=com.example.Policy", true},
		{"remote.log.storage.system.enable=true", true},
		{"remote.log.storage.system.enable=false", false},
		{"group.coordinator.rebalance.protocols=classic,consumer,share", true},
		{"group.coordinator.rebalance.protocols=classic,consumer", false},
		{"group.coordinator.rebalance.protocols=classic", false},
		{"sasl.kerberos.service.name=kafka", true},
	} {
		b, err := Load("", []string{tt.set})
		name, _, _ := strings.Cut(tt.set, "=")
		switch {
		case tt.refused && !errors.Is(err, ErrUnsupportedConfig):
			t.Errorf("%s: %v, want ErrUnsupportedConfig", tt.set, err)
		case tt.refused && !strings.Contains(err.Error(), name):
			t.Errorf("%s: %v does not name the config", tt.set, err)
		case !tt.refused && err != nil:
			t.Errorf("%s: %v, want accepted", tt.set, err)
		case !tt.refused && !strings.Contains(strings.Join(b.Warnings, ""), name):
			t.Errorf("%s: accepted without a warning naming it: %q", tt.set, b.Warnings)
		}
	}
}

func TestUnknownConfigSuggestsTheNameMeant(t *testing.T) {
	for _, tt := range []struct{ name, want string }{
		{"segment.bytes", "did you mean log.segment.bytes?"}, // topic level at broker level
		{"retention.ms", "did you mean log.retention.ms?"},
		{"max.message.bytes", "did you mean message.max.bytes?"},
		{"cleanup.policy", "did you mean log.cleanup.policy?"},
		{"num.partition", "did you mean num.partitions?"},
		{"log.retention.hour", "did you mean log.retention.hours?"},
	} {
		_, err := Load("", []string{tt.name + "=1"})
		if !errors.Is(err, ErrUnknownConfig) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want %q", tt.name, err, tt.want)
		}
	}
	_, err := Load("", []string{"no.such.thing=1"})
	if !errors.Is(err, ErrUnknownConfig) || strings.Contains(err.Error(), "did you mean") {
		t.Errorf("no.such.thing: %v, want no suggestion", err)
	}
}

// TestNumbersAreReadAsKafkaReadsThem: Kafka parses numeric configs with
// Integer.parseInt / Long.parseLong after trimming blanks
// (ConfigDef.parseType), so a sign is accepted and a unit is not; a value
// with a unit is refused with a message that says so.
func TestNumbersAreReadAsKafkaReadsThem(t *testing.T) {
	b, err := Load("", []string{"log.segment.bytes=+1073741824", "log.retention.hours= 24 "})
	if err != nil {
		t.Fatal(err)
	}
	if b.LogSegmentBytes != 1073741824 || b.LogRetentionMs != 24*3_600_000 {
		t.Fatalf("segment %d, retention %d", b.LogSegmentBytes, b.LogRetentionMs)
	}
	for _, v := range []string{"log.segment.bytes=1GB", "log.retention.ms=7d", "log.retention.ms=100 ms"} {
		_, err := Load("", []string{v})
		if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "without a unit") {
			t.Errorf("%s: %v", v, err)
		}
	}
}

func TestKafkaNameListsDoNotShadowDefs(t *testing.T) {
	for n := range inertKafkaNames {
		if _, ok := LookupBroker(n); ok {
			t.Errorf("%s is both defined and listed as inert", n)
		}
	}
	for n := range refusedKafkaNames {
		if _, ok := LookupBroker(n); ok {
			t.Errorf("%s is both defined and listed as refused", n)
		}
		if inertKafkaNames[n] {
			t.Errorf("%s is listed as inert and as refused", n)
		}
	}
}
