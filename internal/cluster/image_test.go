package cluster

import (
	"log/slog"
	"slices"
	"testing"

	"go.etcd.io/etcd/api/v3/mvccpb"
)

// imageEvents builds watch events for the builder tests.
type imageEvents struct {
	k   keys
	rev int64
	evs []*mvccpb.Event
}

func (e *imageEvents) put(key string, v any) *imageEvents {
	e.rev++
	e.evs = append(e.evs, &mvccpb.Event{Type: mvccpb.Event_PUT,
		Kv: &mvccpb.KeyValue{Key: []byte(key), Value: []byte(mustJSON(v)), ModRevision: e.rev, CreateRevision: e.rev}})
	return e
}

func (e *imageEvents) del(key string) *imageEvents {
	e.rev++
	e.evs = append(e.evs, &mvccpb.Event{Type: mvccpb.Event_DELETE, Kv: &mvccpb.KeyValue{Key: []byte(key), ModRevision: e.rev}})
	return e
}

// take returns the events gathered since the last take.
func (e *imageEvents) take() []*mvccpb.Event {
	evs := e.evs
	e.evs = nil
	return evs
}

const testTopicID = "7b0c1e54-8d3e-4f7a-b1c2-9a8d6e5f4c3b"

func TestBuilderAppliesEventsCopyOnWrite(t *testing.T) {
	k := newKeys("cid")
	b := newBuilder("cid", k, slog.New(slog.DiscardHandler))
	e := &imageEvents{k: k}

	img0 := b.apply(e.put(k.broker(2), brokerValue{Host: "h2", Port: 2, Incarnation: "i2"}).
		put(k.broker(1), brokerValue{Host: "h1", Port: 1, Incarnation: "i1"}).take(), 0)
	if img0.Revision != 2 || img0.ControllerID != 1 || len(img0.Brokers) != 2 || img0.Brokers[2].Host != "h2" {
		t.Fatalf("image 0: %+v", img0)
	}

	// Partition keys before the topic key, in one response, as a create
	// transaction could deliver them.
	img1 := b.apply(e.put(k.partition("t", 1), partitionValue{Leader: 2, LeaderEpoch: 3, ISR: []int32{2, 1}, PartitionEpoch: 4}).
		put(k.partition("t", 0), partitionValue{Leader: 1, ISR: []int32{1}}).
		put(k.topic("t"), topicValue{ID: testTopicID, Replicas: [][]int32{{1, 2}, {2, 1}}}).take(), 0)
	tp := img1.Topics["t"]
	if tp == nil || img1.TopicIDs[tp.ID] != tp || len(tp.Partitions) != 2 || tp.Configs == nil {
		t.Fatalf("image 1 topic %+v", tp)
	}
	if st := tp.Partitions[1]; st.Leader != 2 || st.LeaderEpoch != 3 || st.PartitionEpoch != 4 || !slices.Equal(st.ISR, []int32{2, 1}) || st.ModRevision != 3 {
		t.Fatalf("partition 1 = %+v", st)
	}
	if img1.Revision != 5 || len(img0.Topics) != 0 {
		t.Fatalf("image 1 revision %d, image 0 topics %v", img1.Revision, img0.Topics)
	}
	if !sameMap(img0.Brokers, img1.Brokers) {
		t.Fatal("brokers map copied although no broker changed")
	}

	// A partition change makes a new Topic; the old image keeps the old one.
	img2 := b.apply(e.put(k.partition("t", 0), partitionValue{Leader: 2, LeaderEpoch: 1, ISR: []int32{2}, PartitionEpoch: 1}).take(), 0)
	if img2.Topics["t"] == tp || tp.Partitions[0].Leader != 1 || img2.Topics["t"].Partitions[0].Leader != 2 {
		t.Fatal("partition change was not copy on write")
	}

	// Lowest broker leaves: controller moves; configs come and go.
	img3 := b.apply(e.del(k.broker(1)).
		put(k.brokerConfig(""), configsValue{Configs: map[string]string{"a": "1"}}).
		put(k.brokerConfig("2"), configsValue{Configs: map[string]string{"b": "2"}}).
		put(k.groupConfig("g/1"), configsValue{Configs: map[string]string{"share.auto.offset.reset": "earliest"}}).take(), 0)
	if img3.ControllerID != 2 || len(img3.Brokers) != 1 || len(img2.Brokers) != 2 {
		t.Fatalf("after broker 1 left: controller %d brokers %v (before %v)", img3.ControllerID, img3.Brokers, img2.Brokers)
	}
	if img3.BrokerConfigs[""]["a"] != "1" || img3.BrokerConfigs["2"]["b"] != "2" || len(img2.BrokerConfigs) != 0 {
		t.Fatalf("broker configs %v (before %v)", img3.BrokerConfigs, img2.BrokerConfigs)
	}

	if img3.GroupConfigs["g/1"]["share.auto.offset.reset"] != "earliest" || len(img2.GroupConfigs) != 0 {
		t.Fatalf("group configs %v (before %v)", img3.GroupConfigs, img2.GroupConfigs)
	}
	if img := b.apply(e.del(k.groupConfig("g/1")).take(), 0); len(img.GroupConfigs) != 0 || len(img3.GroupConfigs) != 1 {
		t.Fatalf("after delete: group configs %v (before %v)", img.GroupConfigs, img3.GroupConfigs)
	}

	// Deleting the topic and its partitions removes it from both maps.
	img4 := b.apply(e.del(k.topic("t")).del(k.partition("t", 0)).del(k.partition("t", 1)).del(k.broker(2)).take(), 0)
	if len(img4.Topics) != 0 || len(img4.TopicIDs) != 0 || img4.ControllerID != -1 || len(b.parts) != 0 {
		t.Fatalf("after delete: topics %v ids %v controller %d parts %v", img4.Topics, img4.TopicIDs, img4.ControllerID, b.parts)
	}
	if img3.Topics["t"] == nil {
		t.Fatal("delete changed an earlier image")
	}

	// Bad values and unknown keys are skipped, not fatal.
	bad := []*mvccpb.Event{
		{Type: mvccpb.Event_PUT, Kv: &mvccpb.KeyValue{Key: []byte(k.topic("u")), Value: []byte("{"), ModRevision: 20}},
		{Type: mvccpb.Event_PUT, Kv: &mvccpb.KeyValue{Key: []byte(k.topic("v")), Value: []byte(`{"id":"nope","replicas":[[0]]}`), ModRevision: 21}},
		{Type: mvccpb.Event_PUT, Kv: &mvccpb.KeyValue{Key: []byte("/samsa/cid/controller"), Value: []byte("x"), ModRevision: 22}},
	}
	img5 := b.apply(bad, 0)
	if len(img5.Topics) != 0 || img5.Revision != 22 {
		t.Fatalf("bad values: topics %v revision %d", img5.Topics, img5.Revision)
	}
}

