package acl

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// benchImage returns n bindings shaped like a large deployment: 1000
// principals, 60% LITERAL topics, 30% PREFIXED topics with prefixes of many
// lengths, and the rest on groups and the wildcard, some DENY.
func benchBindings(n int) []Binding {
	r := rand.New(rand.NewPCG(1, 2))
	bs := make([]Binding, 0, n)
	for i := range n {
		prin := fmt.Sprintf("User:svc-%d", r.IntN(1000))
		perm := allow
		if r.IntN(20) == 0 {
			perm = deny
		}
		op := []kmsg.ACLOperation{read, write, describe, all}[r.IntN(4)]
		switch k := r.IntN(10); {
		case k < 6:
			bs = append(bs, lit(topic, fmt.Sprintf("team-%d.topic-%d", r.IntN(100), i), prin, "*", op, perm))
		case k < 9:
			name := fmt.Sprintf("team-%d.topic-%d", r.IntN(100), r.IntN(n))
			bs = append(bs, pre(topic, name[:1+r.IntN(len(name))], prin, "*", op, perm))
		default:
			bs = append(bs, lit(group, fmt.Sprintf("group-%d", i), prin, "*", read, allow))
		}
	}
	bs = append(bs, lit(topic, "*", "User:*", "*", describe, allow))
	return bs
}

func BenchmarkAuthorize(b *testing.B) {
	for _, n := range []int{100, 1000, 10000} {
		b.Run(fmt.Sprintf("acls=%d", n), func(b *testing.B) {
			bs := benchBindings(n)
			a := NewAuthorizer(Config{SuperUsers: []string{"User:admin"}}, NewImage(bs))
			type req struct{ prin, name string }
			reqs := make([]req, 1024)
			r := rand.New(rand.NewPCG(3, 4))
			for i := range reqs {
				reqs[i] = req{fmt.Sprintf("User:svc-%d", r.IntN(1000)), fmt.Sprintf("team-%d.topic-%d", r.IntN(100), r.IntN(n))}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				q := reqs[i&1023]
				a.Authorize(q.prin, h1, read, topic, q.name)
			}
		})
	}
}

func BenchmarkAuthorizeByResourceType(b *testing.B) {
	bs := benchBindings(10000)
	a := NewAuthorizer(Config{}, NewImage(bs))
	prins := make([]string, 1000)
	for i := range prins {
		prins[i] = fmt.Sprint("User:svc-", i)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		a.AuthorizeByResourceType(prins[i%1000], h1, write, topic)
	}
}
