package cli_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"samsa/internal/cli"
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

func TestTopicDescribeJSON(t *testing.T) {
	t.Parallel()
	b := testutil.StartBroker(t)
	addr := b.Addr()
	mustSamsa(t, addr, "topic", "create", "dj", "--partitions", "2", "--config", "retention.ms=86400000")
	cl := b.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "dj", Partition: 1, Value: []byte("a")}, &kgo.Record{Topic: "dj", Partition: 1, Value: []byte("b")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Topics []struct {
			Topic             string            `json:"topic"`
			ID                string            `json:"id"`
			ReplicationFactor int               `json:"replication_factor"`
			Configs           map[string]string `json:"configs"`
			Partitions        []struct {
				Partition int32   `json:"partition"`
				Leader    int32   `json:"leader"`
				Replicas  []int32 `json:"replicas"`
				ISR       []int32 `json:"isr"`
				LogStart  *int64  `json:"log_start"`
				LogEnd    *int64  `json:"log_end"`
			} `json:"partitions"`
			Error string `json:"error"`
		} `json:"topics"`
	}
	code, js, _ := samsa(t, addr, "topic", "describe", "dj", "missing", "--format", "json")
	if code != cli.ExitFailure {
		t.Fatalf("describe with a missing topic: exit %d, want %d", code, cli.ExitFailure)
	}
	if err := json.Unmarshal([]byte(js), &doc); err != nil {
		t.Fatalf("%v\n%s", err, js)
	}
	if len(doc.Topics) != 2 {
		t.Fatalf("topic describe: %s", js)
	}
	dj, missing := doc.Topics[0], doc.Topics[1]
	if dj.Topic != "dj" || dj.ID == "" || dj.ReplicationFactor != 1 || dj.Configs["retention.ms"] != "86400000" || len(dj.Partitions) != 2 || dj.Error != "" {
		t.Fatalf("topic describe dj: %s", js)
	}
	p1 := dj.Partitions[1]
	if p1.Partition != 1 || p1.Leader != 0 || len(p1.ISR) != 1 || p1.LogStart == nil || *p1.LogStart != 0 || p1.LogEnd == nil || *p1.LogEnd != 2 {
		t.Fatalf("topic describe dj partition 1: %s", js)
	}
	if missing.Topic != "missing" || missing.Error == "" {
		t.Fatalf("topic describe missing: %s", js)
	}
}

func TestUserListJSON(t *testing.T) {
	t.Parallel()
	b := testutil.StartBroker(t)
	addr := b.Addr()
	mustSamsa(t, addr, "user", "create", "alice", "--new-password", "a-secret", "--mechanism", "scram-sha-256", "--iterations", "4096")
	var doc struct {
		Users []struct {
			User        string `json:"user"`
			Credentials []struct {
				Mechanism  string `json:"mechanism"`
				Iterations int32  `json:"iterations"`
			} `json:"credentials"`
			Error string `json:"error"`
		} `json:"users"`
	}
	js := mustSamsa(t, addr, "user", "list", "--format", "json")
	if err := json.Unmarshal([]byte(js), &doc); err != nil {
		t.Fatalf("%v\n%s", err, js)
	}
	if len(doc.Users) != 1 || doc.Users[0].User != "alice" || len(doc.Users[0].Credentials) != 1 ||
		doc.Users[0].Credentials[0].Mechanism != "SCRAM-SHA-256" || doc.Users[0].Credentials[0].Iterations != 4096 {
		t.Fatalf("user list: %s", js)
	}
}

func TestQuotaDescribeJSON(t *testing.T) {
	t.Parallel()
	b := testutil.StartBroker(t)
	addr := b.Addr()
	mustSamsa(t, addr, "quota", "alter", "--entity-type", "users", "--entity-name", "alice", "--add-config", "producer_byte_rate=1048576")
	mustSamsa(t, addr, "quota", "alter", "--entity-type", "clients", "--entity-default", "--add-config", "consumer_byte_rate=4096")
	var doc struct {
		Quotas []struct {
			Entity []struct {
				Type string  `json:"type"`
				Name *string `json:"name"`
			} `json:"entity"`
			Quota string  `json:"quota"`
			Value float64 `json:"value"`
		} `json:"quotas"`
	}
	js := mustSamsa(t, addr, "quota", "describe", "--format", "json")
	if err := json.Unmarshal([]byte(js), &doc); err != nil {
		t.Fatalf("%v\n%s", err, js)
	}
	var user, def bool
	for _, q := range doc.Quotas {
		if len(q.Entity) != 1 {
			t.Fatalf("quota describe: %s", js)
		}
		c := q.Entity[0]
		switch {
		case c.Type == "user" && c.Name != nil && *c.Name == "alice" && q.Quota == "producer_byte_rate" && q.Value == 1048576:
			user = true
		case c.Type == "client-id" && c.Name == nil && q.Quota == "consumer_byte_rate" && q.Value == 4096:
			def = true
		}
	}
	if len(doc.Quotas) != 2 || !user || !def {
		t.Fatalf("quota describe: %s", js)
	}
}

