package broker_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"samsa/internal/testutil"
)

// TestShareSessionLimitRefusesNewSessions: a broker keeps at most
// group.share.max.share.sessions share sessions; a ShareFetch that would
// open another gets SHARE_SESSION_LIMIT_REACHED and opens nothing, a
// member may still open its own session again, and once a session closes
// (epoch -1) a new one opens. Reference: Kafka
// ShareSessionCache.maybeCreateSession, SharePartitionManager.newContext.
func TestShareSessionLimitRefusesNewSessions(t *testing.T) {
	t.Parallel()
	b := testutil.StartBroker(t, append(shareBrokerConfig, "group.share.max.share.sessions=2")...)
	const topic, group = "share-sessions", "sg-sessions"
	testutil.CreateTopic(t, b.Admin(), topic, 1)
	cl := b.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produceValues(t, cl, topic, 1, 3)
	id := shareTopicID(t, cl, topic)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	members := map[string]*rawShareMember{}
	for _, name := range []string{"m1", "m2", "m3"} {
		m := &rawShareMember{cl: cl, group: group, member: name, maxWait: 10}
		testutil.Eventually(t, 10*time.Second, func() error {
			if r, err := m.heartbeat(ctx, []string{topic}); err != nil || r.ErrorCode != 0 {
				return fmt.Errorf("heartbeat: %v %v", err, r)
			}
			return nil
		})
		members[name] = m
	}
	open := func(m *rawShareMember) int16 {
		t.Helper()
		m.session = 0
		fr, err := m.fetch(ctx, id, 0, nil)
		if err != nil {
			t.Fatal(err)
		}
		return fr.ErrorCode
	}
	wantCode(t, "m1 opens a session", open(members["m1"]), nil)
	wantCode(t, "m2 opens a session", open(members["m2"]), nil)
	wantCode(t, "m3 opens a third session", open(members["m3"]), kerr.ShareSessionLimitReached)
	if st := b.Node.Broker().ShareStats(); st.Sessions != 2 {
		t.Fatalf("%d share sessions open, want 2", st.Sessions)
	}
	wantCode(t, "m1 opens its session again", open(members["m1"]), nil)
	// m3 has no session: its next epoch is refused as unknown.
	m3 := members["m3"]
	m3.session = 1
	if fr, err := m3.fetch(ctx, id, 0, nil); err != nil {
		t.Fatal(err)
	} else {
		wantCode(t, "m3 fetches in a session it could not open", fr.ErrorCode, kerr.ShareSessionNotFound)
	}
	// m2 closes its session; m3 opens one.
	m2 := members["m2"]
	m2.session = -1
	if fr, err := m2.fetch(ctx, id, 0, nil); err != nil || fr.ErrorCode != 0 {
		t.Fatalf("close: %v %+v", err, fr)
	}
	wantCode(t, "m3 opens a session after m2 closed its", open(m3), nil)
}
