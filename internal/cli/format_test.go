package cli

import (
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func TestRecordFormat(t *testing.T) {
	r := &kgo.Record{
		Topic: "t", Partition: 3, Offset: 42, Key: []byte("k"), Value: []byte("v\x00"),
		Timestamp: time.UnixMilli(1700000000123),
		Headers:   []kgo.RecordHeader{{Key: "a", Value: []byte("1")}, {Key: "b"}},
	}
	null := &kgo.Record{Topic: "t"}
	tests := []struct {
		format string
		rec    *kgo.Record
		want   string
	}{
		{`%v\n`, r, "v\x00\n"},
		{`%s`, r, "v\x00"},
		{`%k=%v %t %T %o %p %h`, r, "k=v\x00 1700000000123 t 42 3 a=1,b="},
		{`%K %S`, r, "1 2"},
		{`%K %S|%k|%v|%h`, null, "-1 -1|||"},
		{`100%% \t\r\\`, r, "100% \t\r\\"},
		{``, r, ""},
	}
	for _, tt := range tests {
		t.Run(tt.format, func(t *testing.T) {
			f, err := parseFormat(tt.format)
			if err != nil {
				t.Fatal(err)
			}
			if got := string(f.appendRecord(nil, tt.rec)); got != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestRecordFormatErrors(t *testing.T) {
	for _, bad := range []string{`%`, `\`, `%x`, `\q`, `abc%`} {
		_, err := parseFormat(bad)
		if !errors.Is(err, ErrUsage) {
			t.Errorf("parseFormat(%q) = %v, want a usage error", bad, err)
		}
	}
}

func TestAppendJSONBinary(t *testing.T) {
	r := &kgo.Record{Topic: "t", Key: []byte{0xff}, Value: []byte("ok"), Timestamp: time.UnixMilli(5),
		Headers: []kgo.RecordHeader{{Key: "h", Value: []byte{0xfe}}}}
	got, err := appendJSON(nil, r)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"topic":"t","partition":0,"offset":0,"timestamp":5,"key":null,"key_b64":"/w==","value":"ok","headers":[{"key":"h","value":null,"value_b64":"/g=="}]}` + "\n"
	if string(got) != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

func TestSummarize(t *testing.T) {
	ns := make([]int64, 1000)
	for i := range ns {
		ns[len(ns)-1-i] = int64(i+1) * 1e6 // 1..1000 ms, reversed
	}
	l := summarize(ns)
	if l.P50 != 500 || l.P95 != 950 || l.P99 != 990 || l.P999 != 999 || l.Max != 1000 || l.Mean != 500.5 {
		t.Fatalf("%+v", l)
	}
	if (summarize(nil) != latencies{}) {
		t.Fatal("empty summary not zero")
	}
}
