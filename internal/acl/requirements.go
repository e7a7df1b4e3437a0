package acl

import "github.com/twmb/franz-go/pkg/kmsg"

// Scope says which resource of a Requirement's type a request is checked
// against. Its value is the text the broker may show in logs.
type Scope string

// The scopes APIRequirements uses.
const (
	// ScopeCluster is the cluster resource, named ClusterName.
	ScopeCluster Scope = "cluster"
	// ScopeEachTopic is each topic named in the request; topics that fail
	// get a per-topic TOPIC_AUTHORIZATION_FAILED.
	ScopeEachTopic Scope = "each topic in the request"
	// ScopeAnyTopic is "some topic", decided by AuthorizeByResourceType.
	ScopeAnyTopic Scope = "any topic (AuthorizeByResourceType)"
	// ScopeGroup is the one group the request names.
	ScopeGroup Scope = "the group in the request"
	// ScopeEachGroup is each group named in the request.
	ScopeEachGroup Scope = "each group in the request"
	// ScopeEachListedGroup is each group in the response; unauthorized
	// groups are left out rather than failed.
	ScopeEachListedGroup Scope = "each group in the response (others are left out)"
	// ScopeTransactionalID is the one transactional id the request names.
	ScopeTransactionalID Scope = "the transactional id in the request"
	// ScopeEachTransactionalID is each transactional id named in the request.
	ScopeEachTransactionalID Scope = "each transactional id in the request"
	// ScopeEachListedTransactionalID is each transactional id in the
	// response; unauthorized ones are left out.
	ScopeEachListedTransactionalID Scope = "each transactional id in the response (others are left out)"
	// ScopeTokenOwner is the User resource named by the token owner.
	ScopeTokenOwner Scope = "the token owner (User resource)"
	// ScopeEachToken is each delegation token in the response.
	ScopeEachToken Scope = "each delegation token in the response"
)

// Requirement is one permission: op on the resource of type ResourceType
// that Scope designates.
type Requirement struct {
	Operation    kmsg.ACLOperation
	ResourceType kmsg.ACLResourceType
	Scope        Scope
}

// Check is one authorization step of a request. It passes when any one of
// AnyOf is allowed; Kafka tries them in order (e.g. CREATE on the cluster,
// then CREATE on each topic).
type Check struct {
	// When says which requests the check applies to; empty means all.
	When string
	// AnyOf lists alternatives; the first allowed one satisfies the check.
	AnyOf []Requirement
	// DocumentedOnly marks a row that Kafka's documentation lists but
	// Kafka's broker no longer checks for this API; handlers skip it.
	DocumentedOnly bool
	// Note explains the check where the table alone is not enough.
	Note string
}

// APIRequirement lists the checks of one Kafka API. Every check whose When
// holds must pass, in order; an API with no checks needs no authorization.
type APIRequirement struct {
	Key    int16
	Name   string
	Checks []Check
	// Note explains where Kafka's broker differs from its documentation
	// or applies a check specially.
	Note string
}

func req(op kmsg.ACLOperation, rt kmsg.ACLResourceType, s Scope) Requirement {
	return Requirement{Operation: op, ResourceType: rt, Scope: s}
}

func one(op kmsg.ACLOperation, rt kmsg.ACLResourceType, s Scope) Check {
	return Check{AnyOf: []Requirement{req(op, rt, s)}}
}

func when(cond string, c Check) Check {
	c.When = cond
	return c
}

func note(n string, c Check) Check {
	c.Note = n
	return c
}

func anyOf(rs ...Requirement) Check { return Check{AnyOf: rs} }

// Short names for the table below.
const (
	opRead      = kmsg.ACLOperationRead
	opWrite     = kmsg.ACLOperationWrite
	opCreate    = kmsg.ACLOperationCreate
	opDelete    = kmsg.ACLOperationDelete
	opAlter     = kmsg.ACLOperationAlter
	opDescribe  = kmsg.ACLOperationDescribe
	opClusterAc = kmsg.ACLOperationClusterAction
	opDescCfgs  = kmsg.ACLOperationDescribeConfigs
	opAltCfgs   = kmsg.ACLOperationAlterConfigs
	opIdemWrite = kmsg.ACLOperationIdempotentWrite
	opCreateTok = kmsg.ACLOperationCreateTokens
	opDescTok   = kmsg.ACLOperationDescribeTokens

	rtTopic   = kmsg.ACLResourceTypeTopic
	rtGroup   = kmsg.ACLResourceTypeGroup
	rtCluster = kmsg.ACLResourceTypeCluster
	rtTxn     = kmsg.ACLResourceTypeTransactionalId
	rtToken   = kmsg.ACLResourceTypeDelegationToken
	rtUser    = kmsg.ACLResourceTypeUser
)

