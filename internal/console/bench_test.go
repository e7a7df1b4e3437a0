package console_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// BenchmarkConsolePage loads the console's pages of a broker with 1,000
// topics and 100 groups (each with offsets on 10 topics): one iteration
// is one page as a browser gets it, all the Kafka requests behind it
// included.
//
//	go test -run='^$' -bench=ConsolePage -benchtime=20x ./internal/console
func BenchmarkConsolePage(b *testing.B) {
	const topics, groups = 1000, 100
	br, w := startConsole(b)
	adm := br.Admin()
	ctx := ctxT(b, 5*time.Minute)
	names := make([]string, topics)
	for i := range names {
		names[i] = fmt.Sprintf("topic-%04d", i)
	}
	for i := 0; i < topics; i += 100 {
		resps, err := adm.CreateTopics(ctx, 1, 1, nil, names[i:i+100]...)
		if err == nil {
			err = resps.Error()
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	cl := br.Client()
	var recs []*kgo.Record
	for i := range 100 {
		recs = append(recs, &kgo.Record{Topic: names[i], Value: []byte("v")})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		b.Fatal(err)
	}
	for g := range groups {
		os := kadm.Offsets{}
		for i := range 10 {
			os.Add(kadm.Offset{Topic: names[(g*10+i)%100], Partition: 0, At: 0, LeaderEpoch: -1})
		}
		if err := adm.CommitAllOffsets(ctx, fmt.Sprintf("group-%03d", g), os); err != nil {
			b.Fatal(err)
		}
	}
	for _, page := range []struct{ name, path, table string }{
		{"topics", "/console/topics", "topics"},
		{"groups", "/console/groups", "groups"},
		{"overview", "/console/", "brokers"},
		{"topic", "/console/topic?name=topic-0007", "partitions"},
		{"group", "/console/group?name=group-042", "offsets"},
		{"messages", "/console/messages?topic=topic-0007", "records"},
	} {
		b.Run("page="+page.name, func(b *testing.B) {
			// Check once that the page shows what it must.
			n := len(rows(b, w.mustGet(page.path), page.table))
			switch page.name {
			case "topics":
				if n != topics {
					b.Fatalf("topics page lists %d topics, want %d", n, topics)
				}
			case "groups":
				if n != groups {
					b.Fatalf("groups page lists %d groups, want %d", n, groups)
				}
			}
			b.ReportAllocs()
			for b.Loop() {
				if st, _ := w.get(page.path); st != http.StatusOK {
					b.Fatalf("GET %s: %d", page.path, st)
				}
			}
		})
	}
}
