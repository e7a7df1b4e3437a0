package cli_test

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"samsa/internal/cli"
)

// TestDumpLogIndexes dumps .index and .timeindex files in Kafka's layout,
// and a torn one.
func TestDumpLogIndexes(t *testing.T) {
	dir := t.TempDir()
	seg := filepath.Join(dir, "00000000000000000100")
	var idx, tidx []byte
	for i, pos := range []uint32{0, 70, 140} {
		idx = binary.BigEndian.AppendUint32(idx, uint32(i*2))
		idx = binary.BigEndian.AppendUint32(idx, pos)
		tidx = binary.BigEndian.AppendUint64(tidx, uint64(1700000000000+i))
		tidx = binary.BigEndian.AppendUint32(tidx, uint32(i*2))
	}
	if err := os.WriteFile(seg+".index", idx, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(seg+".timeindex", tidx, 0o644); err != nil {
		t.Fatal(err)
	}
	out := mustSamsa(t, "", "dump-log", seg+".index", seg+".timeindex")
	for _, want := range []string{
		"offset 100 position 0\n", "offset 104 position 140\n", "summary: 3 entries, 0 invalid\n",
		"timestamp 1700000000002 (2023-11-14T22:13:20.002Z) offset 104\n",
	} {
		if !strings.Contains(out, want) {
			t.Fatalf("dump lacks %q:\n%s", want, out)
		}
	}
	torn := filepath.Join(dir, "00000000000000000200.index")
	if err := os.WriteFile(torn, append(idx, 0, 0, 0), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := samsa(t, "", "dump-log", torn)
	if code != cli.ExitFailure || !strings.Contains(out, "offset 204 position 140") ||
		!strings.Contains(errs, "the file ends 3 bytes into entry 3") {
		t.Fatalf("torn: exit %d\nstdout %s\nstderr %s", code, out, errs)
	}
}
