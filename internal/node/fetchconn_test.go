package node_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	kgosasl "github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"samsa/internal/node"
	"samsa/internal/record"
	"samsa/internal/testutil"
)

// The replica fetch connection reads a Fetch response into a pooled
// buffer whose batches are the records produced, over plaintext and
// after SASL; a released buffer serves the next response; a cancelled
// context ends a parked fetch at once; a wrong password fails the dial.
func TestFetchConnFetchesRecordsOverPlaintextAndSASL(t *testing.T) {
	t.Parallel()
	b := testutil.StartBroker(t,
		"listeners=PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
		"inter.broker.listener.name=PLAINTEXT",
		"sasl.enabled.mechanisms=PLAIN",
		`listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="a";`,
	)
	var saslAddr string
	for _, br := range b.Node.Image().Brokers {
		if host, port, ok := br.Endpoint("SASL_PLAINTEXT"); ok {
			saslAddr = fmt.Sprintf("%s:%d", host, port)
		}
	}
	if saslAddr == "" {
		t.Fatal("no SASL_PLAINTEXT endpoint registered")
	}
	adm := b.Admin()
	testutil.CreateTopic(t, adm, "fc", 1)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cl := b.Client(kgo.DefaultProduceTopic("fc"))
	want := []string{"one", "two", "three"}
	for _, v := range want {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	td, err := adm.ListTopics(ctx, "fc")
	if err != nil {
		t.Fatal(err)
	}
	topicID := [16]byte(td["fc"].ID)

	for _, tc := range []struct {
		name string
		addr string
		mech kgosasl.Mechanism
	}{
		{"plaintext", b.Addr(), nil},
		{"sasl-plain", saslAddr, plain.Auth{User: "alice", Pass: "a"}.AsMechanism()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fc, err := node.DialFetchConn(ctx, tc.addr, tc.mech)
			if err != nil {
				t.Fatal(err)
			}
			defer fc.Close()
			for round := range 3 { // later rounds reuse released buffers
				resp, release, err := fc.Fetch(ctx, fetchReq(topicID, 0, 0))
				if err != nil {
					t.Fatalf("round %d: %v", round, err)
				}
				if got := fetchedValues(t, resp); strings.Join(got, ",") != strings.Join(want, ",") {
					t.Fatalf("round %d: fetched %q, want %q", round, got, want)
				}
				release()
			}
			// A fetch parked at the log end ends with its context.
			pctx, pcancel := context.WithCancel(ctx)
			time.AfterFunc(100*time.Millisecond, pcancel)
			start := time.Now()
			_, _, err = fc.Fetch(pctx, fetchReq(topicID, 3, 20_000))
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("parked fetch after cancel: %v", err)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Fatalf("parked fetch took %v to end after its context", d)
			}
		})
	}

	t.Run("wrong-password", func(t *testing.T) {
		_, err := node.DialFetchConn(ctx, saslAddr, plain.Auth{User: "alice", Pass: "wrong"}.AsMechanism())
		if err == nil || !strings.Contains(err.Error(), "SaslAuthenticate") {
			t.Fatalf("dial with a wrong password: %v", err)
		}
	})
}

func fetchReq(topicID [16]byte, offset int64, waitMs int32) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = -1
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes = waitMs, 1, 1<<20
	req.SessionEpoch = -1 // no fetch session
	t := kmsg.NewFetchRequestTopic()
	t.Topic, t.TopicID = "fc", topicID
	p := kmsg.NewFetchRequestTopicPartition()
	p.Partition, p.FetchOffset, p.PartitionMaxBytes = 0, offset, 1<<20
	p.CurrentLeaderEpoch, p.LogStartOffset, p.LastFetchedEpoch = -1, -1, -1
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	return req
}

// fetchedValues returns the values of the records in resp's one partition.
func fetchedValues(t *testing.T, resp *kmsg.FetchResponse) []string {
	t.Helper()
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("response of %d topics", len(resp.Topics))
	}
	p := resp.Topics[0].Partitions[0]
	if p.ErrorCode != 0 {
		t.Fatalf("partition error %d", p.ErrorCode)
	}
	var out []string
	for buf := p.RecordBatches; len(buf) > 0; {
		b, rest, err := record.Split(buf)
		if err != nil {
			t.Fatal(err)
		}
		buf = rest
		rs, err := b.Records(1 << 20)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rs {
			out = append(out, string(bytes.Clone(r.Value)))
		}
	}
	return out
}

func TestSkipTags(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in      []byte
		rest    []byte
		wantErr bool
	}{
		{[]byte{0, 7}, []byte{7}, false},
		{[]byte{1, 5, 2, 0xaa, 0xbb, 9}, []byte{9}, false},
		{[]byte{2, 1, 0, 2, 1, 0xcc}, []byte{}, false},
		{[]byte{}, nil, true},
		{[]byte{1, 5, 3, 0xaa}, nil, true}, // tag longer than the body
		{[]byte{1}, nil, true},
	} {
		rest, err := node.SkipTags(tc.in)
		if (err != nil) != tc.wantErr || (!tc.wantErr && !bytes.Equal(rest, tc.rest)) {
			t.Errorf("skipTags(%x) = %x, %v; want %x, error %v", tc.in, rest, err, tc.rest, tc.wantErr)
		}
	}
}

func TestRespClassFitsTheResponse(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ n, class int }{
		{1, 0}, {64 << 10, 0}, {64<<10 + 1, 1}, {128 << 10, 1}, {10<<20 + 100, 8}, {256 << 20, 12},
	} {
		if got := node.RespClass(tc.n); got != tc.class {
			t.Errorf("respClass(%d) = %d, want %d", tc.n, got, tc.class)
		}
		if size := 1 << (node.RespClass(tc.n) + 16); size < tc.n {
			t.Errorf("class of %d holds only %d bytes", tc.n, size)
		}
	}
}
