// Package e2e holds end-to-end tests of the samsa binary. It has no
// non-test code: the tests build ./cmd/samsa once, run `samsa serve` as
// subprocesses on free loopback ports with their own data dirs, and talk
// to them with franz-go, kcat and confluent-kafka-python.
//
// What the suite checks:
//
//	test                          | what must hold afterwards
//	------------------------------+----------------------------------------------
//	TestKcat*                     | kcat lists, produces and consumes exactly
//	TestConfluentPython*          | librdkafka via Python round-trips keys/headers
//	TestS02KillDuringAcksAll      | every acks=all ack survives kill -9 at its offset
//	TestD01TornTail*              | recovery keeps every whole batch, appends after it
//	TestD02IndexRebuild*          | Fetch/ListOffsets identical without index files
//	TestCleanShutdown*            | SIGTERM exits 0 with a long poll parked
//	TestSecondSignal* (linux)     | a second SIGTERM exits at once
//	TestServeEmptyDirStartup      | an empty data dir serves within seconds
//	TestMetrics*                  | /metrics follows produce, fetch and commits; promtool accepts it
//	TestPrometheusScrapes*        | a real Prometheus scrapes three brokers and answers queries
//	TestAlertRules*, TestGrafana* | deploy/ rules pass promtool; every metric used is documented
//	TestOps*                      | docs/operations.md's procedures lose no acknowledged record
//	TestOpenFileLimit*            | a low ulimit -n fails clearly and loses no acknowledged record
//	TestScale* (SAMSA_SCALE=1)    | 10,000 partitions: every record back, over a restart and kill -9
//
// Tests that need kcat, python3 with confluent_kafka, or promtool and
// prometheus (Debian's prometheus package) skip when the tool is missing,
// unless the environment variable CI is set, in which case they fail.
//
// Set SAMSA_BIN to test a prebuilt binary instead of building one, and
// SAMSA_OPS=1 (make ops) for the operations measurements that the normal
// run skips, SAMSA_SCALE=1 (make scale) for the scale measurement
// (SAMSA_SCALE_PARTITIONS sets its partition count, 10,000 by default).
//
// Run with:
//
//	go test ./test/e2e/...
//	CI=1 go test -v -run TestS02 ./test/e2e/
package e2e
