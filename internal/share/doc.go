// Package share is KIP-932 share groups (queues): the share-partition
// state machine that the partition leader keeps for each (group, topic,
// partition), the share group membership state machine that the group
// coordinator keeps, and the share coordinator's persisted state of the
// share-partitions (__share_group_state).
package share
