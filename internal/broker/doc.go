// Package broker answers Kafka requests: each API key has its own file
// (NN_name.go, NN the key) that turns a kmsg request into a kmsg response
// using the packages below it (cluster for metadata, replica for the
// partitions and their logs, which it reads only through
// replica.Partition; from storage it takes value types). It implements
// server.Handler.
//
// Usage: the node (internal/node) assembles a Broker from the parts it
// owns and serves it:
//
//	b, err := broker.New(broker.Config{Broker: cfg, Cluster: cl, Replicas: m,
//		InterBroker: peers, Reconcile: reconcile, ...})
//	server.New(serverCfg, b) // b.Handle answers each request
//	// after every pass of the node's reconciler: b.ApplyImage()
//	b.Drain(); ...; b.Close() // before the node closes the replicas
//
// Versions: every API is served from the first version that uses record
// batch v2 (Produce v3, Fetch v4) up to the newest whose semantics samsa
// implements; the table is in versions.go and the ApiVersions response is
// built from it. Each file's header lists its versions and how samsa differs
// from Kafka.
//
// Errors: packages below return Go errors; errCode in errors.go is the one
// place that maps them to Kafka error codes.
//
// Client quotas: Handle records each request against the client's quotas
// after its handler returns and sets the response's throttle time and
// Reply.Throttle (quotas.go; Fetch records its own, in 01_fetch.go). With no
// quota configured that costs two atomic loads.
//
// Concurrency: Handle runs on a connection's read goroutine; it appends in
// request order and leaves waiting (acks=all durability, Fetch long-poll) to
// the Reply's Wait, which runs on the connection's write goroutine and
// parks there on one operation of the replica manager's delay queue
// (replica.Manager.Watch), selecting only on it, the request's context and
// the broker's drain. The
// Broker starts no goroutine of its own but the coordinators' loads
// (ApplyImage), which Close waits for; the node's reconciler makes the
// hosted partitions follow the cluster metadata image. The mutexes that build the
// authorizer (aclState.mu) and the quota image (quotaState.mu) are leaves,
// as are the quota trackers' shard locks.
package broker
