package cli

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// visibilityPoll is how often perf produce --visibility reads the high
// watermarks.
const visibilityPoll = 2 * time.Millisecond

// visibilityDrainMax bounds the wait, after the last acknowledgement, for
// every acknowledged record to become visible.
const visibilityDrainMax = 2 * time.Minute

// visibility measures how long acknowledged records stay below the high
// watermark (invisible to ListOffsets and consumers): acked records each
// acknowledgement, and run polls the high watermarks of the topic until
// every acknowledged record is visible. Safe for concurrent use; mu guards
// the fields below it.
type visibility struct {
	mu      sync.Mutex
	pending map[int32][]visAck // by partition, in offset order
	lagNs   []int64
	lastAck time.Time
	// ended is set by end, when the producer's last flush returned;
	// endLeft is how many acknowledged records were invisible then.
	ended   bool
	endLeft int64
}

type visAck struct {
	offset int64
	at     time.Time
}

func newVisibility() *visibility { return &visibility{pending: map[int32][]visAck{}} }

// acked records that offset of partition was acknowledged at at.
func (v *visibility) acked(partition int32, offset int64, at time.Time) {
	v.mu.Lock()
	v.pending[partition] = append(v.pending[partition], visAck{offset, at})
	if at.After(v.lastAck) {
		v.lastAck = at
	}
	v.mu.Unlock()
}

// end says the producer's last flush returned: no more acknowledgements
// come. It is idempotent.
func (v *visibility) end() {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.ended {
		return
	}
	v.ended = true
	for _, q := range v.pending {
		v.endLeft += int64(len(q))
	}
}

// visibilityResult is what perf produce --visibility reports.
type visibilityResult struct {
	// Lag is, per record, the time from its acknowledgement to the first
	// poll that showed it below the high watermark.
	Lag latencies `json:"lag_ms"`
	// DrainMs is the time from the last acknowledgement until every
	// acknowledged record was visible; InvisibleAtLastAck is how many
	// were not visible at the last acknowledgement.
	DrainMs            float64 `json:"drain_ms"`
	InvisibleAtLastAck int64   `json:"invisible_at_last_ack"`
	// Records is how many acknowledged records were seen to become
	// visible: every one, or the run fails.
	Records int64 `json:"records"`
}

// run polls the high watermarks of topic's partitions through cl every
// visibilityPoll until end was called and every acknowledged record is
// visible, or ctx is done. It blocks.
func (v *visibility) run(ctx context.Context, cl *kgo.Client, topic string, partitions []int32) (*visibilityResult, error) {
	tick := time.NewTicker(visibilityPoll)
	defer tick.Stop()
	var endedAt time.Time
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-tick.C:
		}
		hw, err := highWatermarks(ctx, cl, topic, partitions)
		if err != nil {
			return nil, err
		}
		now := time.Now()
		v.mu.Lock()
		left := 0
		for p, q := range v.pending {
			n := 0
			for n < len(q) && q[n].offset < hw[p] {
				v.lagNs = append(v.lagNs, int64(max(0, now.Sub(q[n].at))))
				n++
			}
			v.pending[p] = q[n:]
			left += len(v.pending[p])
		}
		ended := v.ended
		if ended && left == 0 {
			defer v.mu.Unlock()
			return &visibilityResult{
				Lag:                summarize(v.lagNs),
				DrainMs:            ms(int64(max(0, now.Sub(v.lastAck)))),
				InvisibleAtLastAck: v.endLeft,
				Records:            int64(len(v.lagNs)),
			}, nil
		}
		v.mu.Unlock()
		if ended && endedAt.IsZero() {
			endedAt = now
		}
		if ended && now.Sub(endedAt) > visibilityDrainMax {
			return nil, fmt.Errorf("%d acknowledged records still invisible %s after the last acknowledgement", left, visibilityDrainMax)
		}
	}
}

// highWatermarks returns the high watermark of each of topic's partitions
// (ListOffsets latest, read_uncommitted).
func highWatermarks(ctx context.Context, cl *kgo.Client, topic string, partitions []int32) (map[int32]int64, error) {
	req := kmsg.NewPtrListOffsetsRequest()
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	for _, p := range partitions {
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp = p, -1
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, fmt.Errorf("list offsets %s: %w", topic, err)
	}
	out := make(map[int32]int64, len(partitions))
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return nil, fmt.Errorf("list offsets %s/%d: %w", topic, p.Partition, err)
			}
			out[p.Partition] = p.Offset
		}
	}
	return out, nil
}

// visibilityRun is a visibility poller running on its own client for perf
// produce --visibility. A nil *visibilityRun is off.
type visibilityRun struct {
	vis  *visibility
	cl   *kgo.Client
	done chan struct{} // closed when the poller has returned
	res  *visibilityResult
	err  error
}

// startVisibility starts polling topic's high watermarks; finish stops it.
func startVisibility(ctx context.Context, g *globals, topic string) (*visibilityRun, error) {
	parts, err := topicPartitions(ctx, g, topic, -1)
	if err != nil {
		return nil, err
	}
	cl, err := newClient(g)
	if err != nil {
		return nil, err
	}
	r := &visibilityRun{vis: newVisibility(), cl: cl, done: make(chan struct{})}
	go func() { // owned by r: ends once the records are visible after end, waited for by finish
		defer close(r.done)
		r.res, r.err = r.vis.run(ctx, cl, topic, parts)
	}()
	return r, nil
}

func (r *visibilityRun) tracker() *visibility {
	if r == nil {
		return nil
	}
	return r.vis
}

// finish says producing is over (if perfProduce did not) and waits for the
// poller: until every acknowledged record is visible (at most
// visibilityDrainMax) or ctx is done.
func (r *visibilityRun) finish() (*visibilityResult, error) {
	if r == nil {
		return nil, nil
	}
	r.vis.end()
	<-r.done
	r.cl.Close()
	return r.res, r.err
}
