package cluster

import (
	"encoding/json"
	"log/slog"
	"maps"
	"slices"

	"go.etcd.io/etcd/api/v3/mvccpb"
)

// Broker is a registered broker.
type Broker struct {
	NodeID      int32
	Host        string
	Port        int32
	Rack        *string
	Incarnation string // unique per process start
	// Endpoints are the broker's advertised listeners (see Endpoint).
	Endpoints []Endpoint
	// ShuttingDown: the broker is in controlled shutdown.
	ShuttingDown bool
	// UncleanShutdown: the process started on a log dir its predecessor
	// did not close cleanly (no clean-shutdown marker): a log it kept with
	// a relaxed flush policy may have lost writes it had reported to its
	// leader (KIP-966's unclean shutdown).
	UncleanShutdown bool
	// EmptyLogDir: the process started on a log dir that holds no
	// partition (new, or wiped): it has lost everything it had reported,
	// whatever the flush policy.
	EmptyLogDir bool
	// FlushIntervalMessages is the broker's static
	// log.flush.interval.messages, the default of a topic's flush.messages
	// where neither the topic nor a dynamic broker config sets it; 0 when
	// the registration predates the field (treated as 1, samsa's default).
	FlushIntervalMessages int64
	// OfflineLogDirs are the broker's failed log dirs, and
	// OfflineReplicas the partitions (by topic) whose replica on the
	// broker is in one of them; nil when none. Never modified.
	OfflineLogDirs  []string
	OfflineReplicas map[string][]int32
}

// ReplicaOffline reports whether the broker's replica of partition p of
// topic is in a failed log dir.
func (b Broker) ReplicaOffline(topic string, p int32) bool {
	return slices.Contains(b.OfflineReplicas[topic], p)
}

// ReplicaEligible reports whether broker id may lead or stay in the ISR of
// partition p of topic: it is registered, not shutting down, and its
// replica is not in a failed log dir.
func (img *Image) ReplicaEligible(id int32, topic string, p int32) bool {
	br, ok := img.Brokers[id]
	return ok && !br.ShuttingDown && !br.ReplicaOffline(topic, p)
}

// Endpoint is one advertised listener of a broker.
type Endpoint struct {
	Listener         string `json:"listener"`
	Host             string `json:"host"`
	Port             int32  `json:"port"`
	SecurityProtocol string `json:"security_protocol"`
}

// Endpoint returns the broker's address on listener. A broker registered
// without endpoints (before named listeners) has its one address on every
// listener. ok is false when the broker lacks the listener: Kafka leaves
// such a broker out of the answer. An empty listener names the first
// advertised listener (Host, Port).
func (b Broker) Endpoint(listener string) (host string, port int32, ok bool) {
	if len(b.Endpoints) == 0 || listener == "" {
		return b.Host, b.Port, true
	}
	for _, e := range b.Endpoints {
		if e.Listener == listener {
			return e.Host, e.Port, true
		}
	}
	return "", 0, false
}

// PartitionState is the replicated state of one partition
// (/samsa/<cluster>/partitions/<topic>/<p>).
type PartitionState struct {
	Leader         int32
	LeaderEpoch    int32
	ISR            []int32
	PartitionEpoch int32
	// AddingReplicas and RemovingReplicas are set while a reassignment is
	// in progress (KIP-455): the topic's replica list for the partition is
	// then the union of the original and the target replicas, the target
	// being it without RemovingReplicas and the original it without
	// AddingReplicas. Both are nil otherwise.
	AddingReplicas   []int32
	RemovingReplicas []int32
	// LeaderIncarnation is the registration incarnation of the leader's
	// process when it was elected at LeaderEpoch. A leader that restarts
	// (same node id, new incarnation) does not lead at the old epoch: the
	// controller elects again and bumps LeaderEpoch, so that records the
	// old process wrote in that epoch and the new one may have lost (an
	// unsynced tail) are told apart by epoch (KIP-101). Empty when
	// unknown (a leaderless partition, or state written without it).
	LeaderIncarnation string
	// ELR is the eligible leader replicas (KIP-966): replicas that left
	// the ISR while it was below min.insync.replicas. The high watermark
	// does not advance in that state, so each has every committed record
	// and may lead when no ISR member can. Empty while the ISR has at
	// least min.insync.replicas members.
	ELR []int32
	// LastKnownELR is the ELR members dropped because their unclean
	// shutdown may have lost records they had reported (KIP-966): no
	// longer electable, kept for the operator.
	LastKnownELR []int32
	// ModRevision is the etcd revision of the key; CAS writes compare it.
	ModRevision int64
}

