package console_test

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"samsa/internal/testutil"
)

// TestConsoleOnAnyBrokerShowsTheClusterWithOneBrokerDown serves the
// console of broker 2 of three: it shows every broker, every partition
// and every record, and goes on doing so once broker 0 is gone.
func TestConsoleOnAnyBrokerShowsTheClusterWithOneBrokerDown(t *testing.T) {
	t.Parallel()
	c := testutil.StartCluster(t, 3, "admin.listener=127.0.0.1:0", "min.insync.replicas=2")
	adm := c.Admin()
	if resp, err := adm.CreateTopic(ctxT(t, 10*time.Second), 6, 3, nil, "orders"); err != nil || resp.Err != nil {
		t.Fatalf("create topic: %v %v", err, resp.Err)
	}
	cl := c.Client()
	var recs []*kgo.Record
	for i := range 60 {
		recs = append(recs, &kgo.Record{Topic: "orders", Key: []byte("k" + strconv.Itoa(i)), Value: []byte("v" + strconv.Itoa(i))})
	}
	produce(t, cl, recs...)
	os := kadm.Offsets{}
	for p := range int32(6) {
		os.Add(kadm.Offset{Topic: "orders", Partition: p, At: 1, LeaderEpoch: -1})
	}
	if err := adm.CommitAllOffsets(ctxT(t, 10*time.Second), "billing", os); err != nil {
		t.Fatal(err)
	}
	w := newWeb(t, c.Brokers[2].Node.ConsoleURL())

	check := func(alive []string) error {
		st, body := w.get("/console/")
		if st != http.StatusOK {
			return fmt.Errorf("overview: status %d", st)
		}
		var got []string
		for _, r := range rows(t, body, "brokers") {
			got = append(got, strings.Fields(r[0])[0]+"="+r[4])
		}
		if !slices.Equal(got, alive) {
			return fmt.Errorf("brokers %q, want %q", got, alive)
		}
		if up := byID(t, body, "partitions-count"); up == "0" {
			return fmt.Errorf("no partitions")
		}
		st, body = w.get("/console/messages?topic=orders&seek=earliest&count=100")
		if st != http.StatusOK {
			return fmt.Errorf("messages: status %d", st)
		}
		if n := len(rows(t, body, "records")); n != 60 {
			return fmt.Errorf("messages shows %d of 60 records", n)
		}
		st, body = w.get("/console/group?name=billing")
		if st != http.StatusOK {
			return fmt.Errorf("group: status %d", st)
		}
		if lag := byID(t, body, "total-lag"); lag != "54" {
			return fmt.Errorf("group lag %s, want 60-6 = 54", lag)
		}
		if st, _ := w.get("/console/topic?name=orders"); st != http.StatusOK {
			return fmt.Errorf("topic: status %d", st)
		}
		return nil
	}
	if err := check([]string{"0=yes", "1=yes", "2=yes"}); err != nil {
		t.Fatal(err)
	}
	c.Kill(0)
	// The replicas of broker 0 stay in the assignments: the page lists
	// it as not alive.
	testutil.Eventually(t, 30*time.Second, func() error { return check([]string{"0=no", "1=yes", "2=yes"}) })
	body := w.mustGet("/console/topic?name=orders")
	for _, p := range rows(t, body, "partitions") {
		if p[1] == "0" {
			t.Errorf("partition %s still led by the killed broker 0", p[0])
		}
	}
	// Every partition of orders (and of __consumer_offsets) lost one
	// of its three in-sync replicas.
	testutil.Eventually(t, 10*time.Second, func() error {
		md, err := adm.Metadata(ctxT(t, 10*time.Second))
		if err != nil {
			return err
		}
		under := 0
		for _, td := range md.Topics {
			for _, p := range td.Partitions {
				if len(p.ISR) < len(p.Replicas) {
					under++
				}
			}
		}
		if got := byID(t, w.mustGet("/console/"), "under-replicated"); got != strconv.Itoa(under) || under < 6 {
			return fmt.Errorf("under-replicated %s, the metadata says %d (at least the 6 of orders)", got, under)
		}
		return nil
	})

	// With a second broker gone, every partition of orders is below
	// min.insync.replicas=2, and none is offline.
	c.Kill(1)
	testutil.Eventually(t, 30*time.Second, func() error {
		body := w.mustGet("/console/")
		if got := byID(t, body, "under-min-isr"); got != "56" {
			return fmt.Errorf("under min ISR %s, want the 6 partitions of orders and the 50 of __consumer_offsets", got)
		}
		if got := byID(t, body, "offline"); got != "0" {
			return fmt.Errorf("offline %s, want 0", got)
		}
		return nil
	})
}
