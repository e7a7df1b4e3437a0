package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
)

func writeProps(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "server.properties")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestDefsWellFormed(t *testing.T) {
	for _, defs := range [][]Def{BrokerDefs(), TopicDefs(), GroupDefs()} {
		if !sort.SliceIsSorted(defs, func(i, j int) bool { return defs[i].Name < defs[j].Name }) {
			t.Fatal("defs not sorted")
		}
		for _, d := range defs {
			if d.Doc == "" || strings.Contains(d.Doc, "\n") {
				t.Errorf("%s: doc must be one line", d.Name)
			}
			if d.Null && d.Default != "" {
				t.Errorf("%s: null default with a value", d.Name)
			}
			if !d.Null && d.Type != TypeString && d.Type != TypeList {
				if err := d.Check(d.Default); err != nil {
					t.Errorf("%s: default does not pass its own check: %v", d.Name, err)
				}
			}
			if d.Topic != "" {
				td, ok := LookupTopic(d.Topic)
				if !ok {
					t.Errorf("%s: topic counterpart %s undefined", d.Name, d.Topic)
				}
				// A broker config defaulting a topic config directly has the same default.
				if ok && !d.Null && td.Type == d.Type && td.Default != d.Default {
					t.Errorf("%s default %q differs from %s default %q", d.Name, d.Default, td.Name, td.Default)
				}
			}
		}
	}
}

func TestLoadFileAndOverrides(t *testing.T) {
	p := writeProps(t, `
# a broker
broker.id=3
listeners=PLAINTEXT://0.0.0.0:19092,internal://[::1]:19093
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT
advertised.listeners=PLAINTEXT://kafka.example:19092
log.dir=/var/lib/samsa
num.partitions=4
auto.create.topics.enable=FALSE
log.retention.bytes=1000
etcd.endpoints=http://e1:2379, http://e2:2379
`)
	b, err := Load(p, []string{"num.partitions=8", "node.id=5", "broker.rack = r1"})
	if err != nil {
		t.Fatal(err)
	}
	if b.NodeID != 5 { // override wins over the file's alias
		t.Errorf("NodeID %d", b.NodeID)
	}
	if b.NumPartitions != 8 {
		t.Errorf("NumPartitions %d", b.NumPartitions)
	}
	wantL := []Listener{{"PLAINTEXT", "0.0.0.0", 19092}, {"INTERNAL", "::1", 19093}}
	if !reflect.DeepEqual(b.Listeners, wantL) {
		t.Errorf("Listeners %v", b.Listeners)
	}
	if !reflect.DeepEqual(b.AdvertisedListeners, []Listener{{"PLAINTEXT", "kafka.example", 19092}}) {
		t.Errorf("AdvertisedListeners %v", b.AdvertisedListeners)
	}
	if b.InterBrokerListenerName != "PLAINTEXT" {
		t.Errorf("InterBrokerListenerName %q", b.InterBrokerListenerName)
	}
	if !reflect.DeepEqual(b.LogDirs, []string{"/var/lib/samsa"}) {
		t.Errorf("LogDirs %v", b.LogDirs)
	}
	if b.AutoCreateTopics || b.LogRetentionBytes != 1000 || b.BrokerRack != "r1" {
		t.Errorf("auto %v bytes %d rack %q", b.AutoCreateTopics, b.LogRetentionBytes, b.BrokerRack)
	}
	if !reflect.DeepEqual(b.EtcdEndpoints, []string{"http://e1:2379", "http://e2:2379"}) {
		t.Errorf("EtcdEndpoints %v", b.EtcdEndpoints)
	}
	wantRaw := map[string]string{
		"node.id": "5", "listeners": "PLAINTEXT://0.0.0.0:19092,internal://[::1]:19093",
		"advertised.listeners": "PLAINTEXT://kafka.example:19092", "log.dirs": "/var/lib/samsa",
		"num.partitions": "8", "auto.create.topics.enable": "FALSE", "log.retention.bytes": "1000",
		"etcd.endpoints": "http://e1:2379, http://e2:2379", "broker.rack": "r1", "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT",
	}
	if !reflect.DeepEqual(b.Raw, wantRaw) {
		t.Errorf("Raw %v", b.Raw)
	}
	if l := b.Listeners[1]; l.String() != "INTERNAL://[::1]:19093" || l.Addr() != "[::1]:19093" {
		t.Errorf("listener renders as %s / %s", l, l.Addr())
	}
}

