package cluster

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/google/uuid"
)

// Key schema. Every key but clusterIDKey lives under the prefix
// "/samsa/<cluster-id>/"; see doc.go and docs/etcd-keys.md.
const (
	// clusterIDKey holds the cluster id of the (single) samsa cluster that
	// uses this etcd. It sits outside the per-cluster prefix so a broker
	// that has no meta.properties yet can find the prefix.
	clusterIDKey = "/samsa/cluster-id"

	brokersDir       = "brokers/"
	topicsDir        = "topics/"
	partitionsDir    = "partitions/"
	brokerConfigsDir = "configs/brokers/"
	groupConfigsDir  = "configs/groups/"
	controllerDir    = "controller/"

	// defaultConfigNode is the key segment for cluster-wide broker configs
	// (Image.BrokerConfigs[""]).
	defaultConfigNode = "default"
)

// keys builds etcd keys for one cluster prefix.
type keys struct {
	prefix string // "/samsa/<cluster-id>/"
}

func newKeys(clusterID string) keys { return keys{prefix: "/samsa/" + clusterID + "/"} }

func (k keys) broker(id int32) string   { return k.prefix + brokersDir + strconv.Itoa(int(id)) }
func (k keys) topic(name string) string { return k.prefix + topicsDir + name }

// controllerCandidate is node's entry in the controller election.
func (k keys) controllerCandidate(id int32) string {
	return k.prefix + controllerDir + strconv.Itoa(int(id))
}

// partitionsOf is the prefix of every partition key of topic; the trailing
// slash keeps topic "a" from matching the partitions of topic "a.b".
func (k keys) partitionsOf(topic string) string { return k.prefix + partitionsDir + topic + "/" }

func (k keys) partition(topic string, p int32) string {
	return k.partitionsOf(topic) + strconv.Itoa(int(p))
}

// brokerConfig returns the key of node's dynamic configs; node "" is the
// cluster-wide default.
func (k keys) brokerConfig(node string) string {
	if node == "" {
		node = defaultConfigNode
	}
	return k.prefix + brokerConfigsDir + node
}

// groupConfig returns the key of a group's configs. Group ids may hold
// any character, '/' too: everything after the directory is the id.
func (k keys) groupConfig(group string) string { return k.prefix + groupConfigsDir + group }

// brokerValue is the JSON value of brokers/<id>.
type brokerValue struct {
	Host        string  `json:"host"`
	Port        int32   `json:"port"`
	Rack        *string `json:"rack,omitempty"`
	Incarnation string  `json:"incarnation"`
	// Endpoints are the advertised listeners; absent in registrations
	// written before named listeners, which had only host and port.
	Endpoints []Endpoint `json:"endpoints,omitempty"`
	// ShuttingDown is set by a broker in controlled shutdown: the
	// controller moves its leaderships away and elects no leader on it.
	ShuttingDown bool `json:"shutting_down,omitempty"`
	// UncleanShutdown and FlushIntervalMessages: see Broker.
	UncleanShutdown       bool  `json:"unclean_shutdown,omitempty"`
	EmptyLogDir           bool  `json:"empty_log_dir,omitempty"`
	FlushIntervalMessages int64 `json:"log_flush_interval_messages,omitempty"`
	// OfflineLogDirs are the broker's log dirs that failed (a write or
	// sync there failed: full, I/O error, read-only), and
	// OfflineReplicas the partitions, by topic, whose replica here was
	// in one of them (KIP-112). The controller elects no leader among
	// offline replicas and removes them from the ISR. The registration
	// is bound to the broker's lease, so a restart (with the dir
	// repaired) starts with none.
	OfflineLogDirs  []string           `json:"offline_log_dirs,omitempty"`
	OfflineReplicas map[string][]int32 `json:"offline_replicas,omitempty"`
}

// topicValue is the JSON value of topics/<name>.
type topicValue struct {
	ID       string            `json:"id"`
	Replicas [][]int32         `json:"replicas"`
	Configs  map[string]string `json:"configs"`
}

// partitionValue is the JSON value of partitions/<topic>/<p>.
type partitionValue struct {
	Leader         int32   `json:"leader"`
	LeaderEpoch    int32   `json:"leader_epoch"`
	ISR            []int32 `json:"isr"`
	PartitionEpoch int32   `json:"partition_epoch"`
	// AddingReplicas and RemovingReplicas describe a reassignment in
	// progress (KIP-455); both are left out when there is none.
	AddingReplicas   []int32 `json:"adding_replicas,omitempty"`
	RemovingReplicas []int32 `json:"removing_replicas,omitempty"`
	// LeaderIncarnation is the leader's registration incarnation at its
	// election (PartitionState.LeaderIncarnation).
	LeaderIncarnation string `json:"leader_incarnation,omitempty"`
	// ELR and LastKnownELR: see PartitionState (KIP-966).
	ELR          []int32 `json:"elr,omitempty"`
	LastKnownELR []int32 `json:"last_known_elr,omitempty"`
}

