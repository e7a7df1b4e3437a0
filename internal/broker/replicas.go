package broker

import "samsa/internal/replica"

// Replicas returns the partitions this broker hosts. Tests use it to reach
// a partition's log and producer state, for instance to write a
// transaction marker with replica.Partition.AppendMarker.
func (b *Broker) Replicas() *replica.Manager { return b.replicas }
