package broker

import (
	"bytes"
	"math/rand"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/server"
	"samsa/internal/storage"
)

// TestShareFetchBodyEncodesLikeKmsg checks that the sendfile layout of a
// ShareFetch response is byte for byte kmsg's encoding of the same
// response, at every served version, with and without error messages,
// records, acquired ranges and node endpoints.
func TestShareFetchBodyEncodesLikeKmsg(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	f, data := randomFile(t, rng)
	str := func() *string {
		if rng.Intn(2) == 0 {
			return nil
		}
		s := string(rune('a' + rng.Intn(26)))
		return &s
	}

	for v := versions[78].min; v <= versions[78].max; v++ {
		for trial := 0; trial < 50; trial++ {
			resp := kmsg.NewPtrShareFetchResponse()
			resp.SetVersion(v)
			resp.ThrottleMillis = rng.Int31()
			resp.ErrorCode = int16(rng.Intn(100))
			resp.ErrorMessage = str()
			resp.AcquisitionLockTimeoutMillis = rng.Int31()
			var regions [][][]storage.Region
			for i := rng.Intn(3); i > 0; i-- {
				t := kmsg.NewShareFetchResponseTopic()
				rng.Read(t.TopicID[:])
				var tr [][]storage.Region
				for j := rng.Intn(4); j > 0; j-- {
					p := kmsg.NewShareFetchResponseTopicPartition()
					p.Partition = rng.Int31()
					p.ErrorCode = int16(rng.Intn(100))
					p.ErrorMessage = str()
					p.AcknowledgeErrorCode = int16(rng.Intn(100))
					p.AcknowledgeErrorMessage = str()
					p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch = rng.Int31(), rng.Int31()
					var rs []storage.Region
					switch rng.Intn(3) {
					case 0: // regions
						for k := rng.Intn(3) + 1; k > 0; k-- {
							pos := rng.Int63n(int64(len(data)) - 1)
							size := rng.Int63n(int64(len(data))-pos) + 1
							rs = append(rs, storage.Region{File: f, Pos: pos, Size: size})
							p.Records = append(p.Records, data[pos:pos+size]...)
						}
					case 1: // bytes of its own
						p.Records = bytes.Clone(data[:rng.Intn(100)+1])
					}
					for k := rng.Intn(3); k > 0; k-- {
						p.AcquiredRecords = append(p.AcquiredRecords, kmsg.ShareFetchResponseTopicPartitionAcquiredRecord{
							FirstOffset: rng.Int63(), LastOffset: rng.Int63(), DeliveryCount: int16(rng.Intn(10)),
						})
					}
					t.Partitions = append(t.Partitions, p)
					tr = append(tr, rs)
				}
				resp.Topics = append(resp.Topics, t)
				regions = append(regions, tr)
			}
			for k := rng.Intn(3); k > 0; k-- {
				n := kmsg.NewShareFetchResponseNodeEndpoint()
				n.NodeID, n.Host, n.Port, n.Rack = rng.Int31(), "host", rng.Int31(), str()
				resp.NodeEndpoints = append(resp.NodeEndpoints, n)
			}
			want := resp.AppendTo(nil)
			// NB: the layout reads the records from the regions, not
			// from Records, wherever a partition has regions.
			for i := range resp.Topics {
				for j := range resp.Topics[i].Partitions {
					if len(regions[i][j]) > 0 {
						resp.Topics[i].Partitions[j].Records = nil
					}
				}
			}
			checkLayout(t, v, trial, &encodeShareFetchResponse(resp, regions).fetchBody, want)
		}
	}
}

// TestShareFetchBodyCarriesItsThrottle: a quota's throttle reaches the
// throttle_time_ms of a share fetch answered as a sendfile layout, as it
// does a kmsg-encoded one (KIP-219), and the connection is muted for it.
func TestShareFetchBodyCarriesItsThrottle(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	f, _ := randomFile(t, rng)
	for v := versions[78].min; v <= versions[78].max; v++ {
		resp := kmsg.NewPtrShareFetchResponse()
		resp.SetVersion(v)
		tp := kmsg.NewShareFetchResponseTopic()
		tp.Partitions = append(tp.Partitions, kmsg.NewShareFetchResponseTopicPartition())
		resp.Topics = append(resp.Topics, tp)
		body := encodeShareFetchResponse(resp, [][][]storage.Region{{{{File: f, Pos: 10, Size: 100}}}})
		r := throttleReply(server.Reply{Body: body}, v, 1500*time.Millisecond)
		if r.Throttle != 1500*time.Millisecond {
			t.Fatalf("v%d: connection muted %v, want 1.5s", v, r.Throttle)
		}
		got, err := body.AppendTo(nil)
		if err != nil {
			t.Fatal(err)
		}
		dec := kmsg.NewPtrShareFetchResponse()
		dec.SetVersion(v)
		if err := dec.ReadFrom(got); err != nil {
			t.Fatal(err)
		}
		if dec.ThrottleMillis != 1500 || len(dec.Topics) != 1 || len(dec.Topics[0].Partitions[0].Records) != 100 {
			t.Fatalf("v%d: throttle %d ms, %d topics", v, dec.ThrottleMillis, len(dec.Topics))
		}
	}
}