// configsValue is the JSON value of configs/brokers/<node> and
// configs/groups/<group>.
type configsValue struct {
	Configs map[string]string `json:"configs"`
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		// Only plain structs of strings, ints and maps are marshalled here.
		panic(fmt.Sprintf("cluster: marshal %T: %v", v, err))
	}
	return string(b)
}

// keyKind classifies a key under the cluster prefix.
type keyKind int

const (
	kindUnknown keyKind = iota
	kindBroker
	kindTopic
	kindPartition
	kindBrokerConfig
	kindGroupConfig
	kindController
	kindScram
	kindACL
	kindQuota
)

// parsedKey is a key under the cluster prefix, split into its parts.
type parsedKey struct {
	kind      keyKind
	broker    int32  // kindBroker, kindController
	topic     string // kindTopic, kindPartition
	partition int32  // kindPartition
	node      string // kindBrokerConfig: "" for the default
	group     string // kindGroupConfig
	user      string // kindScram
	mechanism string // kindScram
	aclID     string // kindACL
	entity    string // kindQuota
}

// parse splits a full etcd key. Keys it does not know (producer ids,
// future schema) come back as kindUnknown and are ignored.
func (k keys) parse(key string) parsedKey {
	rest, ok := strings.CutPrefix(key, k.prefix)
	if !ok {
		return parsedKey{}
	}
	switch {
	case strings.HasPrefix(rest, brokersDir):
		id, err := strconv.ParseInt(rest[len(brokersDir):], 10, 32)
		if err != nil || id < 0 {
			return parsedKey{}
		}
		return parsedKey{kind: kindBroker, broker: int32(id)}
	case strings.HasPrefix(rest, controllerDir):
		id, err := strconv.ParseInt(rest[len(controllerDir):], 10, 32)
		if err != nil || id < 0 {
			return parsedKey{}
		}
		return parsedKey{kind: kindController, broker: int32(id)}
	case strings.HasPrefix(rest, topicsDir):
		name := rest[len(topicsDir):]
		if name == "" || strings.Contains(name, "/") {
			return parsedKey{}
		}
		return parsedKey{kind: kindTopic, topic: name}
	case strings.HasPrefix(rest, partitionsDir):
		topic, p, ok := strings.Cut(rest[len(partitionsDir):], "/")
		if !ok || topic == "" {
			return parsedKey{}
		}
		n, err := strconv.ParseInt(p, 10, 32)
		if err != nil || n < 0 {
			return parsedKey{}
		}
		return parsedKey{kind: kindPartition, topic: topic, partition: int32(n)}
	case strings.HasPrefix(rest, brokerConfigsDir):
		node := rest[len(brokerConfigsDir):]
		if node == "" || strings.Contains(node, "/") {
			return parsedKey{}
		}
		if node == defaultConfigNode {
			node = ""
		}
		return parsedKey{kind: kindBrokerConfig, node: node}
	case strings.HasPrefix(rest, groupConfigsDir):
		group := rest[len(groupConfigsDir):]
		if group == "" {
			return parsedKey{}
		}
		return parsedKey{kind: kindGroupConfig, group: group}
	}
	if entity, ok := parseQuota(rest); ok {
		return parsedKey{kind: kindQuota, entity: entity}
	}
	if kind, user, mech, id := k.parseSecurity(rest); kind != kindUnknown {
		return parsedKey{kind: kind, user: user, mechanism: mech, aclID: id}
	}
	return parsedKey{}
}

// parseTopicID decodes the topic id as stored (UUID text form).
func parseTopicID(s string) ([16]byte, error) {
	u, err := uuid.Parse(s)
	if err != nil {
		return [16]byte{}, fmt.Errorf("cluster: topic id %q: %w", s, err)
	}
	return u, nil
}

// maxTopicNameLen is Kafka's limit on topic name length.
const maxTopicNameLen = 249

// validTopicName reports whether Kafka would accept name as a topic name.
// Names never contain '/', which the key schema relies on.
func validTopicName(name string) bool {
	if name == "" || name == "." || name == ".." || len(name) > maxTopicNameLen {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '.', c == '_', c == '-':
		default:
			return false
		}
	}
	return true
}