func TestBuilderControllerElection(t *testing.T) {
	k := newKeys("cid")
	b := newBuilder("cid", k, slog.New(slog.DiscardHandler))
	e := &imageEvents{k: k}
	img := b.apply(e.put(k.broker(3), brokerValue{}).put(k.broker(1), brokerValue{}).take(), 0)
	if img.ControllerID != 1 {
		t.Fatalf("without candidates controller %d, want the lowest broker 1", img.ControllerID)
	}
	img = b.apply(e.put(k.controllerCandidate(3), "3").put(k.controllerCandidate(1), "1").take(), 0)
	if img.ControllerID != 3 {
		t.Fatalf("controller %d, want 3 (oldest candidate)", img.ControllerID)
	}
	img = b.apply(e.del(k.controllerCandidate(3)).take(), 0)
	if img.ControllerID != 1 {
		t.Fatalf("after 3 withdrew, controller %d, want 1", img.ControllerID)
	}
	img = b.apply(e.put(k.controllerCandidate(3), "3").take(), 0)
	if img.ControllerID != 1 {
		t.Fatalf("a returning candidate took over: controller %d", img.ControllerID)
	}
}

func TestBuilderMissingPartitionState(t *testing.T) {
	k := newKeys("cid")
	b := newBuilder("cid", k, slog.New(slog.DiscardHandler))
	e := &imageEvents{k: k}
	img := b.apply(e.put(k.topic("t"), topicValue{ID: testTopicID, Replicas: [][]int32{{0}, {0}}}).
		put(k.partition("t", 1), partitionValue{Leader: 0, ISR: []int32{0}}).
		put(k.partition("t", 5), partitionValue{Leader: 0}).take(), 0)
	tp := img.Topics["t"]
	if len(tp.Partitions) != 2 || tp.Partitions[0].Leader != -1 || tp.Partitions[1].Leader != 0 {
		t.Fatalf("partitions %+v", tp.Partitions)
	}
	if _, ok := img.Partition("t", 5); ok {
		t.Fatal("partition beyond the assignment is in the image")
	}
}

func sameMap[K comparable, V any](a, b map[K]V) bool {
	// Maps are reference types: adding to one shows in the other if shared.
	var zero K
	_, had := b[zero]
	if had {
		return false
	}
	var v V
	a[zero] = v
	_, shared := b[zero]
	delete(a, zero)
	return shared
}