func TestLoadErrors(t *testing.T) {
	for _, tc := range []struct {
		name      string
		file      string
		overrides []string
		want      error
		mention   string
	}{
		{"unknown in file", "log.retention.dayz=3\n", nil, ErrUnknownConfig, "log.retention.dayz"},
		{"unknown override", "", []string{"bogus.name=1"}, ErrUnknownConfig, "bogus.name"},
		{"override without =", "", []string{"num.partitions"}, ErrInvalidConfig, "num.partitions"},
		{"not a number", "num.partitions=many\n", nil, ErrInvalidConfig, "num.partitions"},
		{"int overflow", "", []string{"message.max.bytes=3000000000"}, ErrInvalidConfig, "message.max.bytes"},
		{"short overflow", "", []string{"offsets.topic.replication.factor=40000"}, ErrInvalidConfig, "offsets.topic.replication.factor"},
		{"out of range", "", []string{"num.partitions=0"}, ErrInvalidConfig, "num.partitions"},
		{"bad boolean", "", []string{"auto.create.topics.enable=yes"}, ErrInvalidConfig, "auto.create.topics.enable"},
		{"bad listener", "", []string{"listeners=localhost:9092"}, ErrInvalidConfig, "listeners"},
		{"duplicate listener", "", []string{"listeners=A://:1,a://:2"}, ErrInvalidConfig, "listeners"},
		{"bad port", "", []string{"listeners=A://h:70000"}, ErrInvalidConfig, "listeners"},
		{"advertised not listened", "", []string{"advertised.listeners=OTHER://h:1"}, ErrInvalidConfig, "advertised.listeners"},
		{"bad policy", "", []string{"log.cleanup.policy=delete,shred"}, ErrInvalidConfig, "log.cleanup.policy"},
		{"session too long", "", []string{"broker.session.timeout.ms=9000"}, ErrInvalidConfig, "broker.session.timeout.ms"},
		{"heartbeat above session", "", []string{"broker.heartbeat.interval.ms=7000"}, ErrInvalidConfig, "broker.heartbeat.interval.ms"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := ""
			if tc.file != "" {
				path = writeProps(t, tc.file)
			}
			_, err := Load(path, tc.overrides)
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.mention) {
				t.Fatalf("err %v, want %v mentioning %s", err, tc.want, tc.mention)
			}
		})
	}
	if _, err := Load(filepath.Join(t.TempDir(), "missing"), nil); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
}

func TestDurationPrecedence(t *testing.T) {
	const h, m = 3600000, 60000
	for _, tc := range []struct {
		name      string
		overrides []string
		retention int64
		roll      int64
	}{
		{"defaults", nil, 168 * h, 168 * h},
		{"hours", []string{"log.retention.hours=2", "log.roll.hours=3"}, 2 * h, 3 * h},
		{"minutes over hours", []string{"log.retention.hours=2", "log.retention.minutes=5"}, 5 * m, 168 * h},
		{"ms over minutes and hours", []string{"log.retention.hours=2", "log.retention.minutes=5", "log.retention.ms=1234", "log.roll.ms=99", "log.roll.hours=1"}, 1234, 99},
		{"ms -1 unlimited", []string{"log.retention.ms=-1"}, -1, 168 * h},
		{"negative hours unlimited", []string{"log.retention.hours=-1"}, -1, 168 * h},
		{"null ms falls through", []string{"log.retention.ms=", "log.retention.minutes=7"}, 7 * m, 168 * h},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := Load("", tc.overrides)
			if err != nil {
				t.Fatal(err)
			}
			if b.LogRetentionMs != tc.retention || b.LogRollMs != tc.roll {
				t.Fatalf("retention %d roll %d, want %d %d", b.LogRetentionMs, b.LogRollMs, tc.retention, tc.roll)
			}
			td := b.TopicDefaults()
			if td["retention.ms"] != itoa(tc.retention) || td["segment.ms"] != itoa(tc.roll) {
				t.Fatalf("topic defaults retention.ms %s segment.ms %s", td["retention.ms"], td["segment.ms"])
			}
		})
	}
}

