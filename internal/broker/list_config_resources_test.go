package broker_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/testutil"
)

// TestListConfigResourcesListsGroupsBrokersTopics: v1 lists the groups
// with config overrides, the brokers and the topics, each with its type,
// filtered by the types asked for; v0 (client-metrics resources only)
// lists none; a type Kafka does not list is UNSUPPORTED_VERSION.
//
// Reference: KIP-1142; Kafka KafkaApis.handleListConfigResources.
func TestListConfigResourcesListsGroupsBrokersTopics(t *testing.T) {
	t.Parallel()
	b := testutil.StartBroker(t)
	testutil.CreateTopic(t, b.Admin(), "lcr-topic", 1)
	cl := b.Client()
	if code := alterGroupConfigs(t, cl, "lcr-group", false, setGroupConfig("consumer.session.timeout.ms", "50000")); code != 0 {
		t.Fatalf("set group config: %v", kerr.ErrorForCode(code))
	}
	type res struct {
		typ  int8
		name string
	}
	list := func(v int16, types ...int8) (*kmsg.ListConfigResourcesResponse, []res) {
		t.Helper()
		req := kmsg.NewPtrListConfigResourcesRequest()
		req.ResourceTypes = types
		resp := request[*kmsg.ListConfigResourcesResponse](t, pinned(t, b, 74, v), req)
		if resp.Version != v {
			t.Fatalf("answered at v%d, want v%d", resp.Version, v)
		}
		var out []res
		for _, r := range resp.ConfigResources {
			out = append(out, res{r.Type, r.Name})
		}
		return resp, out
	}
	const (
		topic  = int8(kmsg.ConfigResourceTypeTopic)
		broker = int8(kmsg.ConfigResourceTypeBroker)
		group  = int8(kmsg.ConfigResourceTypeGroupConfig)
		logger = int8(kmsg.ConfigResourceTypeBrokerLogger)
		cm     = int8(kmsg.ConfigResourceTypeClientMetrics)
	)
	md := request[*kmsg.MetadataResponse](t, cl, kmsg.NewPtrMetadataRequest())
	if len(md.Brokers) != 1 {
		t.Fatalf("metadata: %d brokers, want 1", len(md.Brokers))
	}
	brokerName := fmt.Sprint(md.Brokers[0].NodeID)
	testutil.Eventually(t, 10*time.Second, func() error {
		if _, got := list(1, group); !slices.Equal(got, []res{{group, "lcr-group"}}) {
			return fmt.Errorf("groups: %v, want lcr-group", got)
		}
		return nil
	})
	resp, all := list(1)
	if resp.ErrorCode != 0 {
		t.Fatalf("all types: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	for _, want := range []res{{group, "lcr-group"}, {broker, brokerName}, {topic, "lcr-topic"}} {
		if !slices.Contains(all, want) {
			t.Fatalf("all types: %v misses %v", all, want)
		}
	}
	// Kafka's order of types: groups, then brokers, then topics.
	if i, j, k := slices.Index(all, res{group, "lcr-group"}), slices.Index(all, res{broker, brokerName}), slices.Index(all, res{topic, "lcr-topic"}); i > j || j > k {
		t.Fatalf("all types out of order: %v", all)
	}
	if _, got := list(1, broker); !slices.Equal(got, []res{{broker, brokerName}}) {
		t.Fatalf("brokers: %v, want [%s]", got, brokerName)
	}
	_, topics := list(1, topic)
	if !slices.Contains(topics, res{topic, "lcr-topic"}) || slices.ContainsFunc(topics, func(r res) bool { return r.typ != topic }) {
		t.Fatalf("topics: %v", topics)
	}
	if _, got := list(1, cm, logger); len(got) != 0 {
		t.Fatalf("client metrics and broker loggers: %v, want none", got)
	}
	if resp, got := list(1, topic, 3); resp.ErrorCode != kerr.UnsupportedVersion.Code || len(got) != 0 {
		t.Fatalf("unknown type: %v %v, want UNSUPPORTED_VERSION and nothing", kerr.ErrorForCode(resp.ErrorCode), got)
	}
	if resp, got := list(0); resp.ErrorCode != 0 || len(got) != 0 {
		t.Fatalf("v0: %v %v, want no client-metrics resources", kerr.ErrorForCode(resp.ErrorCode), got)
	}
}
