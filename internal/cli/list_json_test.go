package cli_test

import (
	"encoding/json"
	"testing"

	"samsa/internal/testutil"
)

func TestTopicListJSON(t *testing.T) {
	b := testutil.StartBroker(t)
	testutil.CreateTopic(t, b.Admin(), "tj", 3)
	var doc struct {
		Topics []struct {
			Topic      string `json:"topic"`
			ID         string `json:"id"`
			Partitions int    `json:"partitions"`
			Internal   bool   `json:"internal"`
		} `json:"topics"`
	}
	js := mustSamsa(t, b.Addr(), "topic", "list", "--format", "json")
	if err := json.Unmarshal([]byte(js), &doc); err != nil {
		t.Fatalf("%v\n%s", err, js)
	}
	if len(doc.Topics) != 1 || doc.Topics[0].Topic != "tj" || doc.Topics[0].Partitions != 3 || doc.Topics[0].ID == "" || doc.Topics[0].Internal {
		t.Fatalf("topic list: %s", js)
	}
}

func TestClusterDescribeJSON(t *testing.T) {
	b := testutil.StartBroker(t, "broker.rack=r7")
	var doc struct {
		ClusterID  string `json:"cluster_id"`
		Controller int32  `json:"controller"`
		Brokers    []struct {
			NodeID int32   `json:"node_id"`
			Host   string  `json:"host"`
			Port   int32   `json:"port"`
			Rack   *string `json:"rack"`
		} `json:"brokers"`
	}
	js := mustSamsa(t, b.Addr(), "cluster", "describe", "--format", "json")
	if err := json.Unmarshal([]byte(js), &doc); err != nil {
		t.Fatalf("%v\n%s", err, js)
	}
	if doc.ClusterID == "" || doc.Controller != 0 || len(doc.Brokers) != 1 || doc.Brokers[0].Rack == nil || *doc.Brokers[0].Rack != "r7" || doc.Brokers[0].Port == 0 {
		t.Fatalf("cluster describe: %s", js)
	}
}
