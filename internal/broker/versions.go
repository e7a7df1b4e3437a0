package broker

import "github.com/twmb/franz-go/pkg/kmsg"

// apiRange is a served version range of one API key.
type apiRange struct{ min, max int16 }

// versions is the table of served APIs. Every version listed is fully
// handled, including the fields it added; see each NN_*.go file.
var versions = map[int16]apiRange{
	0:  {3, 12}, // Produce
	1:  {4, 16}, // Fetch
	2:  {0, 11}, // ListOffsets
	3:  {0, 12}, // Metadata
	8:  {0, 9},  // OffsetCommit
	9:  {0, 9},  // OffsetFetch
	10: {0, 4},  // FindCoordinator
	11: {0, 9},  // JoinGroup
	12: {0, 4},  // Heartbeat
	13: {0, 5},  // LeaveGroup
	14: {0, 5},  // SyncGroup
	15: {0, 5},  // DescribeGroups
	16: {0, 5},  // ListGroups
	17: {0, 1},  // SaslHandshake (answered by the server's connection layer)
	18: {0, 3},  // ApiVersions
	19: {0, 7},  // CreateTopics
	20: {0, 6},  // DeleteTopics
	21: {0, 2},  // DeleteRecords
	22: {0, 5},  // InitProducerId
	23: {0, 4},  // OffsetForLeaderEpoch
	24: {0, 5},  // AddPartitionsToTxn
	25: {0, 4},  // AddOffsetsToTxn
	26: {0, 5},  // EndTxn
	27: {0, 1},  // WriteTxnMarkers
	28: {0, 5},  // TxnOffsetCommit
	29: {0, 3},  // DescribeAcls
	30: {0, 3},  // CreateAcls
	31: {0, 3},  // DeleteAcls
	32: {0, 4},  // DescribeConfigs
	33: {0, 2},  // AlterConfigs
	34: {0, 2},  // AlterReplicaLogDirs
	35: {0, 4},  // DescribeLogDirs
	36: {0, 2},  // SaslAuthenticate (answered by the server's connection layer)
	37: {0, 3},  // CreatePartitions
	42: {0, 2},  // DeleteGroups
	43: {0, 2},  // ElectLeaders
	44: {0, 1},  // IncrementalAlterConfigs
	45: {0, 1},  // AlterPartitionReassignments
	46: {0, 0},  // ListPartitionReassignments
	47: {0, 0},  // OffsetDelete
	48: {0, 1},  // DescribeClientQuotas
	49: {0, 1},  // AlterClientQuotas
	50: {0, 0},  // DescribeUserScramCredentials
	51: {0, 0},  // AlterUserScramCredentials
	57: {0, 2},  // UpdateFeatures
	60: {0, 1},  // DescribeCluster
	61: {0, 0},  // DescribeProducers
	65: {0, 0},  // DescribeTransactions
	66: {0, 1},  // ListTransactions
	68: {0, 1},  // ConsumerGroupHeartbeat
	69: {0, 1},  // ConsumerGroupDescribe
	71: {0, 0},  // GetTelemetrySubscriptions (unadvertised)
	72: {0, 0},  // PushTelemetry (unadvertised)
	74: {0, 1},  // ListConfigResources
	76: {1, 1},  // ShareGroupHeartbeat
	77: {1, 1},  // ShareGroupDescribe
	78: {1, 2},  // ShareFetch
	79: {1, 2},  // ShareAcknowledge
	83: {0, 0},  // InitializeShareGroupState
	84: {0, 0},  // ReadShareGroupState
	85: {0, 0},  // WriteShareGroupState
	86: {0, 0},  // DeleteShareGroupState
	87: {0, 0},  // ReadShareGroupStateSummary
	90: {0, 1},  // DescribeShareGroupOffsets
	91: {0, 0},  // AlterShareGroupOffsets
	92: {0, 0},  // DeleteShareGroupOffsets
	75: {0, 0},  // DescribeTopicPartitions
}

// unadvertised holds the keys that are decoded and answered but left out
// of ApiVersions, as Kafka leaves out the client telemetry APIs when no
// client metrics receiver is configured (71_get_telemetry_subscriptions.go).
var unadvertised = map[int16]bool{
	71: true, // GetTelemetrySubscriptions
	72: true, // PushTelemetry
}

// refusedBelow holds, for Produce and Fetch, the lowest version decoded
// below the served range: Produce v0-2 and Fetch v0-3 carry the message
// formats v0 and v1, which samsa neither stores nor converts (Kafka 4
// removed them too, KIP-896). Such a request is answered with
// UNSUPPORTED_VERSION in every partition (an acks=0 Produce by closing
// the connection), so that a client pinned to them (sarama before
// V0_11_0_0, kafka-python with api_version below (0, 11)) reports an
// unsupported version instead of a dropped connection. ApiVersions lists
// only the served ranges.
var refusedBelow = map[int16]int16{
	0: 0, // Produce
	1: 0, // Fetch
}

// Versions implements server.Handler: the versions decoded, the served
// ones and those refused in the answer (refusedBelow).
func (b *Broker) Versions(key int16) (min, max int16, ok bool) {
	r, ok := versions[key]
	if low, refused := refusedBelow[key]; refused {
		r.min = low
	}
	return r.min, r.max, ok
}

// refused reports whether version of key is decoded only to be refused.
func refused(key, version int16) bool {
	_, ok := refusedBelow[key]
	return ok && version < versions[key].min
}

// apiVersionKeys returns the served ranges sorted by key, as ApiVersions
// reports them, without the unadvertised keys.
func apiVersionKeys() []kmsg.ApiVersionsResponseApiKey {
	keys := make([]kmsg.ApiVersionsResponseApiKey, 0, len(versions))
	for k := int16(0); k < 100; k++ {
		r, ok := versions[k]
		if !ok || unadvertised[k] {
			continue
		}
		keys = append(keys, kmsg.ApiVersionsResponseApiKey{ApiKey: k, MinVersion: r.min, MaxVersion: r.max})
	}
	return keys
}
