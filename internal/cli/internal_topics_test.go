package cli_test

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/cli"
	"samsa/internal/group"
	"samsa/internal/testutil"
)

// syncBuffer is a bytes.Buffer safe for concurrent use, for a broker log.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestInternalTopicsRefuseSettingsThatBreakThem: a hand-made
// __consumer_offsets or __transaction_state must have the partition count
// its coordinator maps keys onto and stay compacted, and neither can be
// deleted. Reference: Kafka refuses a CreateTopics of its internal
// __cluster_metadata with INVALID_REQUEST (ControllerApis.createTopics).
func TestInternalTopicsRefuseSettingsThatBreakThem(t *testing.T) {
	b := testutil.StartBroker(t, "offsets.topic.num.partitions=5", "transaction.state.log.num.partitions=4")
	addr := b.Addr()
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"topic", "create", "__consumer_offsets", "--partitions", "1"}, "offsets.topic.num.partitions"},
		{[]string{"topic", "create", "__transaction_state", "--partitions", "50"}, "transaction.state.log.num.partitions"},
		{[]string{"topic", "create", "__consumer_offsets", "--config", "cleanup.policy=delete"}, "must be compacted"},
	} {
		code, _, errs := samsa(t, addr, tt.args...)
		if code != cli.ExitFailure || !strings.Contains(errs, "INVALID_REQUEST") || !strings.Contains(errs, tt.want) {
			t.Fatalf("samsa %s: exit %d, stderr %q; want INVALID_REQUEST naming %s", strings.Join(tt.args, " "), code, errs, tt.want)
		}
	}
	// With the coordinator's count (here the broker's default, -1) the
	// topic is made as the broker would make it.
	mustSamsa(t, addr, "topic", "create", "__consumer_offsets")
	out := mustSamsa(t, addr, "topic", "describe", "__consumer_offsets")
	if !strings.Contains(out, "Partitions: 5\t") || !strings.Contains(out, "cleanup.policy=compact") {
		t.Fatalf("hand-made __consumer_offsets:\n%s", out)
	}
	code, _, errs := samsa(t, addr, "topic", "delete", "__consumer_offsets")
	if code != cli.ExitFailure || !strings.Contains(errs, "INVALID_TOPIC_EXCEPTION") {
		t.Fatalf("delete __consumer_offsets: exit %d, stderr %q", code, errs)
	}
}

// TestCoordinatorLookupFailureIsLoggedWithItsReason: a __consumer_offsets
// with fewer partitions than offsets.topic.num.partitions (left by a
// version that let it be made by hand) makes some groups' lookups fail;
// the answer and the broker's log say why.
func TestCoordinatorLookupFailureIsLoggedWithItsReason(t *testing.T) {
	var log syncBuffer
	b := testutil.StartBrokerLogging(t, &log)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := b.Node.Cluster().CreateTopic(ctx, "__consumer_offsets", 1, 1, map[string]string{"cleanup.policy": "compact"}); err != nil {
		t.Fatal(err)
	}
	groupID := "billing"
	if p := group.Partition(groupID, 50); p == 0 {
		t.Fatalf("group %s maps to partition 0; pick another", groupID)
	}
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorKey = groupID
	resp, err := req.RequestWith(ctx, b.Client())
	if err != nil {
		t.Fatal(err)
	}
	if resp.ErrorCode != kerr.CoordinatorNotAvailable.Code || resp.ErrorMessage == nil ||
		!strings.Contains(*resp.ErrorMessage, "offsets.topic.num.partitions is 50") {
		t.Fatalf("FindCoordinator: code %d, message %v", resp.ErrorCode, resp.ErrorMessage)
	}
	testutil.Eventually(t, 5*time.Second, func() error {
		if l := log.String(); !strings.Contains(l, "coordinator lookup failed") || !strings.Contains(l, "has only 1 partitions") {
			return testutil.Errorf("broker log does not say why:\n%s", l)
		}
		return nil
	})
}
