package broker

import (
	"samsa/internal/group"
	"samsa/internal/replica"
)

// Replicas returns the partitions this broker hosts. Metrics read them,
// and tests use it to reach a partition's offsets and producer state, for
// instance to write a transaction marker with
// replica.Partition.AppendMarker.
func (b *Broker) Replicas() *replica.Manager { return b.replicas }

// Groups returns the group coordinator (metrics read its state).
func (b *Broker) Groups() *group.Coordinator { return b.groups }
