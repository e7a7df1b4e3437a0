package group

import (
	"encoding/binary"
	"errors"
)

var errBadSubscription = errors.New("group: malformed consumer subscription")

// subscriptionTopics decodes the topics of a consumer protocol
// subscription (member metadata of protocol type "consumer"). Every
// version starts with the same two fields:
//
//	+---------+------------+-----------------------------+------+
//	| int16   | int32      | per topic: int16 len, bytes | rest |
//	| version | topic count|                             | ...  |
//	+---------+------------+-----------------------------+------+
//
// The rest (user data, owned partitions, generation, rack) is not needed.
func subscriptionTopics(b []byte) ([]string, error) {
	if len(b) < 6 {
		return nil, errBadSubscription
	}
	if int16(binary.BigEndian.Uint16(b)) < 0 {
		return nil, errBadSubscription
	}
	n := int32(binary.BigEndian.Uint32(b[2:]))
	b = b[6:]
	// Each topic takes at least two bytes: bound the count before allocating.
	if n < 0 || int(n) > len(b)/2 {
		return nil, errBadSubscription
	}
	topics := make([]string, 0, n)
	for range n {
		if len(b) < 2 {
			return nil, errBadSubscription
		}
		l := int(int16(binary.BigEndian.Uint16(b)))
		b = b[2:]
		if l < 0 || l > len(b) {
			return nil, errBadSubscription
		}
		topics = append(topics, string(b[:l]))
		b = b[l:]
	}
	return topics, nil
}