// APIRequirements maps a Kafka API key to what its requests must be
// authorized for. It is data: handlers look their API up, and the
// authorization matrix test walks it. Do not modify it.
//
// Source: the table "Operations and Resources on Protocols" in the security
// section of Kafka's documentation (docs/security.html,
// #operations_resources_and_protocols), checked against the authorize calls
// in Kafka's broker (KafkaApis, AclApis, ConfigHelper, AuthHelper). Where the
// two disagree, the table follows the broker and the Note says so.
//
// Inter-broker and controller APIs (4-7, 52-56, 58, 59, 62-64, 67, ...) are
// CLUSTER_ACTION on the cluster and listed only where samsa may see them.
var APIRequirements = map[int16]APIRequirement{
	0: {Key: 0, Name: "Produce", Checks: []Check{
		when("transactional records", one(opWrite, rtTxn, ScopeTransactionalID)),
		{When: "idempotent records", AnyOf: []Requirement{req(opIdemWrite, rtCluster, ScopeCluster), req(opWrite, rtTopic, ScopeAnyTopic)}, DocumentedOnly: true,
			Note: "since KIP-679 Kafka checks this at InitProducerId, not at Produce"},
		one(opWrite, rtTopic, ScopeEachTopic),
	}},
	1: {Key: 1, Name: "Fetch", Checks: []Check{
		when("follower fetch (replica id >= 0)", one(opClusterAc, rtCluster, ScopeCluster)),
		when("consumer fetch", one(opRead, rtTopic, ScopeEachTopic)),
	}},
	2: {Key: 2, Name: "ListOffsets", Checks: []Check{one(opDescribe, rtTopic, ScopeEachTopic)}},
	3: {Key: 3, Name: "Metadata", Checks: []Check{
		one(opDescribe, rtTopic, ScopeEachTopic),
		note("CREATE on the cluster first, else on each missing topic; without it the topic is UNKNOWN_TOPIC_OR_PARTITION or TOPIC_AUTHORIZATION_FAILED",
			when("auto topic creation for missing topics", anyOf(req(opCreate, rtCluster, ScopeCluster), req(opCreate, rtTopic, ScopeEachTopic)))),
		note("gates only the authorized operations in the response",
			when("include cluster authorized operations", one(opDescribe, rtCluster, ScopeCluster))),
	}},
	8: {Key: 8, Name: "OffsetCommit", Checks: []Check{
		one(opRead, rtGroup, ScopeGroup),
		one(opRead, rtTopic, ScopeEachTopic),
	}, Note: "group first, then topics"},
	9: {Key: 9, Name: "OffsetFetch", Checks: []Check{
		one(opDescribe, rtGroup, ScopeEachGroup),
		note("with no topics listed, unauthorized topics are left out of the response",
			one(opDescribe, rtTopic, ScopeEachTopic)),
	}, Note: "group first, then topics"},
	10: {Key: 10, Name: "FindCoordinator", Checks: []Check{
		when("key type GROUP", one(opDescribe, rtGroup, ScopeEachGroup)),
		when("key type TRANSACTION", one(opDescribe, rtTxn, ScopeEachTransactionalID)),
		when("key type SHARE", one(opClusterAc, rtCluster, ScopeCluster)),
	}},
	11: {Key: 11, Name: "JoinGroup", Checks: []Check{one(opRead, rtGroup, ScopeGroup)}},
	12: {Key: 12, Name: "Heartbeat", Checks: []Check{one(opRead, rtGroup, ScopeGroup)}},
	13: {Key: 13, Name: "LeaveGroup", Checks: []Check{one(opRead, rtGroup, ScopeGroup)}},
	14: {Key: 14, Name: "SyncGroup", Checks: []Check{one(opRead, rtGroup, ScopeGroup)}},
	15: {Key: 15, Name: "DescribeGroups", Checks: []Check{one(opDescribe, rtGroup, ScopeEachGroup)}},
	16: {Key: 16, Name: "ListGroups", Checks: []Check{
		anyOf(req(opDescribe, rtCluster, ScopeCluster), req(opDescribe, rtGroup, ScopeEachListedGroup)),
	}, Note: "never CLUSTER_AUTHORIZATION_FAILED: without cluster DESCRIBE the response lists only the groups the principal may describe"},
	17: {Key: 17, Name: "SaslHandshake", Note: "part of authentication; no authorization"},
	18: {Key: 18, Name: "ApiVersions", Note: "sent before authentication; no authorization"},
	19: {Key: 19, Name: "CreateTopics", Checks: []Check{
		anyOf(req(opCreate, rtCluster, ScopeCluster), req(opCreate, rtTopic, ScopeEachTopic)),
		note("gates returning the new topic's configs (v5+), not the creation",
			one(opDescCfgs, rtTopic, ScopeEachTopic)),
	}, Note: "cluster CREATE first; without it each topic needs CREATE, failing per topic"},
	20: {Key: 20, Name: "DeleteTopics", Checks: []Check{
		note("a topic without DESCRIBE fails with TOPIC_AUTHORIZATION_FAILED before DELETE is checked; the documentation lists only DELETE",
			one(opDescribe, rtTopic, ScopeEachTopic)),
		one(opDelete, rtTopic, ScopeEachTopic),
	}},
	21: {Key: 21, Name: "DeleteRecords", Checks: []Check{one(opDelete, rtTopic, ScopeEachTopic)}},
	22: {Key: 22, Name: "InitProducerId", Checks: []Check{
		when("transactional id set", one(opWrite, rtTxn, ScopeTransactionalID)),
		note("KIP-679: IDEMPOTENT_WRITE on the cluster, else WRITE on any topic",
			when("no transactional id (idempotent producer)", anyOf(req(opIdemWrite, rtCluster, ScopeCluster), req(opWrite, rtTopic, ScopeAnyTopic)))),
	}},
	23: {Key: 23, Name: "OffsetForLeaderEpoch", Checks: []Check{
		anyOf(req(opClusterAc, rtCluster, ScopeCluster), req(opDescribe, rtTopic, ScopeEachTopic)),
	}},
	24: {Key: 24, Name: "AddPartitionsToTxn", Checks: []Check{
		when("v0-3 (client)", one(opWrite, rtTxn, ScopeTransactionalID)),
		when("v0-3 (client)", one(opWrite, rtTopic, ScopeEachTopic)),
		note("v4+ batches are sent broker to broker (KIP-890)",
			when("v4+ (broker)", one(opClusterAc, rtCluster, ScopeCluster))),
	}},
	25: {Key: 25, Name: "AddOffsetsToTxn", Checks: []Check{
		one(opWrite, rtTxn, ScopeTransactionalID),
		one(opRead, rtGroup, ScopeGroup),
	}},
	26: {Key: 26, Name: "EndTxn", Checks: []Check{one(opWrite, rtTxn, ScopeTransactionalID)}},
	27: {Key: 27, Name: "WriteTxnMarkers", Checks: []Check{
		anyOf(req(opAlter, rtCluster, ScopeCluster), req(opClusterAc, rtCluster, ScopeCluster)),
	}, Note: "Kafka tries ALTER on the cluster silently, then CLUSTER_ACTION"},
	28: {Key: 28, Name: "TxnOffsetCommit", Checks: []Check{
		one(opWrite, rtTxn, ScopeTransactionalID),
		one(opRead, rtGroup, ScopeGroup),
		one(opRead, rtTopic, ScopeEachTopic),
	}},
	29: {Key: 29, Name: "DescribeAcls", Checks: []Check{one(opDescribe, rtCluster, ScopeCluster)}},
	30: {Key: 30, Name: "CreateAcls", Checks: []Check{one(opAlter, rtCluster, ScopeCluster)}},
	31: {Key: 31, Name: "DeleteAcls", Checks: []Check{one(opAlter, rtCluster, ScopeCluster)}},
	32: {Key: 32, Name: "DescribeConfigs", Checks: []Check{
		when("BROKER or BROKER_LOGGER resources", one(opDescCfgs, rtCluster, ScopeCluster)),
		when("TOPIC resources", one(opDescCfgs, rtTopic, ScopeEachTopic)),
		when("GROUP resources", one(opDescCfgs, rtGroup, ScopeEachGroup)),
		when("CLIENT_METRICS resources", one(opDescCfgs, rtCluster, ScopeCluster)),
	}, Note: "per resource; GROUP (KIP-848) and CLIENT_METRICS (KIP-714) are in the broker, not the documentation table"},
	33: {Key: 33, Name: "AlterConfigs", Checks: []Check{
		when("BROKER or BROKER_LOGGER resources", one(opAltCfgs, rtCluster, ScopeCluster)),
		when("TOPIC resources", one(opAltCfgs, rtTopic, ScopeEachTopic)),
		when("GROUP resources", one(opAltCfgs, rtGroup, ScopeEachGroup)),
	}, Note: "per resource"},
	34: {Key: 34, Name: "AlterReplicaLogDirs", Checks: []Check{one(opAlter, rtCluster, ScopeCluster)}},
	35: {Key: 35, Name: "DescribeLogDirs", Checks: []Check{one(opDescribe, rtCluster, ScopeCluster)},
		Note: "on failure the response is empty with CLUSTER_AUTHORIZATION_FAILED at the top level (v3+)"},
	36: {Key: 36, Name: "SaslAuthenticate", Note: "part of authentication; no authorization"},
	37: {Key: 37, Name: "CreatePartitions", Checks: []Check{one(opAlter, rtTopic, ScopeEachTopic)}},
	38: {Key: 38, Name: "CreateDelegationToken", Checks: []Check{
		when("owner is not the requester", one(opCreateTok, rtUser, ScopeTokenOwner)),
	}, Note: "tokens cannot be created over a token-authenticated connection (see Kafka's delegation token rules)"},
	39: {Key: 39, Name: "RenewDelegationToken", Note: "only the token's owner or renewers; no ACL check"},
	40: {Key: 40, Name: "ExpireDelegationToken", Note: "only the token's owner or renewers; no ACL check"},
	41: {Key: 41, Name: "DescribeDelegationToken", Checks: []Check{
		anyOf(req(opDescribe, rtToken, ScopeEachToken), req(opDescTok, rtUser, ScopeTokenOwner)),
	}, Note: "a token is also visible to its owner and renewers"},
	42: {Key: 42, Name: "DeleteGroups", Checks: []Check{one(opDelete, rtGroup, ScopeEachGroup)}},
	43: {Key: 43, Name: "ElectLeaders", Checks: []Check{one(opAlter, rtCluster, ScopeCluster)},
		Note: "the documentation says CLUSTER_ACTION; Kafka's broker checks ALTER on the cluster"},
	44: {Key: 44, Name: "IncrementalAlterConfigs", Checks: []Check{
		when("BROKER or BROKER_LOGGER resources", one(opAltCfgs, rtCluster, ScopeCluster)),
		when("TOPIC resources", one(opAltCfgs, rtTopic, ScopeEachTopic)),
		when("GROUP resources", one(opAltCfgs, rtGroup, ScopeEachGroup)),
		when("CLIENT_METRICS resources", one(opAltCfgs, rtCluster, ScopeCluster)),
	}, Note: "per resource; GROUP (KIP-848) and CLIENT_METRICS (KIP-714) are in the broker, not the documentation table"},
	45: {Key: 45, Name: "AlterPartitionReassignments", Checks: []Check{one(opAlter, rtCluster, ScopeCluster)}},
	46: {Key: 46, Name: "ListPartitionReassignments", Checks: []Check{one(opDescribe, rtCluster, ScopeCluster)}},
	47: {Key: 47, Name: "OffsetDelete", Checks: []Check{
		one(opDelete, rtGroup, ScopeGroup),
		one(opRead, rtTopic, ScopeEachTopic),
	}, Note: "group first, then topics"},
	48: {Key: 48, Name: "DescribeClientQuotas", Checks: []Check{one(opDescCfgs, rtCluster, ScopeCluster)}},
	49: {Key: 49, Name: "AlterClientQuotas", Checks: []Check{one(opAltCfgs, rtCluster, ScopeCluster)}},
	50: {Key: 50, Name: "DescribeUserScramCredentials", Checks: []Check{one(opDescribe, rtCluster, ScopeCluster)}},
	51: {Key: 51, Name: "AlterUserScramCredentials", Checks: []Check{one(opAlter, rtCluster, ScopeCluster)}},
	57: {Key: 57, Name: "UpdateFeatures", Checks: []Check{one(opAlter, rtCluster, ScopeCluster)}},
	60: {Key: 60, Name: "DescribeCluster", Checks: []Check{
		note("gates only the authorized operations in the response; the request itself needs no ACL",
			when("include cluster authorized operations", one(opDescribe, rtCluster, ScopeCluster))),
	}, Note: "the documentation lists DESCRIBE on the cluster for the whole request"},
	61: {Key: 61, Name: "DescribeProducers", Checks: []Check{one(opRead, rtTopic, ScopeEachTopic)}},
	65: {Key: 65, Name: "DescribeTransactions", Checks: []Check{
		one(opDescribe, rtTxn, ScopeEachTransactionalID),
		note("topics the principal may not describe are left out of the partitions listed",
			one(opDescribe, rtTopic, ScopeEachTopic)),
	}},
	66: {Key: 66, Name: "ListTransactions", Checks: []Check{one(opDescribe, rtTxn, ScopeEachListedTransactionalID)}},
	68: {Key: 68, Name: "ConsumerGroupHeartbeat", Checks: []Check{
		one(opRead, rtGroup, ScopeGroup),
		when("SubscribedTopicNames set", one(opDescribe, rtTopic, ScopeEachTopic)),
	}, Note: "any subscribed topic the principal may not describe fails the heartbeat with TOPIC_AUTHORIZATION_FAILED"},
	69: {Key: 69, Name: "ConsumerGroupDescribe", Checks: []Check{
		one(opDescribe, rtGroup, ScopeEachGroup),
		note("a group with a member subscribed or assigned to a topic the principal may not describe is TOPIC_AUTHORIZATION_FAILED",
			one(opDescribe, rtTopic, ScopeEachTopic)),
	}, Note: "the documentation says READ; Kafka's broker checks DESCRIBE"},
	71: {Key: 71, Name: "GetTelemetrySubscriptions", Note: "KIP-714; no ACL check (KafkaApis.handleGetTelemetrySubscriptionsRequest)"},
	72: {Key: 72, Name: "PushTelemetry", Note: "KIP-714; no ACL check (KafkaApis.handlePushTelemetryRequest)"},
	74: {Key: 74, Name: "ListConfigResources", Checks: []Check{one(opDescCfgs, rtCluster, ScopeCluster)},
		Note: "KIP-1142 (ListClientMetricsResources, KIP-1000, before Kafka 4.1)"},
	75: {Key: 75, Name: "DescribeTopicPartitions", Checks: []Check{one(opDescribe, rtTopic, ScopeEachTopic)}},
	76: {Key: 76, Name: "ShareGroupHeartbeat", Checks: []Check{
		one(opRead, rtGroup, ScopeGroup),
		when("SubscribedTopicNames set", one(opDescribe, rtTopic, ScopeEachTopic)),
	}},
	77: {Key: 77, Name: "ShareGroupDescribe", Checks: []Check{one(opDescribe, rtGroup, ScopeEachGroup)}},
	78: {Key: 78, Name: "ShareFetch", Checks: []Check{
		one(opRead, rtGroup, ScopeGroup),
		one(opRead, rtTopic, ScopeEachTopic),
	}},
	83: {Key: 83, Name: "InitializeShareGroupState", Checks: []Check{one(opClusterAc, rtCluster, ScopeCluster)}},
	84: {Key: 84, Name: "ReadShareGroupState", Checks: []Check{one(opClusterAc, rtCluster, ScopeCluster)}},
	85: {Key: 85, Name: "WriteShareGroupState", Checks: []Check{one(opClusterAc, rtCluster, ScopeCluster)}},
	86: {Key: 86, Name: "DeleteShareGroupState", Checks: []Check{one(opClusterAc, rtCluster, ScopeCluster)}},
	87: {Key: 87, Name: "ReadShareGroupStateSummary", Checks: []Check{one(opClusterAc, rtCluster, ScopeCluster)}},
	90: {Key: 90, Name: "DescribeShareGroupOffsets", Checks: []Check{
		one(opDescribe, rtGroup, ScopeEachGroup),
		one(opDescribe, rtTopic, ScopeEachTopic),
	}},
	91: {Key: 91, Name: "AlterShareGroupOffsets", Checks: []Check{
		one(opRead, rtGroup, ScopeGroup),
		one(opRead, rtTopic, ScopeEachTopic),
	}},
	92: {Key: 92, Name: "DeleteShareGroupOffsets", Checks: []Check{
		one(opDelete, rtGroup, ScopeGroup),
		one(opRead, rtTopic, ScopeEachTopic),
	}},
	79: {Key: 79, Name: "ShareAcknowledge", Checks: []Check{
		one(opRead, rtGroup, ScopeGroup),
		one(opRead, rtTopic, ScopeEachTopic),
	}},
}
