package cli_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"samsa/internal/cli"
	"samsa/internal/testutil"
)

// cluster move-log-dir moves a replica to the broker's other log dir
// (AlterReplicaLogDirs) and, with --wait, returns once cluster log-dirs
// shows it there; its records stay readable at their offsets. A dir that
// is not a log dir fails with LOG_DIR_NOT_FOUND, missing flags are misuse.
func TestClusterMoveLogDirMovesAReplica(t *testing.T) {
	base := t.TempDir()
	dirA, dirB := filepath.Join(base, "a"), filepath.Join(base, "b")
	b := testutil.StartBroker(t, "log.dirs="+dirA+","+dirB)
	testutil.CreateTopic(t, b.Admin(), "moving", 2)
	cl := b.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for i := range 50 {
		if err := cl.ProduceSync(t.Context(), &kgo.Record{Topic: "moving", Partition: int32(i % 2), Value: []byte{byte(i)}}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	dirsOf := func() map[int32]string {
		var doc struct {
			LogDirs []struct {
				Dir        string `json:"dir"`
				Partitions []struct {
					Topic     string `json:"topic"`
					Partition int32  `json:"partition"`
					IsFuture  bool   `json:"is_future"`
				} `json:"partitions"`
			} `json:"log_dirs"`
		}
		js := mustSamsa(t, b.Addr(), "cluster", "log-dirs", "--topic", "moving", "--format", "json")
		if err := json.Unmarshal([]byte(js), &doc); err != nil {
			t.Fatalf("%v\n%s", err, js)
		}
		out := map[int32]string{}
		for _, d := range doc.LogDirs {
			for _, p := range d.Partitions {
				if !p.IsFuture {
					out[p.Partition] = d.Dir
				}
			}
		}
		return out
	}
	before := dirsOf()
	if len(before) != 2 || before[0] == before[1] {
		t.Fatalf("partitions in %v, want one in each dir", before)
	}
	dest := before[1]
	out := mustSamsa(t, b.Addr(), "cluster", "move-log-dir", "--broker", "0", "--dir", dest, "--topic", "moving", "--partition", "0", "--wait")
	if r := rows(out); len(r) < 2 || r[1][0] != "moving" || r[1][1] != "0" || r[1][4] != "-" || !strings.Contains(out, "moved 1 partitions") {
		t.Fatalf("output:\n%s", out)
	}
	if after := dirsOf(); after[0] != dest || after[1] != dest {
		t.Fatalf("after the move partitions in %v, want both in %s", after, dest)
	}
	got := mustSamsa(t, b.Addr(), "consume", "moving", "--partition", "0", "--from", "beginning", "--count", "25", "--format", "%o\n")
	if n := len(strings.Fields(got)); n != 25 || strings.Fields(got)[24] != "24" {
		t.Fatalf("consumed after the move:\n%s", got)
	}

	code, _, errs := samsa(t, b.Addr(), "cluster", "move-log-dir", "--broker", "0", "--dir", filepath.Join(base, "nope"), "--topic", "moving")
	if code != cli.ExitFailure || !strings.Contains(errs, "failed") {
		t.Fatalf("move to a dir that is not a log dir: exit %d, %s", code, errs)
	}
	if code, _, _ := samsa(t, b.Addr(), "cluster", "move-log-dir", "--broker", "0", "--topic", "moving"); code != cli.ExitMisuse {
		t.Fatalf("without --dir: exit %d, want misuse", code)
	}
}
