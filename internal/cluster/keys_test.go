package cluster

import (
	"strings"
	"testing"
)

func TestParseKey(t *testing.T) {
	k := newKeys("cid")
	for _, tc := range []struct {
		key  string
		want parsedKey
	}{
		{k.broker(7), parsedKey{kind: kindBroker, broker: 7}},
		{k.topic("a.b_c-d"), parsedKey{kind: kindTopic, topic: "a.b_c-d"}},
		{k.partition("t", 12), parsedKey{kind: kindPartition, topic: "t", partition: 12}},
		{k.brokerConfig(""), parsedKey{kind: kindBrokerConfig, node: ""}},
		{k.brokerConfig("3"), parsedKey{kind: kindBrokerConfig, node: "3"}},
		{k.controllerCandidate(4), parsedKey{kind: kindController, broker: 4}},
		{k.groupConfig("g"), parsedKey{kind: kindGroupConfig, group: "g"}},
		{k.groupConfig("a/b"), parsedKey{kind: kindGroupConfig, group: "a/b"}},
		{"/samsa/cid/configs/groups/", parsedKey{}},
		{"/samsa/cid/controller", parsedKey{}},
		{"/samsa/cid/producer-ids", parsedKey{}},
		{"/samsa/cid/brokers/-1", parsedKey{}},
		{"/samsa/other/brokers/1", parsedKey{}},
		{"/samsa/cid/brokers/x", parsedKey{}},
		{"/samsa/cid/partitions/t/-1", parsedKey{}},
		{"/samsa/cid/partitions/t", parsedKey{}},
		{"/samsa/cid/topics/", parsedKey{}},
	} {
		t.Run(tc.key, func(t *testing.T) {
			if got := k.parse(tc.key); got != tc.want {
				t.Fatalf("parse(%q) = %+v, want %+v", tc.key, got, tc.want)
			}
		})
	}
	// The partition prefix of "a" must not cover "a.b"'s partitions.
	if strings.HasPrefix(k.partition("a.b", 0), k.partitionsOf("a")) {
		t.Fatal("partitionsOf(a) covers topic a.b")
	}
	if got, want := k.brokerConfig(""), "/samsa/cid/configs/brokers/default"; got != want {
		t.Fatalf("default config key %q, want %q", got, want)
	}
}

func TestValidTopicName(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"orders", true},
		{"a.b_c-D9", true},
		{"__consumer_offsets", true},
		{strings.Repeat("x", 249), true},
		{strings.Repeat("x", 250), false},
		{"", false},
		{".", false},
		{"..", false},
		{"a/b", false},
		{"a b", false},
		{"ä", false},
	} {
		if got := validTopicName(tc.name); got != tc.ok {
			t.Errorf("validTopicName(%q) = %v, want %v", tc.name, got, tc.ok)
		}
	}
}
