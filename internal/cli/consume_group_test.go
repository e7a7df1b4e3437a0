package cli_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"samsa/internal/cli"
	"samsa/internal/testutil"
)

// TestConsumeGroupResumes consumes with --group in two runs: the second
// starts after the last record the first printed, since each printed
// record's offset was committed.
func TestConsumeGroupResumes(t *testing.T) {
	b := testutil.StartBroker(t)
	adm := b.Admin()
	testutil.CreateTopic(t, adm, "resume", 1)
	cl := b.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := 0; i < 10; i++ {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "resume", Value: []byte(fmt.Sprint("v", i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	out := mustSamsa(t, b.Addr(), "consume", "resume", "--group", "g1", "--from", "beginning", "--count", "4")
	if out != "v0\nv1\nv2\nv3\n" {
		t.Fatalf("first run %q", out)
	}
	offs, err := adm.FetchOffsets(ctx, "g1")
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := offs.Lookup("resume", 0); !ok || o.At != 4 {
		t.Fatalf("committed %+v, want 4", o)
	}
	out = mustSamsa(t, b.Addr(), "consume", "resume", "-g", "g1", "--from", "beginning", "--count", "6", "--format", `%o\n`)
	if out != "4\n5\n6\n7\n8\n9\n" {
		t.Fatalf("second run %q, want offsets 4..9", out)
	}
	// --partition and an offset --from make no sense with a group.
	for _, args := range [][]string{{"--partition", "0"}, {"--from", "3"}} {
		code, _, errs := samsa(t, b.Addr(), append([]string{"consume", "resume", "--group", "g1"}, args...)...)
		if code != cli.ExitMisuse || !strings.Contains(errs, "--group") {
			t.Errorf("%v: exit %d, stderr %q", args, code, errs)
		}
	}
}
