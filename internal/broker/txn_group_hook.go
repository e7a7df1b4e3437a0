package broker

// onOffsetsMarker is called once a COMMIT or ABORT marker of producer pid
// is durable on __consumer_offsets partition partition, led here: the
// group coordinator materialises or drops that producer's pending
// transactional offsets. It must not block for long.
func (b *Broker) onOffsetsMarker(partition int32, pid int64, commit bool) {}
