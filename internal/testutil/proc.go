package testutil

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// ProcStats is what /proc says about one process: its resident set and
// its open descriptors by kind.
type ProcStats struct {
	RSSKiB int
	FDs    int
	ByKind map[string]int // ".log", ".index", ".timeindex", "socket", "other"
}

// String sums the stats up in one line.
func (s ProcStats) String() string {
	kinds := make([]string, 0, len(s.ByKind))
	for k := range s.ByKind {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	var b strings.Builder
	for _, k := range kinds {
		fmt.Fprintf(&b, " %s=%d", k, s.ByKind[k])
	}
	return fmt.Sprintf("RSS %.1f MiB, %d fds (%s)", float64(s.RSSKiB)/1024, s.FDs, strings.TrimSpace(b.String()))
}

// ReadProcStats reads the resident set and open descriptors of pid.
func ReadProcStats(t testing.TB, pid int) ProcStats {
	t.Helper()
	st := ProcStats{ByKind: map[string]int{}}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			fmt.Sscanf(strings.TrimSpace(v), "%d", &st.RSSKiB)
		}
	}
	fdDir := fmt.Sprintf("/proc/%d/fd", pid)
	ents, err := os.ReadDir(fdDir)
	if err != nil {
		t.Fatal(err)
	}
	st.FDs = len(ents)
	for _, e := range ents {
		target, err := os.Readlink(filepath.Join(fdDir, e.Name()))
		if err != nil {
			continue // closed meanwhile
		}
		kind := "other"
		switch {
		case strings.HasPrefix(target, "socket:"):
			kind = "socket"
		case strings.HasSuffix(target, ".log"), strings.HasSuffix(target, ".index"),
			strings.HasSuffix(target, ".timeindex"), strings.HasSuffix(target, ".txnindex"):
			kind = filepath.Ext(target)
		}
		st.ByKind[kind]++
	}
	return st
}
