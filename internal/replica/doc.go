// Package replica holds the partitions this broker hosts: for each, its log,
// its leader epoch and its high watermark.
//
// A single broker is the leader of every partition it hosts and its ISR is
// itself, so the high watermark is the offset below which the log is durable
// (fsynced, under the default flush policy) or, in page-cache mode, the log
// end offset. Replication across brokers extends this type without changing
// what the broker package sees: Partition.HighWatermark, Partition.Log and
// the leader epoch.
//
// Terms: HW high watermark, LEO log end offset, ISR in-sync replica set.
//
// Manager is safe for concurrent use. Lock order: Manager.mu -> storage.
package replica
