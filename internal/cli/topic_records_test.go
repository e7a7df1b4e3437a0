package cli_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"samsa/internal/cli"
	"samsa/internal/testutil"
)

func TestTopicAddPartitions(t *testing.T) {
	b := testutil.StartBroker(t)
	adm := b.Admin()
	testutil.CreateTopic(t, adm, "grow", 2)
	out := mustSamsa(t, b.Addr(), "topic", "add-partitions", "grow", "--count", "5")
	if out != "topic grow now has 5 partitions\n" {
		t.Fatalf("stdout %q", out)
	}
	testutil.Eventually(t, 10*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		td, err := adm.ListTopics(ctx, "grow")
		if err != nil {
			return err
		}
		if n := len(td["grow"].Partitions); n != 5 {
			return fmt.Errorf("%d partitions, want 5", n)
		}
		return nil
	})
	// Fewer partitions than now: Kafka's error, exit 1.
	code, _, errs := samsa(t, b.Addr(), "topic", "add-partitions", "grow", "--count", "3")
	if code != cli.ExitFailure || !strings.Contains(errs, "INVALID_PARTITIONS") {
		t.Fatalf("shrink: exit %d, stderr %q", code, errs)
	}
}

func TestTopicDeleteRecords(t *testing.T) {
	b := testutil.StartBroker(t)
	adm := b.Admin()
	testutil.CreateTopic(t, adm, "trim", 2)
	cl := b.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for i := 0; i < 10; i++ {
		r := &kgo.Record{Topic: "trim", Partition: 0, Value: []byte(fmt.Sprint(i))}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	out := mustSamsa(t, b.Addr(), "topic", "delete-records", "trim", "--partition", "0", "--offset", "6")
	want := [][]string{{"TOPIC", "PARTITION", "LOW-WATERMARK", "ERROR"}, {"trim", "0", "6", "-"}}
	if got := rows(out); !slices.EqualFunc(got, want, slices.Equal) {
		t.Fatalf("stdout %q, want %q", out, want)
	}
	starts, err := adm.ListStartOffsets(ctx, "trim")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := starts.Lookup("trim", 0); o.Offset != 6 {
		t.Fatalf("log start offset %d, want 6", o.Offset)
	}
	// -1 is the high watermark; past it is Kafka's error, exit 1.
	out = mustSamsa(t, b.Addr(), "topic", "delete-records", "trim", "-p", "0", "--offset", "-1")
	if got := rows(out); len(got) != 2 || got[1][2] != "10" {
		t.Fatalf("--offset -1: stdout %q", out)
	}
	code, out, errs := samsa(t, b.Addr(), "topic", "delete-records", "trim", "-p", "1", "--offset", "99")
	if code != cli.ExitFailure || !strings.Contains(out, "OFFSET_OUT_OF_RANGE") || !strings.Contains(errs, "1 of 1 partitions failed") {
		t.Fatalf("past the end: exit %d, stdout %q, stderr %q", code, out, errs)
	}
}
