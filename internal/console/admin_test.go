package console_test

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/record"
	"samsa/internal/testutil"
)

func TestConsoleBrokersPageShowsConfigSourcesAndElectsLeaders(t *testing.T) {
	t.Parallel()
	b, w := startConsole(t, "log.retention.hours=48")
	testutil.CreateTopic(t, b.Admin(), "t", 2)
	body := w.mustGet("/console/brokers")
	var retention []string
	for _, r := range rows(t, body, "broker-configs") {
		if r[0] == "log.retention.hours" {
			retention = r
		}
	}
	if len(retention) != 4 || retention[1] != "48" || retention[2] != "static broker" || retention[3] != "168" {
		t.Errorf("log.retention.hours row %q, want 48 from the static config, default 168", retention)
	}
	brokers := rows(t, body, "brokers")
	if len(brokers) != 1 || brokers[0][4] == "0" {
		t.Errorf("brokers %q, want broker 0 leading partitions", brokers)
	}
	if n := len(rows(t, body, "reassignments")); n != 0 {
		t.Errorf("%d reassignments listed, want none", n)
	}
	_, body = w.post("/console/brokers/elect", url.Values{})
	if msg, ok := flash(t, body); !ok || !strings.Contains(msg, "0 failed") {
		t.Errorf("preferred election with every leader preferred: flash %q", msg)
	}
}

func TestConsoleSecurityPageManagesACLsUsersAndShowsQuotas(t *testing.T) {
	t.Parallel()
	b, w := startConsole(t, "authorizer.class.name=samsa", "super.users=User:ANONYMOUS")
	adm := b.Admin()
	ctx := ctxT(t, 30*time.Second)
	acl := url.Values{"principal": {"User:bob"}, "host": {"*"}, "permission": {"allow"}, "operation": {"read"},
		"resource_type": {"topic"}, "resource_name": {"orders"}, "pattern_type": {"prefixed"}}
	_, body := w.post("/console/security/acls", acl)
	if msg, ok := flash(t, body); !ok {
		t.Fatalf("create ACL: %q", msg)
	}
	described := func() []string {
		rs, err := adm.DescribeACLs(ctx, kadm.NewACLs().AnyResource().ResourcePatternType(kadm.ACLPatternAny).Operations(kadm.OpAny).Allow().Deny().AllowHosts().DenyHosts())
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range rs {
			for _, d := range r.Described {
				out = append(out, fmt.Sprintf("%s %s %s %s %s %s", d.Principal, d.Permission, d.Operation, d.Type, d.Pattern, d.Name))
			}
		}
		return out
	}
	if got := described(); !slices.Equal(got, []string{"User:bob ALLOW READ TOPIC PREFIXED orders"}) {
		t.Errorf("ACLs after create: %q", got)
	}
	if got := rows(t, body, "acls"); len(got) != 1 || got[0][0] != "topic" || got[0][1] != "orders" || got[0][3] != "User:bob" {
		t.Errorf("ACL rows %q", got)
	}
	_, body = w.post("/console/security/acls/delete", acl)
	if msg, ok := flash(t, body); !ok || !strings.Contains(msg, "deleted 1") {
		t.Errorf("delete ACL: %q", msg)
	}
	if got := described(); len(got) != 0 {
		t.Errorf("ACLs after delete: %q", got)
	}

	_, body = w.post("/console/security/users", url.Values{"user": {"carol"}, "password": {"c-secret"}, "mechanism": {"SCRAM-SHA-256"}})
	if msg, ok := flash(t, body); !ok {
		t.Fatalf("create user: %q", msg)
	}
	users, err := adm.DescribeUserSCRAMs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if u, ok := users["carol"]; !ok || len(u.CredInfos) != 1 || u.CredInfos[0].Mechanism != kadm.ScramSha256 {
		t.Errorf("carol's credentials %+v", users["carol"])
	}
	if got := rows(t, body, "users"); len(got) != 1 || got[0][0] != "carol" || got[0][1] != "SCRAM-SHA-256" {
		t.Errorf("user rows %q", got)
	}
	w.post("/console/security/users/delete", url.Values{"user": {"carol"}, "mechanism": {"SCRAM-SHA-256"}})
	if users, _ := adm.DescribeUserSCRAMs(ctx); len(users["carol"].CredInfos) != 0 {
		t.Errorf("carol still has credentials after delete")
	}

	rate := 1048576.0
	user := "dave"
	if _, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{
		Entity: []kadm.ClientQuotaEntityComponent{{Type: "user", Name: &user}},
		Ops:    []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: rate}},
	}}); err != nil {
		t.Fatal(err)
	}
	qs := rows(t, w.mustGet("/console/security"), "quotas")
	if len(qs) != 1 || qs[0][0] != "user=dave" || qs[0][1] != "producer_byte_rate=1048576" {
		t.Errorf("quotas %q", qs)
	}
	// Set a client id's default quota, and remove dave's.
	_, body = w.post("/console/security/quotas", url.Values{"entity_type": {"client-id"}, "key": {"consumer_byte_rate"}, "value": {"2048"}, "op": {"set"}})
	if msg, ok := flash(t, body); !ok {
		t.Fatalf("set quota: %q", msg)
	}
	_, body = w.post("/console/security/quotas", url.Values{"entity_type": {"user"}, "entity_name": {"dave"}, "key": {"producer_byte_rate"}, "op": {"delete"}})
	if msg, ok := flash(t, body); !ok {
		t.Fatalf("remove quota: %q", msg)
	}
	quotas, err := adm.DescribeClientQuotas(ctx, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, q := range quotas {
		for _, v := range q.Values {
			name := "<default>"
			if q.Entity[0].Name != nil {
				name = *q.Entity[0].Name
			}
			got = append(got, fmt.Sprintf("%s=%s %s=%v", q.Entity[0].Type, name, v.Key, v.Value))
		}
	}
	if !slices.Equal(got, []string{"client-id=<default> consumer_byte_rate=2048"}) {
		t.Errorf("quotas after the console's changes: %q", got)
	}
	if st, _ := w.post("/console/security/quotas", url.Values{"entity_type": {"ip"}, "key": {"x"}, "value": {"1"}}); st != 400 {
		t.Errorf("entity type ip: status %d, want 400", st)
	}
}

