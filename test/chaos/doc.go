// Package chaos holds multi-process fault tests of replication (TESTPLAN
// Tier 2). It has no non-test code: TestMain builds ./cmd/samsa once; each
// test runs one `samsa dev etcd` process and three `samsa serve` processes
// sharing it on loopback ports, drives the TESTPLAN "safe" producer
// (acks=all, idempotence on, unbounded retries) at 200 records/s over a
// topic of 5 partitions with replication factor 3, injects faults with
// signals, heals, and then checks the whole log against what the producer
// was told.
//
// The safe producer runs on two client stacks at once: franz-go in the test
// process (200 records/s) and librdkafka through confluent-kafka-python in
// a subprocess (testdata/librdkafka_client.py, 100 records/s, its own
// values). The checker holds both to the same rules, reports acks, failures
// and the longest ack gap per stack, and reads the log back with a
// librdkafka consumer as well, which must see what franz-go's sees (see
// librdkafka_test.go).
//
// Cluster configuration (every broker):
//
//	config                          | value | why
//	--------------------------------+-------+----------------------------------
//	default.replication.factor      | 3     | every broker holds every partition
//	min.insync.replicas             | 2     | acks=all needs two copies
//	unclean.leader.election.enable  | false | S-04 relies on it
//	auto.create.topics.enable       | false | topics are created explicitly
//	broker.session.timeout.ms       | 3000  | T_s, the registration lease TTL
//	broker.heartbeat.interval.ms    | 1000  | lease keep-alive, below T_s
//	replica.lag.time.max.ms         | 5000  | T_lag
//	offsets.topic.num.partitions    | 3     | quick start
//	transaction.state.log.num.      | 3     | quick start
//	  partitions                    |       |
//	transaction.abort.timed.out.    | 5000  | a dead producer's transaction is aborted
//	  transaction.cleanup.interval.ms|      | within 5 s of its timeout, well inside
//	                                |       | S-20's bound of timeout + 10 s
//	log.cleaner.backoff.ms          | 500   | S-20's compacted topic is cleaned
//	                                |       | soon after a hanging transaction ends
//
// What the checker counts (TESTPLAN anomaly vocabulary); every count must
// be zero:
//
//	anomaly              | meaning
//	---------------------+----------------------------------------------------
//	lost                 | acknowledged, but the value is nowhere in the log
//	duplicate            | one value at more than one offset
//	inconsistent-offsets | the acknowledged offset holds another value, or none
//	nonmonotonic-send    | a later send to a partition got a lower offset
//	unexpected           | a value never sent, or sent to another partition
//	aborted-read         | a definitely failed send (OUT_OF_ORDER_SEQUENCE_NUMBER,
//	                     | PRODUCER_FENCED, INVALID_PRODUCER_EPOCH; for
//	                     | librdkafka also UNKNOWN_PRODUCER_ID) is in the log
//	read-mismatch        | the librdkafka consumer read other records than
//	                     | franz-go's
//
// The transactional scenarios (S-18, S-19, S-20; txnworkload_test.go)
// check transactions instead (each record keyed by its unique value, so
// that compaction removes none of them): a transaction whose commit the producer
// saw succeed must be wholly visible at read_committed (else lost), one
// it aborted must be invisible (else aborted-read), one whose end failed
// must be all or nothing (else torn), and no value may be visible twice
// or without a transaction that wrote it. The checker writes an end
// record to each partition and reads until it sees them all, which needs
// every partition's last stable offset past every transaction.
//
// Other errors (not leader, timeouts, disconnects, the producer closing)
// are indefinite: the value may or may not be in the log. A librdkafka
// value written twice under one producer id and two producer epochs is the
// client's re-send (librdkafka 2.0 bumps its epoch and sends again), not a
// duplicate: it is logged, not failed.
//
// Scenarios, named by TESTPLAN id:
//
//	test                                 | fault
//	-------------------------------------+-------------------------------------------
//	TestS02KillLeaderLoop                | kill -9 the leader of partition 0, restart later; repeat
//	TestS03IsolatedLeader                | cut the leader of partition 0 off from etcd and replication, 15 s
//	TestS04NoUncleanElection             | kill a follower, then the other two; restart the stale one alone
//	TestS05ZombieLeader                  | SIGSTOP the leader for 2 x T_s, then SIGCONT
//	TestS06FollowerRestartThenLeaderDies | kill -9 and restart a follower, kill -9 the leader as it re-registers
//	TestS07BackToBackLeaderFailures      | kill -9 each new leader until all three are down; restart in varying orders;
//	                                     | the replicas' committed batches are then compared on disk
//	TestS14RollingRestart                | SIGTERM, restart and wait for full ISR, broker by broker
//	TestS15Partitions                    | clients cut from the leader; then the leader cut from everything
//	TestS15RingAndSplits                 | majorities ring (A<->C cut); majority/minority with etcd on
//	                                     | the majority side, then on the minority side
//	TestS17EtcdPaused                    | SIGSTOP etcd 10 s; then kill -9 etcd, restart it after 5 s
//	TestS17EtcdMembers                   | three etcd members: pause the etcd leader, kill a member,
//	                                     | kill two (quorum lost), cut the controller broker from etcd
//	TestS18TxnCoordinatorFaults          | transactional producers; kill, pause and isolate the
//	                                     | transaction coordinator of one transactional id
//	TestS19LateTxnRequests               | transactional producers through delayProxy (delayproxy_test.go),
//	                                     | which holds 1 in 8 of their Produce, AddPartitionsToTxn and
//	                                     | EndTxn requests 1-10 s and delivers them after the client
//	                                     | gave up: the late requests must not change a later transaction
//	TestS20ProducerKilledMidTransaction  | kill -9 a librdkafka producer with its transaction open on
//	                                     | every partition of a compacted topic: last stable offsets
//	                                     | move within transaction timeout + 10 s, the cleaner stays
//	                                     | below the open transaction, then each leader's cleaner
//	                                     | checkpoint passes it within 20 s and no aborted record is
//	                                     | left below the checkpoint at read_uncommitted
//	TestS21ExactlyOncePipeline...        | GroupTransactSession pipeline in -> out; kill and pause the
//	                                     | group coordinator (long: again and again for 5 min):
//	                                     | every input once in the output
//	TestS22GroupCoordinatorFaults        | consumer group members as processes: kill and isolate the
//	                                     | coordinator, kill members in a rebalance, paused zombies
//	TestS02KillLeaderLoopSASLSSL,        | S-02 and S-03 with the secure profile (below)
//	TestS03IsolatedLeaderSASLSSL         |
//	TestSASLSSLFollowerWithWrongPassword | secure profile: a broker restarted with a wrong inter-broker
//	StaysOutOfISR                        | password stays out of every ISR; with the right one it rejoins
//
// The network scenarios (S-03, S-15, S-17 members, S-22) run on a
// netCluster (or, for S-17 members, a memberCluster of three `samsa dev
// etcd` members): each broker reaches etcd through its own TCP link in the
// test process and advertises a link in front of its Kafka listener, so
// replica fetchers and clients come through links that a test cuts by the
// connection's client id (a replica fetcher sends samsa-replica-<node id>).
//
// The secure profile (SAMSA_CHAOS_SECURE=1 for every scenario; the
// *SASLSSL tests turn it on themselves) gives each broker a SASL_SSL
// listener as inter.broker.listener.name, with mutual TLS (certificates
// from `samsa dev certs`, made once per cluster) and SCRAM-SHA-512, beside
// the PLAINTEXT listener that clients keep using (see secure_test.go). On
// a netCluster the followers' path to a SASL_SSL listener is a link that
// ends TLS on both sides to read the client id, so cuts by client id still
// fall on replication.
//
// The short profile (the default, so `go test ./...` runs it) takes about
// 20 s of faults per scenario; SAMSA_CHAOS_LONG=1 runs 5 minutes each.
// Each process logs to a file in the test's temp dir; a failing test
// prints the tail of every log. Faults are also written into the log of
// the process they hit, with a timestamp.
//
// Set SAMSA_BIN to test a prebuilt binary instead of building one.
// SAMSA_CHAOS_KEEP=<dir> copies the whole log of every process of a
// failing test to <dir>.
// SAMSA_CHAOS_SECURE=1 runs every scenario with the secure profile.
// SAMSA_CHAOS_CLIENTS=franz-go runs without librdkafka; otherwise a
// scenario without python3 and confluent_kafka is skipped, or fails under
// CI=1. SAMSA_CHAOS_RDK_DEBUG sets librdkafka's debug contexts.
//
// Run with:
//
//	go test ./test/chaos/
//	SAMSA_CHAOS_LONG=1 go test -v -timeout 60m ./test/chaos/   (make chaos)
package chaos
