package broker

import (
	"encoding/binary"

	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/storage"
)

// shareFetchBody is a ShareFetch response laid out as a fetchBody: encoded
// bytes and the file regions of the acquired record batches, which go to
// the socket with sendfile as a Fetch's do. Its encoding is byte for byte
// kmsg's ShareFetchResponse.AppendTo of the same response
// (share_fetch_body_test.go checks every served version).
//
// Tagged fields are always empty: samsa sets none of ShareFetch's.
type shareFetchBody struct {
	fetchBody
	share *kmsg.ShareFetchResponse
}

// ErrorCodes calls f with the response's error codes (server.ErrorCoder),
// as the server's walk of a kmsg response finds them: the fields named
// ErrorCode.
func (b *shareFetchBody) ErrorCodes(f func(code int16)) {
	f(b.share.ErrorCode)
	for i := range b.share.Topics {
		for j := range b.share.Topics[i].Partitions {
			f(b.share.Topics[i].Partitions[j].ErrorCode)
		}
	}
}

// SetThrottle puts ms in the encoded throttle_time_ms, unless the response
// has a longer one (throttleReply). It is the first field, so the first
// encoded piece's first four bytes.
func (b *shareFetchBody) SetThrottle(ms int32) {
	b.share.ThrottleMillis = max(b.share.ThrottleMillis, ms)
	binary.BigEndian.PutUint32(b.pieces[0].b[0:4], uint32(b.share.ThrottleMillis))
}

// encodeShareFetchResponse lays out resp (every served version is
// flexible). regions[i][j] are the record batches of
// resp.Topics[i].Partitions[j]; a partition without regions is encoded
// with its Records field (null when nil).
func encodeShareFetchResponse(resp *kmsg.ShareFetchResponse, regions [][][]storage.Region) *shareFetchBody {
	e := &fetchEncoder{cur: make([]byte, 0, 256)}
	e.i32(resp.ThrottleMillis)
	e.i16(resp.ErrorCode)
	e.nullableStr(resp.ErrorMessage)
	if resp.Version >= 1 {
		e.i32(resp.AcquisitionLockTimeoutMillis)
	}
	e.arrayLen(true, len(resp.Topics))
	for i := range resp.Topics {
		t := &resp.Topics[i]
		e.cur = append(e.cur, t.TopicID[:]...)
		e.arrayLen(true, len(t.Partitions))
		for j := range t.Partitions {
			p := &t.Partitions[j]
			e.i32(p.Partition)
			e.i16(p.ErrorCode)
			e.nullableStr(p.ErrorMessage)
			e.i16(p.AcknowledgeErrorCode)
			e.nullableStr(p.AcknowledgeErrorMessage)
			e.i32(p.CurrentLeader.LeaderID)
			e.i32(p.CurrentLeader.LeaderEpoch)
			e.uvarint(0) // current leader tags
			switch rs := regionsAt(regions, i, j); {
			case len(rs) > 0:
				e.regionBytes(true, rs)
			case p.Records == nil:
				e.uvarint(0)
			default:
				e.uvarint(uint64(len(p.Records) + 1))
				e.cur = append(e.cur, p.Records...)
			}
			e.arrayLen(true, len(p.AcquiredRecords))
			for _, a := range p.AcquiredRecords {
				e.i64(a.FirstOffset)
				e.i64(a.LastOffset)
				e.i16(a.DeliveryCount)
				e.uvarint(0) // acquired records tags
			}
			e.uvarint(0) // partition tags
		}
		e.uvarint(0) // topic tags
	}
	e.arrayLen(true, len(resp.NodeEndpoints))
	for _, n := range resp.NodeEndpoints {
		e.i32(n.NodeID)
		e.str(true, n.Host)
		e.i32(n.Port)
		e.nullableStr(n.Rack)
		e.uvarint(0) // node endpoint tags
	}
	e.uvarint(0) // response tags
	e.flushBytes()
	return &shareFetchBody{fetchBody: e.body, share: resp}
}