// Reassigning reports whether a reassignment of the partition is in
// progress.
func (st PartitionState) Reassigning() bool {
	return len(st.AddingReplicas) > 0 || len(st.RemovingReplicas) > 0
}

// Topic is a topic as the image holds it (/samsa/<cluster>/topics/<name>
// plus its partition state keys).
type Topic struct {
	Name       string
	ID         [16]byte
	Replicas   [][]int32         // replica assignment per partition
	Configs    map[string]string // topic config overrides (only those set)
	Partitions []PartitionState  // same length as Replicas once loaded
	// ModRevision is the etcd revision of the topics/<name> key; a write
	// that changes the replica assignment compares it.
	ModRevision int64
}

// Image is an immutable snapshot of the cluster metadata. Never modify one,
// nor any map, slice or Topic reached from it: later images share them.
type Image struct {
	ClusterID string
	Revision  int64 // etcd revision the image reflects
	// ControllerID is the winner of the controller election: the broker
	// whose candidate key is oldest. Without candidates it is the lowest
	// registered node id, and -1 with no brokers either.
	ControllerID int32
	// controllerRev is the CreateRevision of ControllerID's candidate
	// key, 0 when it has none. The controller's writes compare it
	// (Cluster.controllerFence).
	controllerRev int64
	Brokers       map[int32]Broker
	Topics        map[string]*Topic
	TopicIDs      map[[16]byte]*Topic
	// BrokerConfigs holds dynamic broker configs: key "" is cluster-wide
	// default, otherwise the node id in decimal.
	BrokerConfigs map[string]map[string]string
	// GroupConfigs holds the group config overrides (the GROUP config
	// resource) by group id; a group without overrides has no entry.
	GroupConfigs map[string]map[string]string
	// ScramCredentials maps user -> mechanism -> credential.
	ScramCredentials map[string]map[string]ScramCredential
	// ACLs is every ACL binding; replaced (a new pointer) only when an
	// ACL key changes.
	ACLs *ACLSet
	// Quotas is every client quota; replaced (a new pointer) only when a
	// quota key changes.
	Quotas *QuotaSet
}

// BrokerIDs returns the ids of the registered brokers in increasing order.
// The caller owns the returned slice.
func (img *Image) BrokerIDs() []int32 {
	return slices.Sorted(maps.Keys(img.Brokers))
}

// Partition returns the state of partition p of topic, and whether the
// image has it.
func (img *Image) Partition(topic string, p int32) (PartitionState, bool) {
	t := img.Topics[topic]
	if t == nil || p < 0 || int(p) >= len(t.Partitions) {
		return PartitionState{}, false
	}
	return t.Partitions[p], true
}

// missingPartition fills Topic.Partitions for an index whose state key has
// not been seen (never the case for keys written by this package, which
// writes a topic and its partitions in one transaction).
var missingPartition = PartitionState{Leader: -1, LeaderEpoch: -1}

// builder turns etcd key-values and watch events into successive images.
// It is owned by one goroutine (Open, then the watch loop) and is not safe
// for concurrent use. Images it returns are never modified afterwards.
type builder struct {
	keys keys
	log  *slog.Logger
	cur  *Image

	// topicVals and parts hold the decoded topic and partition keys, also
	// those that do not (yet) make a complete Topic.
	topicVals map[string]topicValue
	topicRevs map[string]int64 // ModRevision of each key in topicVals
	parts     map[string]map[int32]PartitionState
	// candidates maps the node of each controller candidate key to the
	// key's CreateRevision; the smallest wins.
	candidates map[int32]int64
}

