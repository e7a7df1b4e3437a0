// Package cluster is a broker's handle on the cluster metadata kept in etcd:
// broker registrations, topics with their replica assignments, partition
// states (leader, leader epoch, ISR) and dynamic configs.
//
// Open starts an embedded etcd member in <DataDir>/etcd (or connects to
// Config.EtcdEndpoints), binds DataDir to a cluster through Kafka's
// meta.properties, registers the broker under a lease, and keeps an
// immutable Image of the metadata current from an etcd watch:
//
//	c, err := cluster.Open(ctx, cluster.Config{NodeID: 0, DataDir: dir,
//		AdvertisedHost: "127.0.0.1", AdvertisedPort: 9092})
//	...
//	defer c.Close()
//	t, err := c.CreateTopic(ctx, "orders", 3, 1, nil)
//	img := c.Image() // has "orders": writes wait for the image to show them
//
// The embedded member is alone in its cluster unless Config.Embedded names
// an initial cluster (etcd's --initial-cluster, name=peerURL,...): then each
// broker embeds one member of a shared etcd cluster, the client connects to
// every member's client URL (refreshed from the member list), and the
// metadata stays writable while a majority of the members runs. Multi-member
// raft uses a 100 ms tick and a 1 s election timeout instead of the
// single member's 10 ms / 100 ms. Embedded.PeerTLS and Embedded.ClientTLS
// put the member's peer and client traffic under (mutual) TLS; with
// ClientTLS, Config.EtcdTLS is the broker's own client side.
//
// To wait for a change, take Changed() before Image():
//
//	for {
//		ch := c.Changed()
//		img := c.Image()
//		... use img ...
//		<-ch
//	}
//
// # Key schema
//
// Values are JSON. <id> is the cluster id (22 characters, base64url of 16
// random bytes, as Kafka makes them); every key but the first lives under
// /samsa/<id>/. docs/etcd-keys.md has value examples.
//
//	+-------------------------------+----------------------------------------+-------------------------------+
//	| key                           | value                                  | written                       |
//	+-------------------------------+----------------------------------------+-------------------------------+
//	| /samsa/cluster-id             | <id> (plain text)                      | once, if CreateRevision == 0  |
//	| brokers/<node>                | {host, port, rack, incarnation,        | Put under the broker's lease  |
//	|                               |  shutting_down, offline_log_dirs,      |                               |
//	|                               |  offline_replicas}                     |                               |
//	| topics/<name>                 | {id (UUID), replicas [[...]], configs} | create: CreateRevision == 0;  |
//	|                               |                                        | update: ModRevision CAS       |
//	| partitions/<name>/<p>         | {leader, leader_epoch, isr,            | with its topic; then every    |
//	|                               |  partition_epoch, adding_replicas,     | write a ModRevision CAS       |
//	|                               |  removing_replicas}                    |                               |
//	| configs/brokers/<node|default>| {configs}                              | Put / Delete (replace)        |
//	| configs/groups/<group>        | {configs}                              | Put / Delete (replace)        |
//	| controller/<node>             | <node> (plain text)                    | Put under the broker's lease, |
//	|                               |                                        | with brokers/<node>           |
//	| users/<user>/<mechanism>      | {salt, iterations, stored_key,         | Put / Delete                  |
//	|                               |  server_key} (SCRAM, KIP-554)          |                               |
//	| acls/<id>                     | one ACL binding                        | Put / Delete, in transactions |
//	| quotas/<entity>               | {quota key: value, ...} (KIP-546)      | CAS on every altered entity,  |
//	|                               |                                        | in one transaction            |
//	+-------------------------------+----------------------------------------+-------------------------------+
//
// A topic and all its partition keys are created in one transaction and
// deleted in one transaction, so the image never holds half a topic.
//
// # Partition reassignment
//
// A reassignment in progress (KIP-455) is the pair adding_replicas /
// removing_replicas on the partition key (absent when none), while the
// topic's replica list for the partition is the union, target first:
//
//	+--------------------------+---------------------------------+--------------------+
//	| step                     | topics/<name> replicas[p]       | adding / removing  |
//	+--------------------------+---------------------------------+--------------------+
//	| before                   | original                        | - / -              |
//	| start (PlanReassignment) | target ++ (original - target)   | target - original  |
//	|                          |                                 | / original - target|
//	| finish (Decide)          | target                          | - / -              |
//	| cancel                   | original (= replicas - adding)  | - / -              |
//	+--------------------------+---------------------------------+--------------------+
//
// Every step writes both keys in one transaction comparing the mod revision
// of each (AlterReplicas). Decide finishes a reassignment once every adding
// replica is in the ISR; every change of the replica set bumps LeaderEpoch.
//
// # Invariants
//
//   - An Image, and everything reachable from it, is never modified once
//     published. A new image copies the maps it changes and shares the rest.
//   - Image().Revision only grows, except when the etcd history the watch
//     needs was compacted and the image is reloaded from a fresh read.
//   - Every write method returns only after Image() reflects the write
//     (Revision >= the write's revision), so a caller sees its own writes.
//   - Of concurrent CreateTopic calls for one name exactly one succeeds.
//   - A partition state changes only by compare-and-swap on its key's
//     ModRevision (AlterPartition; AlterReplicas, which also compares the
//     topic key; or with its topic in Create/Delete).
//   - Image.ControllerID is the node whose controller/<node> key has the
//     smallest CreateRevision: the oldest live session wins, and keeps
//     winning until its lease goes. With no candidate keys it is the
//     lowest registered node id; -1 with no brokers.
//
// # Concurrency
//
// Cluster is safe for concurrent use. It owns two goroutines: the watch
// loop, the only writer of the current image (an atomic.Pointer swapped
// together with its Changed channel, so no lock is needed), and the lease
// keepalive loop, which registers the broker again under a new lease if the
// old one is lost. Close stops both, revokes the lease (the registration
// disappears at once), closes the etcd client and stops the embedded etcd.
// The one mutex, regMu, serialises the writes of the broker's own
// registration (controlled shutdown, offline replicas, re-registration)
// and takes no other lock, hence no lock order.
package cluster
