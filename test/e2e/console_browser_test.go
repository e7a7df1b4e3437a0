package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// requireChromium returns the path of Debian's chromium (or another
// Chrome), which scripts/test-deps.sh installs.
func requireChromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	missingTool(t, "chromium not found in PATH (apt-get install chromium)")
	return ""
}

// css selects the first element matching a CSS selector.
func css(sel string) chromedp.CSS { return chromedp.CSS(sel) }

// consoleURLRE is the line `samsa serve` prints once the broker is ready.
var consoleURLRE = regexp.MustCompile(`samsa console: (http://\S+/console/)`)

// The hostile strings set a global if the page ever runs them.
const (
	xssMarkup = `<script>window.xssFired="script"</script><img src=x onerror="window.xssFired='img'">`
)

// TestConsoleInChromium runs `samsa serve`, opens the console at the
// address it prints, and uses it as a user would in headless Chromium:
// every page loads and shows the cluster, a topic is created, a test
// record produced, a group's offsets reset with a preview first and a
// topic deleted, all through the pages' forms. The lag it shows equals
// what `samsa group describe` prints; hostile keys, values, headers and
// group names never run as script. Screenshots of each page are written
// to the test's artifact directory, and to SAMSA_CONSOLE_SCREENSHOTS
// when set (docs/console/ holds a set).
func TestConsoleInChromium(t *testing.T) {
	chromium := requireChromium(t)
	b := newBroker(t, fmt.Sprintf("admin.listener=127.0.0.1:%d", freePort(t)),
		"authorizer.class.name=samsa", "super.users=User:ANONYMOUS")
	b.waitLog("samsa console: ", 10*time.Second)
	m := consoleURLRE.FindStringSubmatch(b.log())
	if m == nil {
		t.Fatalf("no console address in the broker's output:\n%s", b.log())
	}
	base := m[1]

	// The cluster a user would look at: two topics with records, a
	// consumer group behind the end, an ACL, a user, an open
	// transaction.
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, tc := range []struct {
		name  string
		parts int32
	}{{"orders", 3}, {"payments", 2}} {
		if r, err := adm.CreateTopic(ctx, tc.parts, 1, nil, tc.name); err != nil || r.Err != nil {
			t.Fatalf("create %s: %v %v", tc.name, err, r.Err)
		}
	}
	var recs []*kgo.Record
	for i := range 30 {
		recs = append(recs, &kgo.Record{Topic: "orders", Key: []byte("order-" + strconv.Itoa(i)),
			Value:   []byte(fmt.Sprintf(`{"id":%d,"item":"book","qty":%d}`, i, i%4+1)),
			Headers: []kgo.RecordHeader{{Key: "source", Value: []byte("web")}}})
	}
	recs = append(recs, &kgo.Record{Topic: "orders", Key: []byte(xssMarkup), Value: []byte(xssMarkup),
		Headers: []kgo.RecordHeader{{Key: xssMarkup, Value: []byte(xssMarkup)}}})
	recs = append(recs, &kgo.Record{Topic: "payments", Value: []byte{0xca, 0xfe, 0x00, 0x01}})
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	member, err := kgo.NewClient(kgo.SeedBrokers(b.addr()), kgo.ConsumerGroup("billing"), kgo.ConsumeTopics("orders"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit(), kgo.FetchMaxPartitionBytes(300))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(member.Close) // closed earlier, once the group must be empty
	for got := 0; got < 10; {
		fs := member.PollRecords(ctx, 10-got)
		if ctx.Err() != nil {
			t.Fatal(ctx.Err())
		}
		got += len(fs.Records())
	}
	if err := member.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatal(err)
	}
	hostileGroup := "audit" + xssMarkup
	os1 := kadm.Offsets{}
	os1.Add(kadm.Offset{Topic: "payments", Partition: 0, At: 0, LeaderEpoch: -1})
	if err := adm.CommitAllOffsets(ctx, hostileGroup, os1); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.CreateACLs(ctx, kadm.NewACLs().Topics("orders").ResourcePatternType(kadm.ACLPatternPrefixed).
		Allow("User:alice").AllowHosts("*").Operations(kadm.OpRead, kadm.OpDescribe)); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "alice", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "alice-secret"}}); err != nil {
		t.Fatal(err)
	}
	alice := "alice"
	if _, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{
		Entity: []kadm.ClientQuotaEntityComponent{{Type: "user", Name: &alice}},
		Ops:    []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: 1 << 20}},
	}}); err != nil {
		t.Fatal(err)
	}
	txn, err := kgo.NewClient(kgo.SeedBrokers(b.addr()), kgo.TransactionalID("ledger-writer"))
	if err != nil {
		t.Fatal(err)
	}
	defer txn.Close()
	if err := txn.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := txn.ProduceSync(ctx, &kgo.Record{Topic: "payments", Value: []byte("pending")}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium), chromedp.WindowSize(1280, 900))
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox)
	}
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	defer acancel()
	bctx, bcancel := chromedp.NewContext(actx)
	defer bcancel()

	shots := []string{t.ArtifactDir()}
	if d := os.Getenv("SAMSA_CONSOLE_SCREENSHOTS"); d != "" {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		shots = append(shots, d)
	}
	run := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(bctx, steps...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	shot := func(name string) {
		t.Helper()
		png, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		for _, d := range shots {
			if err := os.WriteFile(filepath.Join(d, name+".png"), png, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	// open loads a page and logs how long the browser took to load it.
	open := func(path, waitFor string) {
		t.Helper()
		start := time.Now()
		run("open "+path, chromedp.Navigate(strings.TrimSuffix(base, "/console/")+path), chromedp.WaitVisible(css(waitFor)))
		t.Logf("%s loaded in %v", path, time.Since(start).Round(time.Millisecond))
	}
	textOf := func(sel string) string {
		t.Helper()
		s, err := chromedp.Run(bctx, chromedp.Text(css(sel)))
		if err != nil {
			t.Fatalf("text of %s: %v", sel, err)
		}
		return strings.TrimSpace(s)
	}
	noXSS := func(where string) {
		t.Helper()
		fired, err := chromedp.Run(bctx, chromedp.Evaluate[string](`String(window.xssFired || "")`))
		if err != nil {
			t.Fatal(err)
		}
		if fired != "" {
			t.Errorf("%s: hostile markup ran as script (%s)", where, fired)
		}
	}

	// Topics: the list, then a topic created through the form.
	open("/console/topics", "#topics")
	if got := textOf("#topics tbody"); !strings.Contains(got, "orders") || !strings.Contains(got, "payments") {
		t.Errorf("topics list %q lacks orders or payments", got)
	}
	run("create topic",
		chromedp.SendKeys(css(`#create-topic input[name=name]`), "shipments"),
		chromedp.SendKeys(css(`#create-topic input[name=partitions]`), "4"),
		chromedp.SendKeys(css(`#create-topic textarea[name=configs]`), "retention.ms=86400000"),
		chromedp.Click(css(`#create-topic button`)),
		chromedp.WaitVisible(css(`#partitions`)))
	if got := textOf("#flash"); !strings.Contains(got, "created topic shipments with 4 partitions") {
		t.Errorf("after create: %q", got)
	}
	if td, err := adm.ListTopics(ctx, "shipments"); err != nil || len(td["shipments"].Partitions) != 4 {
		t.Errorf("shipments as the cluster has it: %v %v", td, err)
	}
	open("/console/topics", "#topics")
	shot("topics")

	// Topic page and messages, with the hostile record shown as text.
	open("/console/topic?name=orders", "#partitions")
	if got := textOf("#consumers tbody"); !strings.Contains(got, "billing") {
		t.Errorf("consumers of orders %q lack billing", got)
	}
	shot("topic")
	open("/console/messages?topic=orders&count=50", "#records")
	if got := textOf("#records tbody"); !strings.Contains(got, `"item": "book"`) || !strings.Contains(got, xssMarkup) {
		t.Errorf("messages %q lack the JSON records or the hostile one as text", got)
	}
	noXSS("messages")
	// Produce a test record through the form; it lands and shows.
	run("produce",
		chromedp.SendKeys(css(`#produce input[name=key]`), "console-key"),
		chromedp.SendKeys(css(`#produce textarea[name=value]`), "typed in the console"),
		chromedp.SendKeys(css(`#produce textarea[name=headers]`), "via: chromium"),
		chromedp.Click(css(`#produce button`)),
		chromedp.WaitVisible(css(`#flash`)))
	if got := textOf("#flash"); !strings.Contains(got, "produced a record to orders") {
		t.Errorf("after produce: %q", got)
	}
	if got := textOf("#records tbody"); !strings.Contains(got, "typed in the console") || !strings.Contains(got, "console-key") || !strings.Contains(got, "chromium") {
		t.Errorf("the produced record is not shown: %q", got)
	}
	open("/console/messages?topic=orders&count=10", "#records")
	shot("messages")

	// Groups: the lag the console shows is what `samsa group describe`
	// prints.
	open("/console/groups", "#groups")
	noXSS("groups")
	if got := textOf("#groups tbody"); !strings.Contains(got, hostileGroup) {
		t.Errorf("groups %q lack the hostile group name as text", got)
	}
	shot("groups")
	open("/console/group?name=billing", "#offsets")
	uiRows, err := chromedp.Run(bctx, chromedp.Evaluate[[][]string](`[...document.querySelectorAll("#offsets tbody tr")].map(tr => [...tr.cells].map(td => td.textContent.trim()))`))
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(samsaBin, "-b", b.addr(), "group", "describe", "billing", "--format", "json").Output()
	if err != nil {
		t.Fatalf("samsa group describe: %v", err)
	}
	var described struct {
		Groups []struct {
			Offsets []struct {
				Topic     string `json:"topic"`
				Partition int32  `json:"partition"`
				Committed *int64 `json:"committed"`
				LogEnd    *int64 `json:"log_end"`
				Lag       *int64 `json:"lag"`
			} `json:"offsets"`
		} `json:"groups"`
	}
	if err := json.Unmarshal(out, &described); err != nil || len(described.Groups) != 1 {
		t.Fatalf("group describe JSON: %v\n%s", err, out)
	}
	num := func(p *int64) string {
		if p == nil {
			return "-"
		}
		return strconv.FormatInt(*p, 10)
	}
	var cliRows, ui []string
	for _, o := range described.Groups[0].Offsets {
		cliRows = append(cliRows, fmt.Sprintf("%s/%d %s %s %s", o.Topic, o.Partition, num(o.Committed), num(o.LogEnd), num(o.Lag)))
	}
	for _, r := range uiRows {
		ui = append(ui, fmt.Sprintf("%s/%s %s %s %s", r[0], r[1], r[2], r[3], r[4]))
	}
	if strings.Join(ui, "; ") != strings.Join(cliRows, "; ") {
		t.Errorf("the group page shows\n  %s\nsamsa group describe prints\n  %s", strings.Join(ui, "; "), strings.Join(cliRows, "; "))
	}
	// A reset is refused while the member is in the group.
	run("reset while active",
		chromedp.SendKeys(css(`#reset input[name=topic]`), "orders"),
		chromedp.Click(css(`#reset button`)),
		chromedp.WaitVisible(css(`#flash`)))
	if got := textOf("#flash"); !strings.Contains(got, "active members") {
		t.Errorf("reset of an active group: %q", got)
	}
	member.Close()
	waitFor(t, 30*time.Second, func() error {
		d, err := adm.DescribeGroups(ctx, "billing")
		if err != nil {
			return err
		}
		if s := d["billing"].State; s != "Empty" {
			return fmt.Errorf("billing is %s", s)
		}
		return nil
	})
	// Preview (dry run) to the earliest offsets, then apply.
	open("/console/group?name=billing", "#offsets")
	run("reset preview",
		chromedp.SendKeys(css(`#reset input[name=topic]`), "orders"),
		chromedp.SetValue(css(`#reset select[name=strategy]`), "earliest"),
		chromedp.Click(css(`#reset button`)),
		chromedp.WaitVisible(css(`#plan`)))
	if got := textOf("#plan tbody"); strings.Count(got, "orders") != 3 {
		t.Errorf("reset plan %q, want the 3 partitions of orders", got)
	}
	committed := func() int64 {
		os, err := adm.FetchOffsets(ctx, "billing")
		if err != nil {
			t.Fatal(err)
		}
		var sum int64
		os.Each(func(o kadm.OffsetResponse) { sum += o.At })
		return sum
	}
	if got := committed(); got != 10 {
		t.Errorf("committed offsets sum to %d after the preview, want the 10 consumed", got)
	}
	shot("group-reset")
	run("reset apply", chromedp.Click(css(`#apply-reset button`)), chromedp.WaitVisible(css(`#flash`)))
	if got := textOf("#flash"); !strings.Contains(got, "committed new offsets for 3 partitions") {
		t.Errorf("after apply: %q", got)
	}
	if got := committed(); got != 0 {
		t.Errorf("committed offsets sum to %d after a reset to earliest, want 0", got)
	}
	if got := textOf("#total-lag"); got != "32" {
		t.Errorf("total lag after the reset %s, want all 32 records of orders (30, the hostile one and the test record)", got)
	}
	shot("group")

	// Delete the created topic: the name must be typed again.
	open("/console/topic?name=shipments", "#delete-topic")
	run("delete topic",
		chromedp.SendKeys(css(`#delete-topic input[name=confirm]`), "shipments"),
		chromedp.Click(css(`#delete-topic button`)),
		chromedp.WaitVisible(css(`#topics`)))
	if got := textOf("#flash"); got != "deleted topic shipments" {
		t.Errorf("after delete: %q", got)
	}
	waitFor(t, 10*time.Second, func() error {
		td, err := adm.ListTopics(ctx)
		if err != nil {
			return err
		}
		if _, ok := td["shipments"]; ok {
			return fmt.Errorf("shipments still exists")
		}
		return nil
	})

	open("/console/brokers", "#brokers")
	shot("brokers")
	open("/console/security", "#acls")
	if got := textOf("#acls tbody"); !strings.Contains(got, "User:alice") {
		t.Errorf("ACLs %q lack alice's", got)
	}
	if got := textOf("#quotas tbody"); !strings.Contains(got, "producer_byte_rate=1048576") {
		t.Errorf("quotas %q lack alice's", got)
	}
	shot("security")
	open("/console/transactions", "#txns")
	if got := textOf("#txns tbody"); !strings.Contains(got, "ledger-writer") {
		t.Errorf("transactions %q lack ledger-writer", got)
	}
	shot("transactions")
	// The overview last, once the charts have samples of the traffic.
	waitFor(t, 20*time.Second, func() error {
		resp, err := http.Get(strings.TrimSuffix(base, "/console/") + "/console/api/throughput")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		var d struct{ Points []json.RawMessage }
		if err := json.NewDecoder(resp.Body).Decode(&d); err != nil {
			return err
		}
		if len(d.Points) < 2 {
			return fmt.Errorf("%d throughput points", len(d.Points))
		}
		return nil
	})
	open("/console/", "#brokers")
	if got := textOf("#brokers-count"); got != "1" {
		t.Errorf("brokers %s, want 1", got)
	}
	run("charts", chromedp.Sleep(time.Second))
	shot("overview")
	noXSS("overview")
}