func newBuilder(clusterID string, k keys, log *slog.Logger) *builder {
	b := &builder{keys: k, log: log}
	b.reset(clusterID)
	return b
}

func (b *builder) reset(clusterID string) {
	b.cur = &Image{
		ClusterID:     clusterID,
		ControllerID:  -1,
		Brokers:       map[int32]Broker{},
		Topics:        map[string]*Topic{},
		TopicIDs:      map[[16]byte]*Topic{},
		BrokerConfigs: map[string]map[string]string{},
		GroupConfigs:  map[string]map[string]string{},

		ScramCredentials: map[string]map[string]ScramCredential{},
		ACLs:             &ACLSet{Bindings: map[string][]byte{}},
		Quotas:           &QuotaSet{Entries: map[string]map[string]float64{}},
	}
	b.topicVals = map[string]topicValue{}
	b.topicRevs = map[string]int64{}
	b.parts = map[string]map[int32]PartitionState{}
	b.candidates = map[int32]int64{}
}

// load replaces the whole state with the result of one Get of the prefix
// taken at revision rev.
func (b *builder) load(kvs []*mvccpb.KeyValue, rev int64) *Image {
	b.reset(b.cur.ClusterID)
	evs := make([]*mvccpb.Event, len(kvs))
	for i, kv := range kvs {
		evs[i] = &mvccpb.Event{Type: mvccpb.Event_PUT, Kv: kv}
	}
	return b.apply(evs, rev)
}

// apply returns the image after evs, copying only what they change. rev is
// the revision the caller knows the events bring the image to (0: take it
// from the events).
func (b *builder) apply(evs []*mvccpb.Event, rev int64) *Image {
	prev := b.cur
	next := *prev
	var brokersCloned, configsCloned, groupConfigsCloned, electionChanged, scramCloned, aclsCloned, quotasCloned bool
	dirty := map[string]bool{}
	for _, ev := range evs {
		kv := ev.Kv
		if kv.ModRevision > rev {
			rev = kv.ModRevision
		}
		del := ev.Type == mvccpb.Event_DELETE
		pk := b.keys.parse(string(kv.Key))
		switch pk.kind {
		case kindBroker:
			if !brokersCloned {
				next.Brokers, brokersCloned = maps.Clone(prev.Brokers), true
			}
			var v brokerValue
			if del || !b.decode(kv, &v) {
				delete(next.Brokers, pk.broker)
				continue
			}
			next.Brokers[pk.broker] = Broker{NodeID: pk.broker, Host: v.Host, Port: v.Port, Rack: v.Rack, Incarnation: v.Incarnation, ShuttingDown: v.ShuttingDown, Endpoints: v.Endpoints,
				UncleanShutdown: v.UncleanShutdown, EmptyLogDir: v.EmptyLogDir, FlushIntervalMessages: v.FlushIntervalMessages,
				OfflineLogDirs: v.OfflineLogDirs, OfflineReplicas: v.OfflineReplicas}
		case kindController:
			electionChanged = true
			if del {
				delete(b.candidates, pk.broker)
			} else {
				b.candidates[pk.broker] = kv.CreateRevision
			}
		case kindTopic:
			dirty[pk.topic] = true
			var v topicValue
			if del || !b.decode(kv, &v) {
				delete(b.topicVals, pk.topic)
				delete(b.topicRevs, pk.topic)
				continue
			}
			b.topicVals[pk.topic] = v
			b.topicRevs[pk.topic] = kv.ModRevision
		case kindPartition:
			dirty[pk.topic] = true
			var v partitionValue
			if del || !b.decode(kv, &v) {
				if m := b.parts[pk.topic]; m != nil {
					delete(m, pk.partition)
					if len(m) == 0 {
						delete(b.parts, pk.topic)
					}
				}
				continue
			}
			m := b.parts[pk.topic]
			if m == nil {
				m = map[int32]PartitionState{}
				b.parts[pk.topic] = m
			}
			m[pk.partition] = PartitionState{
				Leader:            v.Leader,
				LeaderEpoch:       v.LeaderEpoch,
				ISR:               v.ISR,
				PartitionEpoch:    v.PartitionEpoch,
				AddingReplicas:    v.AddingReplicas,
				RemovingReplicas:  v.RemovingReplicas,
				LeaderIncarnation: v.LeaderIncarnation,
				ELR:               v.ELR,
				LastKnownELR:      v.LastKnownELR,
				ModRevision:       kv.ModRevision,
			}
		case kindBrokerConfig:
			if !configsCloned {
				next.BrokerConfigs, configsCloned = maps.Clone(prev.BrokerConfigs), true
			}
			var v configsValue
			if del || !b.decode(kv, &v) || len(v.Configs) == 0 {
				delete(next.BrokerConfigs, pk.node)
				continue
			}
			next.BrokerConfigs[pk.node] = v.Configs
		case kindGroupConfig:
			if !groupConfigsCloned {
				next.GroupConfigs, groupConfigsCloned = maps.Clone(prev.GroupConfigs), true
			}
			var v configsValue
			if del || !b.decode(kv, &v) || len(v.Configs) == 0 {
				delete(next.GroupConfigs, pk.group)
				continue
			}
			next.GroupConfigs[pk.group] = v.Configs
		case kindScram, kindACL:
			b.applySecurity(&next, prev, pk, kv, del, &scramCloned, &aclsCloned)
		case kindQuota:
			b.applyQuota(&next, prev, pk.entity, kv, del, &quotasCloned)
		}
	}
	if len(dirty) > 0 {
		next.Topics = maps.Clone(prev.Topics)
		next.TopicIDs = maps.Clone(prev.TopicIDs)
		for name := range dirty {
			if old := next.Topics[name]; old != nil {
				delete(next.Topics, name)
				if next.TopicIDs[old.ID] == old {
					delete(next.TopicIDs, old.ID)
				}
			}
			if t := b.topic(name); t != nil {
				next.Topics[name] = t
				next.TopicIDs[t.ID] = t
			}
		}
	}
	if brokersCloned || electionChanged {
		next.ControllerID = b.controller(next.Brokers)
		next.controllerRev = b.candidates[next.ControllerID]
	}
	if rev > next.Revision {
		next.Revision = rev
	}
	b.cur = &next
	return b.cur
}