func itoa(n int64) string {
	var b []byte
	neg := n < 0
	if neg {
		n = -n
	}
	for {
		b = append([]byte{byte('0' + n%10)}, b...)
		n /= 10
		if n == 0 {
			break
		}
	}
	if neg {
		b = append([]byte{'-'}, b...)
	}
	return string(b)
}

func TestTopicDefaults(t *testing.T) {
	b, err := Load("", []string{
		"log.segment.bytes=1048576", "log.cleanup.policy=compact", "log.flush.interval.ms=1000",
		"log.flush.interval.messages=9223372036854775807", "message.max.bytes=2000000",
		"log.cleaner.min.cleanable.ratio=0.25", "compression.type=zstd", "log.preallocate=true",
	})
	if err != nil {
		t.Fatal(err)
	}
	td := b.TopicDefaults()
	want := map[string]string{
		"segment.bytes": "1048576", "cleanup.policy": "compact", "flush.ms": "1000",
		"flush.messages": "9223372036854775807", "max.message.bytes": "2000000",
		"min.cleanable.dirty.ratio": "0.25", "compression.type": "zstd", "preallocate": "true",
		"retention.ms": "604800000", "segment.index.bytes": "10485760", "delete.retention.ms": "86400000",
	}
	for k, v := range want {
		if td[k] != v {
			t.Errorf("%s = %q, want %q", k, td[k], v)
		}
	}
	if len(td) != len(TopicDefs()) {
		t.Errorf("%d topic defaults for %d topic defs", len(td), len(TopicDefs()))
	}
	if err := ValidateTopic(td); err != nil {
		t.Errorf("topic defaults do not validate: %v", err)
	}
	// With default broker configs, the topic defaults are the topic defs' defaults.
	for k, v := range Default().TopicDefaults() {
		if d, _ := LookupTopic(k); d.Default != v {
			t.Errorf("default broker: %s = %q, topic def says %q", k, v, d.Default)
		}
	}
}

func TestAliases(t *testing.T) {
	for alias, canon := range map[string]string{"broker.id": "node.id", "log.dir": "log.dirs"} {
		d, ok := LookupBroker(alias)
		if !ok || d.Name != canon || CanonicalBrokerName(alias) != canon {
			t.Errorf("%s resolves to %q %v", alias, d.Name, ok)
		}
	}
	b, err := Load("", []string{"broker.id=7", "log.dir=/a,/b"})
	if err != nil {
		t.Fatal(err)
	}
	if b.NodeID != 7 || !reflect.DeepEqual(b.LogDirs, []string{"/a", "/b"}) || b.Raw["node.id"] != "7" {
		t.Fatalf("node %d dirs %v raw %v", b.NodeID, b.LogDirs, b.Raw)
	}
}

func TestConsoleServedOnLoopbackUnlessEnabled(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		addr string
		on   bool
	}{
		{nil, "127.0.0.1:9080", true},
		{[]string{"admin.listener=0.0.0.0:9080"}, "0.0.0.0:9080", false},
		{[]string{"admin.listener=:9080"}, ":9080", false},
		{[]string{"admin.listener=localhost:9080"}, "localhost:9080", true},
		{[]string{"admin.listener=[::1]:9080"}, "[::1]:9080", true},
		{[]string{"admin.listener=0.0.0.0:9080", "console.enabled=true"}, "0.0.0.0:9080", true},
		{[]string{"console.enabled=false"}, "127.0.0.1:9080", false},
		{[]string{"console.listener=10.0.0.1:8080"}, "10.0.0.1:8080", false},
		{[]string{"admin.listener=", "console.listener=127.0.0.1:8080"}, "127.0.0.1:8080", true},
		{[]string{"admin.listener="}, "", false},
	} {
		b, err := Load("", append([]string{"log.dirs=/tmp/x"}, tc.args...))
		if err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		addr, on := b.ConsoleAddr()
		if addr != tc.addr || on != tc.on {
			t.Errorf("%v: ConsoleAddr() = %q, %v; want %q, %v", tc.args, addr, on, tc.addr, tc.on)
		}
	}
	if _, err := Load("", []string{"console.enabled=maybe"}); err == nil {
		t.Error("console.enabled=maybe loaded")
	}
}