func TestACLListJSON(t *testing.T) {
	t.Parallel()
	b := startSecureBroker(t)
	addr := b.Addr()
	mustSamsa(t, addr, "acl", "create", "--allow-principal", "User:alice", "--operation", "read", "--topic", "orders-", "--resource-pattern-type", "prefixed")
	var doc struct {
		ACLs []struct {
			Principal    string `json:"principal"`
			Host         string `json:"host"`
			ResourceType string `json:"resource_type"`
			ResourceName string `json:"resource_name"`
			PatternType  string `json:"pattern_type"`
			Operation    string `json:"operation"`
			Permission   string `json:"permission"`
		} `json:"acls"`
	}
	js := mustSamsa(t, addr, "acl", "list", "--format", "json")
	if err := json.Unmarshal([]byte(js), &doc); err != nil {
		t.Fatalf("%v\n%s", err, js)
	}
	if len(doc.ACLs) != 1 {
		t.Fatalf("acl list: %s", js)
	}
	a := doc.ACLs[0]
	if a.Principal != "User:alice" || a.Host != "*" || a.ResourceType != "TOPIC" || a.ResourceName != "orders-" ||
		a.PatternType != "PREFIXED" || a.Operation != "READ" || a.Permission != "ALLOW" {
		t.Fatalf("acl list: %s", js)
	}
}

// TestTxnJSON checks txn list, describe and producers --format json on an
// open transaction.
func TestTxnJSON(t *testing.T) {
	t.Parallel()
	b := testutil.StartBroker(t)
	addr := b.Addr()
	testutil.CreateTopic(t, b.Admin(), "tx", 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p := b.Client(kgo.TransactionalID("tj-1"), kgo.DefaultProduceTopic("tx"))
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := p.ProduceSync(ctx, kgo.StringRecord("open")).FirstErr(); err != nil {
		t.Fatal(err)
	}
	defer p.EndTransaction(ctx, kgo.TryAbort)

	t.Run("list", func(t *testing.T) {
		var doc struct {
			Transactions []struct {
				TransactionalID string `json:"transactional_id"`
				ProducerID      int64  `json:"producer_id"`
				State           string `json:"state"`
			} `json:"transactions"`
		}
		js := mustSamsa(t, addr, "txn", "list", "--format", "json")
		if err := json.Unmarshal([]byte(js), &doc); err != nil {
			t.Fatalf("%v\n%s", err, js)
		}
		if len(doc.Transactions) != 1 || doc.Transactions[0].TransactionalID != "tj-1" || doc.Transactions[0].State != "Ongoing" || doc.Transactions[0].ProducerID < 0 {
			t.Fatalf("txn list: %s", js)
		}
	})
	t.Run("describe", func(t *testing.T) {
		var doc struct {
			Transactions []struct {
				TransactionalID string             `json:"transactional_id"`
				State           string             `json:"state"`
				TimeoutMs       int32              `json:"timeout_ms"`
				StartTimestamp  *int64             `json:"start_timestamp"`
				Partitions      map[string][]int32 `json:"partitions"`
			} `json:"transactions"`
		}
		js := mustSamsa(t, addr, "txn", "describe", "tj-1", "--format", "json")
		if err := json.Unmarshal([]byte(js), &doc); err != nil {
			t.Fatalf("%v\n%s", err, js)
		}
		if len(doc.Transactions) != 1 {
			t.Fatalf("txn describe: %s", js)
		}
		d := doc.Transactions[0]
		if d.TransactionalID != "tj-1" || d.State != "Ongoing" || d.TimeoutMs <= 0 || d.StartTimestamp == nil ||
			len(d.Partitions["tx"]) != 1 || d.Partitions["tx"][0] != 0 {
			t.Fatalf("txn describe: %s", js)
		}
	})
	t.Run("producers", func(t *testing.T) {
		var doc struct {
			Producers []struct {
				Topic          string `json:"topic"`
				Partition      int32  `json:"partition"`
				ProducerID     int64  `json:"producer_id"`
				LastSequence   int32  `json:"last_sequence"`
				TxnStartOffset *int64 `json:"txn_start_offset"`
			} `json:"producers"`
		}
		js := mustSamsa(t, addr, "txn", "producers", "--topic", "tx", "--format", "json")
		if err := json.Unmarshal([]byte(js), &doc); err != nil {
			t.Fatalf("%v\n%s", err, js)
		}
		if len(doc.Producers) != 1 || doc.Producers[0].Topic != "tx" || doc.Producers[0].LastSequence != 0 ||
			doc.Producers[0].TxnStartOffset == nil || *doc.Producers[0].TxnStartOffset != 0 {
			t.Fatalf("txn producers: %s", js)
		}
	})
}