// controller returns the election winner: the candidate with the oldest
// key (ties, impossible within one etcd, go to the lower id), else the
// lowest registered broker, else -1.
func (b *builder) controller(brokers map[int32]Broker) int32 {
	winner, oldest := int32(-1), int64(0)
	for id, rev := range b.candidates {
		if winner < 0 || rev < oldest || (rev == oldest && id < winner) {
			winner, oldest = id, rev
		}
	}
	if winner >= 0 {
		return winner
	}
	for id := range brokers {
		if winner < 0 || id < winner {
			winner = id
		}
	}
	return winner
}

// topic builds the Topic for name from the decoded keys, or nil if the
// topic key is absent or invalid.
func (b *builder) topic(name string) *Topic {
	v, ok := b.topicVals[name]
	if !ok {
		return nil
	}
	id, err := parseTopicID(v.ID)
	if err != nil {
		b.log.Warn("cluster: ignoring topic with a bad id", "topic", name, "err", err)
		return nil
	}
	t := &Topic{
		Name:        name,
		ID:          id,
		Replicas:    v.Replicas,
		Configs:     v.Configs,
		Partitions:  make([]PartitionState, len(v.Replicas)),
		ModRevision: b.topicRevs[name],
	}
	if t.Configs == nil {
		t.Configs = map[string]string{}
	}
	parts := b.parts[name]
	for i := range t.Partitions {
		st, ok := parts[int32(i)]
		if !ok {
			st = missingPartition
		}
		t.Partitions[i] = st
	}
	return t
}

func (b *builder) decode(kv *mvccpb.KeyValue, v any) bool {
	if err := json.Unmarshal(kv.Value, v); err != nil {
		b.log.Warn("cluster: ignoring key with a bad value", "key", string(kv.Key), "err", err)
		return false
	}
	return true
}
