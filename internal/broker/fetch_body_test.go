package broker

import (
	"bytes"
	"math/rand"
	"os"
	"path/filepath"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/storage"
	"samsa/internal/vfs"
)

// TestFetchBodyEncodesLikeKmsg checks that the sendfile layout of a Fetch
// response is byte for byte kmsg's encoding of the same response, at every
// served version.
func TestFetchBodyEncodesLikeKmsg(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	f, data := randomFile(t, rng)

	for v := versions[1].min; v <= versions[1].max; v++ {
		for trial := 0; trial < 20; trial++ {
			resp := kmsg.NewPtrFetchResponse()
			resp.SetVersion(v)
			resp.ThrottleMillis = rng.Int31()
			resp.ErrorCode = int16(rng.Intn(100))
			resp.SessionID = rng.Int31()
			var regions [][][]storage.Region
			for i := rng.Intn(3); i > 0; i-- {
				t := kmsg.NewFetchResponseTopic()
				t.Topic = string(rune('a' + rng.Intn(26)))
				rng.Read(t.TopicID[:])
				var tr [][]storage.Region
				for j := rng.Intn(4); j > 0; j-- {
					p := kmsg.NewFetchResponseTopicPartition()
					p.Partition = rng.Int31()
					p.ErrorCode = int16(rng.Intn(100))
					p.HighWatermark, p.LastStableOffset, p.LogStartOffset = rng.Int63(), rng.Int63(), rng.Int63()
					p.PreferredReadReplica = -1
					if rng.Intn(2) == 0 {
						p.AbortedTransactions = []kmsg.FetchResponseTopicPartitionAbortedTransaction{{ProducerID: rng.Int63(), FirstOffset: rng.Int63()}}
					}
					var rs []storage.Region
					for k := rng.Intn(3); k > 0; k-- {
						pos := rng.Int63n(int64(len(data)) - 1)
						size := rng.Int63n(int64(len(data)) - pos)
						rs = append(rs, storage.Region{File: f, Pos: pos, Size: size})
						p.RecordBatches = append(p.RecordBatches, data[pos:pos+size]...)
					}
					if p.RecordBatches == nil {
						p.RecordBatches = []byte{}
					}
					t.Partitions = append(t.Partitions, p)
					tr = append(tr, rs)
				}
				resp.Topics = append(resp.Topics, t)
				regions = append(regions, tr)
			}
			checkLayout(t, v, trial, encodeFetchResponse(resp, regions), resp.AppendTo(nil))
		}
	}
}

// checkLayout checks that body, a response laid out for sendfile, is
// byte for byte want (kmsg's encoding) through AppendTo, Len and WriteTo.
func checkLayout(t *testing.T, v int16, trial int, body *fetchBody, want []byte) {
	t.Helper()
	got, err := body.AppendTo(nil)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("v%d trial %d: encoding differs from kmsg (got %d bytes, want %d)", v, trial, len(got), len(want))
	}
	if body.Len() != len(want) {
		t.Fatalf("v%d: Len %d, encoded %d", v, body.Len(), len(want))
	}
	var buf bytes.Buffer
	if n, err := body.WriteTo(&buf); err != nil || n != int64(len(want)) || !bytes.Equal(buf.Bytes(), want) {
		t.Fatalf("v%d: WriteTo wrote %d bytes, err %v", v, n, err)
	}
}

// randomFile is fileOf 64 KiB of rng's bytes.
func randomFile(t *testing.T, rng *rand.Rand) (vfs.File, []byte) {
	data := make([]byte, 64<<10)
	rng.Read(data)
	return fileOf(t, data), data
}

// fileOf writes data to a file of the test's and opens it through vfs,
// as a segment is; the file is closed when the test ends.
func fileOf(t *testing.T, data []byte) vfs.File {
	t.Helper()
	path := filepath.Join(t.TempDir(), "seg.log")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := vfs.Default.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}
