package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestConsoleOfABrokerSurvivesAnotherKilled runs three `samsa serve`
// processes and reads the console of broker 2 while broker 1 is killed
// with SIGKILL (its registration stays until its session times out):
// every page keeps answering, none hangs, and once the cluster has moved
// on they show broker 1 not alive, every record and the group's lag.
func TestConsoleOfABrokerSurvivesAnotherKilled(t *testing.T) {
	c := newOpsCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.seeds()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if r, err := adm.CreateTopic(ctx, 6, 3, nil, "orders"); err != nil || r.Err != nil {
		t.Fatalf("create topic: %v %v", err, r.Err)
	}
	var recs []*kgo.Record
	for i := range 60 {
		recs = append(recs, &kgo.Record{Topic: "orders", Key: []byte("k" + strconv.Itoa(i)), Value: []byte("v")})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	os := kadm.Offsets{}
	for p := range int32(6) {
		os.Add(kadm.Offset{Topic: "orders", Partition: p, At: 1, LeaderEpoch: -1})
	}
	if err := adm.CommitAllOffsets(ctx, "billing", os); err != nil {
		t.Fatal(err)
	}

	jar, _ := cookiejar.New(nil)
	// NB: a page bounds its Kafka requests at 6 s; a page that has not
	// answered after 20 s hangs, and fails the test.
	web := &http.Client{Jar: jar, Timeout: 20 * time.Second}
	base := "http://" + c.adminAddr(2) + "/console"
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := web.Get(base + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	records := regexp.MustCompile(`<tr data-partition="\d+" data-offset="\d+">`)
	pages := []string{"/", "/topics", "/topic?name=orders", "/messages?topic=orders&seek=earliest&count=100", "/groups", "/group?name=billing", "/brokers"}
	healthy := func(wantDown bool) error {
		for _, p := range pages {
			st, body := get(p)
			if st != http.StatusOK {
				return fmt.Errorf("%s: status %d", p, st)
			}
			switch {
			case p == "/" && wantDown != strings.Contains(body, `<tr data-broker="1" class="down">`):
				return fmt.Errorf("overview: broker 1 shown down=%v, want %v", !wantDown, wantDown)
			case strings.HasPrefix(p, "/messages") && len(records.FindAllString(body, -1)) != 60:
				return fmt.Errorf("messages: %d of 60 records", len(records.FindAllString(body, -1)))
			case strings.HasPrefix(p, "/group?") && !strings.Contains(body, `id="total-lag">54<`):
				return fmt.Errorf("group: total lag is not 54")
			}
		}
		return nil
	}
	if err := healthy(false); err != nil {
		t.Fatal(err)
	}
	c.brokers[1].kill()
	killed := time.Now()
	// Every page answers (200 with the data, or 200 with the brokers'
	// errors on it) while the cluster notices the crash.
	waitFor(t, 60*time.Second, func() error { return healthy(true) })
	t.Logf("the console of broker 2 showed the cluster without broker 1 %v after the kill", time.Since(killed).Round(100*time.Millisecond))
}
