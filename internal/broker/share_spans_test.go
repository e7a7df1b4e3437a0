package broker

import (
	"bytes"
	"testing"
)

func TestAppendSpans(t *testing.T) {
	buf := []byte("aaabbbcccddd")
	for _, tt := range []struct {
		name  string
		out   []byte
		spans []bufSpan
		want  string
		alias bool // the answer is a slice of buf
	}{
		{"none", nil, nil, "", false},
		{"one", nil, []bufSpan{{3, 6}}, "bbb", true},
		{"following each other", nil, []bufSpan{{0, 3}, {3, 6}, {6, 9}}, "aaabbbccc", true},
		{"a gap", nil, []bufSpan{{0, 3}, {6, 9}}, "aaaccc", false},
		{"after an earlier read", []byte("xx"), []bufSpan{{0, 3}, {3, 6}}, "xxaaabbb", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := appendSpans(tt.out, buf, tt.spans)
			if string(got) != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
			if alias := len(got) > 0 && &got[0] == &buf[tt.spans[0].from]; alias != tt.alias {
				t.Fatalf("aliases buf: %v, want %v", alias, tt.alias)
			}
			// A later read's batches appended to the answer must not
			// write over buf.
			before := bytes.Clone(buf)
			_ = appendSpans(got, []byte("zzz"), []bufSpan{{0, 3}})
			if !bytes.Equal(buf, before) {
				t.Fatalf("buf changed to %q", buf)
			}
		})
	}
}