func TestConsoleTransactionsPageListsOpenTransactions(t *testing.T) {
	t.Parallel()
	b, w := startConsole(t)
	testutil.CreateTopic(t, b.Admin(), "ledger", 1)
	cl := b.Client(kgo.TransactionalID("ledger-writer"))
	ctx := ctxT(t, 30*time.Second)
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "ledger", Value: []byte("open")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	body := w.mustGet("/console/transactions")
	txns := rows(t, body, "txns")
	if len(txns) != 1 || txns[0][0] != "ledger-writer" || txns[0][3] != "Ongoing" || txns[0][7] != "ledger-0" {
		t.Errorf("transactions %q, want ledger-writer Ongoing on ledger-0", txns)
	}
	open := rows(t, body, "open-txns")
	if len(open) != 1 || open[0][0] != "ledger-0" || open[0][3] != "0" || open[0][5] != "no" {
		t.Errorf("open transactions %q, want ledger-0 from offset 0, not hanging", open)
	}
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, func() error {
		if open := rows(t, w.mustGet("/console/transactions"), "open-txns"); len(open) != 0 {
			return fmt.Errorf("open transactions after commit: %q", open)
		}
		return nil
	})
}

// TestConsoleAbortsAHangingTransaction writes a transactional batch whose
// producer id no coordinator knows (KIP-890 verification off, as on
// brokers without it): the transactions page shows it hanging, and its
// abort moves the partition's last stable offset past it.
func TestConsoleAbortsAHangingTransaction(t *testing.T) {
	t.Parallel()
	b, w := startConsole(t, "transaction.partition.verification.enable=false")
	adm := b.Admin()
	testutil.CreateTopic(t, adm, "hang", 1)
	ctx := ctxT(t, 30*time.Second)
	cl := b.Client()
	initReq := kmsg.NewPtrInitProducerIDRequest()
	initReq.TransactionTimeoutMillis = -1
	initResp, err := initReq.RequestWith(ctx, cl)
	if err != nil || initResp.ErrorCode != 0 {
		t.Fatalf("init producer id: %v (code %d)", err, initResp.ErrorCode)
	}
	bb := &record.Builder{Codec: record.CodecNone, BaseTimestamp: time.Now().UnixMilli(),
		ProducerID: initResp.ProducerID, ProducerEpoch: initResp.ProducerEpoch, Transactional: true}
	bb.Add(record.Record{Value: []byte("hanging")})
	batch, err := bb.Build()
	if err != nil {
		t.Fatal(err)
	}
	prod := kmsg.NewPtrProduceRequest()
	prod.Acks, prod.TimeoutMillis = -1, 10000
	pt := kmsg.NewProduceRequestTopic()
	pt.Topic = "hang"
	pp := kmsg.NewProduceRequestTopicPartition()
	pp.Partition, pp.Records = 0, batch
	pt.Partitions = append(pt.Partitions, pp)
	prod.Topics = append(prod.Topics, pt)
	if resp, err := prod.RequestWith(ctx, cl); err != nil || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("transactional produce: %v", err)
	}
	lso := func() int64 {
		req := kmsg.NewPtrListOffsetsRequest()
		req.IsolationLevel = 1
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = "hang"
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Timestamp = -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Topics[0].Partitions[0].Offset
	}
	if got := lso(); got != 0 {
		t.Fatalf("last stable offset %d before the abort, want 0", got)
	}
	open := rows(t, w.mustGet("/console/transactions"), "open-txns")
	if len(open) != 1 || open[0][0] != "hang-0" || open[0][1] != fmt.Sprint(initResp.ProducerID) || open[0][5] != "yes" {
		t.Fatalf("open transactions %q, want the hanging one of producer %d", open, initResp.ProducerID)
	}
	_, body := w.post("/console/transactions/abort", url.Values{"topic": {"hang"}, "partition": {"0"}, "start_offset": {"0"}})
	if msg, ok := flash(t, body); !ok {
		t.Fatalf("abort: %q", msg)
	}
	testutil.Eventually(t, 10*time.Second, func() error {
		if got := lso(); got != 2 {
			return fmt.Errorf("last stable offset %d after the abort, want 2 (past the record and its marker)", got)
		}
		return nil
	})
	_, body = w.post("/console/transactions/abort", url.Values{"topic": {"hang"}, "partition": {"0"}, "start_offset": {"0"}})
	if msg, ok := flash(t, body); ok || !strings.Contains(msg, "no open transaction") {
		t.Errorf("a second abort: %q", msg)
	}
}
