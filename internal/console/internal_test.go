package console

import (
	"encoding/hex"
	"math"
	"strings"
	"testing"
	"time"
)

func TestShowPicksJSONTextHexOrNull(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   []byte
		null bool
		kind string
		text string
	}{
		{nil, true, "null", ""},
		{[]byte{}, false, "text", ""},
		{[]byte("plain words\nand a line"), false, "text", "plain words\nand a line"},
		{[]byte(`{"a":1}`), false, "json", "{\n  \"a\": 1\n}"},
		{[]byte(`[1,2]`), false, "json", "[\n  1,\n  2\n]"},
		// A bare JSON scalar reads better as the text it is.
		{[]byte(`42`), false, "text", "42"},
		{[]byte("caf\xc3\xa9"), false, "text", "café"},
		{[]byte{0xff, 0xfe}, false, "hex", "00000000  ff fe                                             |..|\n"},
		{[]byte("bell\a"), false, "hex", "00000000  62 65 6c 6c 07                                    |bell.|\n"},
	} {
		got := show(tc.in, tc.null)
		if got.Kind != tc.kind || got.Text != tc.text {
			t.Errorf("show(%q) = %s %q, want %s %q", tc.in, got.Kind, got.Text, tc.kind, tc.text)
		}
	}
	big := show([]byte(strings.Repeat("x", shownBytes+10)), false)
	if !big.Truncated || len(big.Text) != shownBytes || big.Size != shownBytes+10 {
		t.Errorf("a value over shownBytes: truncated %v, %d shown of %d", big.Truncated, len(big.Text), big.Size)
	}
	bin := show(make([]byte, shownBytes), false)
	if !bin.Truncated || bin.Kind != "hex" || bin.Text != hex.Dump(make([]byte, shownHexBytes)) || bin.Size != shownBytes {
		t.Errorf("a binary value over shownHexBytes: %s, truncated %v, %d bytes of dump", bin.Kind, bin.Truncated, len(bin.Text))
	}
}

func TestRateRingKeepsTheLastSamplesAsRates(t *testing.T) {
	t.Parallel()
	q := newRateRing(4) // 3 rates
	t0 := time.Unix(1000, 0)
	for i := range 6 {
		q.add(t0.Add(time.Duration(i)*5*time.Second), Counters{RecordsIn: int64(i * i * 10), BytesIn: int64(i * 100),
			ByTopic: map[string]TopicCounters{"a": {RecordsIn: int64(i * 5)}}})
	}
	got := q.snapshot()
	if len(got) != 3 {
		t.Fatalf("%d rates, want 3", len(got))
	}
	// Records went 90, 160, 250 at 20 s, 25 s, 30 s... the last three
	// intervals: (90-40)/5, (160-90)/5, (250-160)/5.
	for i, want := range []float64{10, 14, 18} {
		if got[i].RecordsIn != want || got[i].BytesIn != 20 {
			t.Errorf("rate %d = %+v, want %v records/s and 20 bytes/s", i, got[i], want)
		}
		if got[i].T != t0.Add(time.Duration(i+3)*5*time.Second).UnixMilli() {
			t.Errorf("rate %d at %d, oldest first", i, got[i].T)
		}
	}
	if r := q.topic("a"); r.RecordsIn != 1 {
		t.Errorf("topic a rate %v, want 1/s", r.RecordsIn)
	}
	// A counter that went down (a partition left) is a rate of 0.
	q.add(t0.Add(30*time.Second), Counters{RecordsIn: 5})
	if s := q.snapshot(); s[len(s)-1].RecordsIn != 0 {
		t.Errorf("a falling counter gave rate %v", s[len(s)-1].RecordsIn)
	}
}

func TestSessionStoreEvictsTheLeastRecentlyUsedAndTheIdle(t *testing.T) {
	t.Parallel()
	now := time.Unix(0, 0)
	st := newSessionStore(2, time.Minute, func() time.Time { return now })
	a, b, c := &session{id: "a"}, &session{id: "b"}, &session{id: "c"}
	st.add(a)
	st.add(b)
	if st.get("a") != a { // a is now the most recently used
		t.Fatal("a not found")
	}
	st.add(c)
	if st.get("b") != nil || st.get("a") != a || st.get("c") != c {
		t.Error("the third session did not evict the least recently used (b)")
	}
	now = now.Add(61 * time.Second)
	if st.get("a") != nil {
		t.Error("a session idle past the timeout was returned")
	}
}

func TestSafeNextStaysInTheConsole(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"/console/topics?q=a":  "/console/topics?q=a",
		"":                     "/console/",
		"https://evil.example": "/console/",
		"//evil.example/x":     "/console/",
		"/console\\..\\x":      "/console/",
		"/consolex":            "/console/",
		"/console/\\evil":      "/console/",
	} {
		if got := safeNext(in); got != want {
			t.Errorf("safeNext(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestAddSaturatingHoldsAtTheBounds(t *testing.T) {
	t.Parallel()
	for _, tc := range [][3]int64{{5, -2, 3}, {5, math.MaxInt64, math.MaxInt64}, {-5, math.MinInt64, math.MinInt64}, {0, math.MinInt64, math.MinInt64}} {
		if got := addSaturating(tc[0], tc[1]); got != tc[2] {
			t.Errorf("addSaturating(%d, %d) = %d, want %d", tc[0], tc[1], got, tc[2])
		}
	}
}

func TestLagHistoryKeepsOnePointPerIntervalForFifteenMinutes(t *testing.T) {
	t.Parallel()
	h := newLagHistory(2, 3, 5*time.Second)
	t0 := time.Unix(1000, 0)
	h.record("g", t0, 10)
	h.record("g", t0.Add(time.Second), 11) // a second viewer's poll: no new point
	h.record("g", t0.Add(5*time.Second), 12)
	got := h.record("g", t0.Add(10*time.Second), 13)
	if len(got) != 3 || got[0][1] != 10 || got[1][1] != 12 || got[2][1] != 13 {
		t.Errorf("history %v, want lags 10, 12, 13", got)
	}
	got = h.record("g", t0.Add(15*time.Second), 14)
	if len(got) != 3 || got[0][1] != 12 {
		t.Errorf("history past 3 points %v, want the oldest dropped", got)
	}
	// A group polled again after a long pause starts over.
	got = h.record("g", t0.Add(time.Hour), 1)
	if len(got) != 1 || got[0][1] != 1 {
		t.Errorf("history after an hour %v, want only the new point", got)
	}
	h.record("a", t0.Add(time.Hour+time.Second), 1)
	h.record("b", t0.Add(time.Hour+2*time.Second), 1) // evicts g, the least recently recorded
	h.mu.Lock()
	_, kept := h.groups["g"]
	n := len(h.groups)
	h.mu.Unlock()
	if kept || n != 2 {
		t.Errorf("after a third group: g kept %v, %d groups, want g evicted and 2", kept, n)
	}
}
