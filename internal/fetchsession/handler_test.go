package fetchsession

import (
	"fmt"
	"strings"
	"testing"
)

func planString(p Plan) string {
	var send, forget []string
	for _, s := range p.Send {
		send = append(send, fmt.Sprintf("%s-%d@%d", s.Topic, s.Partition, s.FetchOffset))
	}
	for _, k := range p.Forget {
		forget = append(forget, fmt.Sprintf("%s-%d/%x", k.Topic, k.Partition, k.TopicID[0]))
	}
	kind := "incr"
	if p.Full {
		kind = "full"
	}
	return fmt.Sprintf("%s id=%d epoch=%d send=[%s] forget=[%s]", kind, p.SessionID, p.Epoch, strings.Join(send, " "), strings.Join(forget, " "))
}

func idPart(topic string, id byte, p int32, offset int64) Partition {
	q := part(topic, p, offset)
	q.TopicID = [16]byte{id}
	return q
}

// Reference: Kafka FetchSessionHandler (build, handleResponse, handleError).
func TestHandler(t *testing.T) {
	t0, t1, u0 := idPart("t", 1, 0, 5), idPart("t", 1, 1, 0), idPart("u", 2, 0, 7)
	moved := idPart("t", 1, 0, 9)
	recreated := idPart("t", 3, 1, 0)
	type step struct {
		want  []Partition
		plan  string
		done  func(h *Handler) // the answer; nil is a plain success in session 42
		after string           // Session() after the answer
	}
	ok := func(h *Handler) { h.Done(nil, 42, true) }
	tests := []struct {
		name  string
		steps []step
	}{
		{"a full fetch opens the session; then only changes are sent", []step{
			{want: []Partition{t0, t1, u0}, plan: "full id=0 epoch=0 send=[t-0@5 t-1@0 u-0@7] forget=[]", done: ok, after: "42/1"},
			{want: []Partition{t0, t1, u0}, plan: "incr id=42 epoch=1 send=[] forget=[]", done: ok, after: "42/2"},
			{want: []Partition{moved, t1, u0}, plan: "incr id=42 epoch=2 send=[t-0@9] forget=[]", done: ok, after: "42/3"},
			{want: []Partition{moved}, plan: "incr id=42 epoch=3 send=[] forget=[t-1/1 u-0/2]", done: ok, after: "42/4"},
			{want: []Partition{moved, u0}, plan: "incr id=42 epoch=4 send=[u-0@7] forget=[]", done: ok, after: "42/5"},
		}},
		{"a change, an addition and a removal in one fetch", []step{
			{want: []Partition{t0, t1, u0}, plan: "full id=0 epoch=0 send=[t-0@5 t-1@0 u-0@7] forget=[]", done: ok, after: "42/1"},
			{want: []Partition{moved, t1}, plan: "incr id=42 epoch=1 send=[t-0@9] forget=[u-0/2]", done: ok, after: "42/2"},
			{want: []Partition{t1, u0, t1}, plan: "incr id=42 epoch=2 send=[u-0@7] forget=[t-0/1]", done: ok, after: "42/3"},
			{want: []Partition{t1, u0}, plan: "incr id=42 epoch=3 send=[] forget=[]", done: ok, after: "42/4"},
		}},
		{"a topic recreated under its name is forgotten by its old id and sent", []step{
			{want: []Partition{t0, t1}, plan: "full id=0 epoch=0 send=[t-0@5 t-1@0] forget=[]", done: ok, after: "42/1"},
			{want: []Partition{t0, recreated}, plan: "incr id=42 epoch=1 send=[t-1@0] forget=[t-1/1]", done: ok, after: "42/2"},
		}},
		{"without topic ids a new id is only a change", []step{
			{want: []Partition{t0, t1}, plan: "full id=0 epoch=0 send=[t-0@5 t-1@0] forget=[]", done: func(h *Handler) { h.Done(nil, 42, false) }, after: "42/1"},
			{want: []Partition{t0, recreated}, plan: "incr id=42 epoch=1 send=[t-1@0] forget=[]", done: ok, after: "42/2"},
		}},
		{"no session from the broker: full fetches asking for one", []step{
			{want: []Partition{t0}, plan: "full id=0 epoch=0 send=[t-0@5] forget=[]", done: func(h *Handler) { h.Done(nil, 0, true) }, after: "0/0"},
			{want: []Partition{t0}, plan: "full id=0 epoch=0 send=[t-0@5] forget=[]", done: ok, after: "42/1"},
		}},
		{"session id not found: a new session", []step{
			{want: []Partition{t0}, plan: "full id=0 epoch=0 send=[t-0@5] forget=[]", done: ok, after: "42/1"},
			{want: []Partition{t0}, plan: "incr id=42 epoch=1 send=[] forget=[]", done: func(h *Handler) { h.Done(ErrSessionIDNotFound, 0, true) }, after: "0/0"},
			{want: []Partition{t0}, plan: "full id=0 epoch=0 send=[t-0@5] forget=[]", done: func(h *Handler) { h.Done(nil, 43, true) }, after: "43/1"},
		}},
		{"an invalid epoch: a full fetch replacing the session", []step{
			{want: []Partition{t0}, plan: "full id=0 epoch=0 send=[t-0@5] forget=[]", done: ok, after: "42/1"},
			{want: []Partition{t0}, plan: "incr id=42 epoch=1 send=[] forget=[]", done: func(h *Handler) { h.Done(ErrInvalidEpoch, 42, true) }, after: "42/0"},
			{want: []Partition{t0}, plan: "full id=42 epoch=0 send=[t-0@5] forget=[]", done: func(h *Handler) { h.Done(nil, 44, true) }, after: "44/1"},
		}},
		{"no answer: a full fetch replacing the session", []step{
			{want: []Partition{t0}, plan: "full id=0 epoch=0 send=[t-0@5] forget=[]", done: ok, after: "42/1"},
			{want: []Partition{moved}, plan: "incr id=42 epoch=1 send=[t-0@9] forget=[]", done: func(h *Handler) { h.Failed() }, after: "42/0"},
			{want: []Partition{moved}, plan: "full id=42 epoch=0 send=[t-0@9] forget=[]", done: ok, after: "42/1"},
		}},
		{"the broker closed the session", []step{
			{want: []Partition{t0}, plan: "full id=0 epoch=0 send=[t-0@5] forget=[]", done: ok, after: "42/1"},
			{want: nil, plan: "incr id=42 epoch=1 send=[] forget=[t-0/1]", done: func(h *Handler) { h.Done(nil, 0, true) }, after: "0/0"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h Handler
			for i, s := range tt.steps {
				if got := planString(h.Build(s.want)); got != s.plan {
					t.Fatalf("step %d: plan\n%s\nwant\n%s", i, got, s.plan)
				}
				s.done(&h)
				id, epoch := h.Session()
				if got := fmt.Sprintf("%d/%d", id, epoch); got != s.after {
					t.Fatalf("step %d: session %s after the answer, want %s", i, got, s.after)
				}
			}
		})
	}
}

// A Handler and a Cache agree: after any sequence of wanted sets, the
// session holds exactly the partitions wanted, with the offsets wanted.
func TestHandlerAndCacheAgree(t *testing.T) {
	c := New(Config{MaxSlots: 1, EvictionMs: 1000, NewID: ids()})
	var h Handler
	wants := [][]Partition{
		{part("t", 0, 0), part("t", 1, 0)},
		{part("t", 0, 3), part("t", 1, 0)},
		{part("t", 0, 3), part("t", 1, 0), part("u", 0, 1)},
		{part("u", 0, 2)},
		{part("u", 0, 2), part("t", 0, 8)},
		{part("t", 0, 8)},
	}
	for i, want := range wants {
		p := h.Build(want)
		req := Request{SessionID: p.SessionID, Epoch: p.Epoch, Partitions: p.Send, Forgotten: p.Forget}
		x, err := c.Open(req, int64(i))
		if err != nil {
			t.Fatalf("fetch %d: %v", i, err)
		}
		id, _, err := x.Respond(make([]Result, len(x.Partitions())), int64(i))
		h.Done(err, id, false)
		got := map[Key]int64{}
		for _, q := range x.Partitions() {
			got[q.Key] = q.FetchOffset
		}
		if len(got) != len(want) {
			t.Fatalf("fetch %d read %v, want %v", i, got, want)
		}
		for _, w := range want {
			if off, ok := got[w.Key]; !ok || off != w.FetchOffset {
				t.Fatalf("fetch %d read %v, want %v", i, got, want)
			}
		}
	}
}
