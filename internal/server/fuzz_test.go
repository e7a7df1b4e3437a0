package server

// FuzzRequest feeds arbitrary bytes through the reader's frame and request
// decoding path, cut into reads of arbitrary sizes. Invariants:
//
//  1. Decoding never panics.
//  2. Decoding one frame allocates at most a small multiple of the frame
//     (fuzzAllocFactor times its size, plus fuzzAllocSlack).
//  3. A decoded request re-encoded with Request.AppendTo decodes to an
//     equal value.
//
// The seed corpus in testdata/fuzz/FuzzRequest holds requests encoded by
// kmsg (Produce, Fetch, Metadata, ApiVersions at several versions) and
// truncated copies; regenerate it with -update-seeds.

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

var updateSeeds = flag.Bool("update-seeds", false, "rewrite testdata/fuzz/FuzzRequest")

const (
	fuzzMaxFrame    = 1 << 20
	fuzzAllocFactor = 64
	fuzzAllocSlack  = 64 << 10
)

// allVersions serves every API kmsg knows at every version it knows.
func allVersions(key int16) (int16, int16, bool) {
	r := kmsg.RequestForKey(key)
	if r == nil {
		return 0, 0, false
	}
	return 0, r.MaxVersion(), true
}

// chunkReader returns at most n bytes per Read.
type chunkReader struct {
	r io.Reader
	n int
}

func (c chunkReader) Read(p []byte) (int, error) {
	if len(p) > c.n {
		p = p[:c.n]
	}
	return c.r.Read(p)
}

func FuzzRequest(f *testing.F) {
	f.Fuzz(func(t *testing.T, stream []byte, chunk uint8) {
		r := chunkReader{r: bytes.NewReader(stream), n: int(chunk) + 1}
		for {
			frame, _, err := readFrame(r, fuzzMaxFrame, nil)
			if err != nil {
				return
			}
			checkDecode(t, frame)
		}
	})
}

func checkDecode(t *testing.T, frame []byte) {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	req, err := DecodeRequest(frame, allVersions)
	runtime.ReadMemStats(&after)
	if d := after.TotalAlloc - before.TotalAlloc; d > uint64(fuzzAllocFactor*len(frame)+fuzzAllocSlack) {
		t.Fatalf("decoding a %d-byte frame allocated %d bytes", len(frame), d)
	}
	if err != nil {
		for _, want := range []error{ErrMalformed, ErrUnknownAPIKey, ErrUnsupportedVersion} {
			if errors.Is(err, want) {
				return
			}
		}
		t.Fatalf("error %v wraps no sentinel", err)
	}
	if req.UnsupportedVersion {
		return
	}
	enc := req.AppendTo(nil)
	req2, err := DecodeRequest(enc, allVersions)
	if err != nil {
		t.Fatalf("re-encoded request does not decode: %v\nframe % x\nre-encoded % x", err, frame, enc)
	}
	req.Size, req2.Size = 0, 0
	if !reflect.DeepEqual(req, req2) {
		t.Fatalf("re-decoded request differs:\n%#v\n%#v", req.Body, req2.Body)
	}
}

// seedRequests are well-formed requests for the corpus.
func seedRequests() map[string][]byte {
	out := make(map[string][]byte)
	id := "seed-client"
	add := func(body kmsg.Request, versions ...int16) {
		for _, v := range versions {
			body.SetVersion(v)
			r := &Request{APIKey: body.Key(), APIVersion: v, CorrelationID: int32(v) + 100, ClientID: &id, Body: body}
			out[fmt.Sprintf("%s-v%d", kmsg.NameForKey(body.Key()), v)] = frame(r.AppendTo(nil))
		}
	}
	produce := kmsg.NewPtrProduceRequest()
	produce.Acks = -1
	produce.TimeoutMillis = 30000
	pt := kmsg.NewProduceRequestTopic()
	pt.Topic = "orders"
	pp := kmsg.NewProduceRequestTopicPartition()
	pp.Partition = 3
	pp.Records = bytes.Repeat([]byte{0xab}, 61)
	pt.Partitions = append(pt.Partitions, pp)
	produce.Topics = append(produce.Topics, pt)
	add(produce, 3, 7, 9, 11)

	fetch := kmsg.NewPtrFetchRequest()
	fetch.MaxWaitMillis = 500
	fetch.MinBytes = 1
	fetch.MaxBytes = 52428800
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "orders"
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.Partition = 0
	fp.FetchOffset = 42
	fp.PartitionMaxBytes = 1048576
	ft.Partitions = append(ft.Partitions, fp)
	fetch.Topics = append(fetch.Topics, ft)
	add(fetch, 4, 11, 12)

	add(metadata("orders", "payments"), 1, 4, 9, 12)
	md := kmsg.NewPtrMetadataRequest()
	md.Topics = nil // all topics
	add(md, 1, 9)

	av := kmsg.NewPtrApiVersionsRequest()
	av.ClientSoftwareName = "samsa-seed"
	av.ClientSoftwareVersion = "1.0"
	add(av, 0, 3, 4)
	out["ApiVersions-v99"] = frame([]byte{0, 18, 0, 99, 0, 0, 0, 1, 0, 1, 'x', 0})
	return out
}

func TestFuzzSeeds(t *testing.T) {
	// Each well-formed seed decodes to the request that produced it.
	for name, f := range seedRequests() {
		t.Run(name, func(t *testing.T) {
			frame, _, err := readFrame(bytes.NewReader(f), fuzzMaxFrame, nil)
			if err != nil {
				t.Fatal(err)
			}
			req, err := DecodeRequest(frame, allVersions)
			if err != nil {
				t.Fatal(err)
			}
			if got := frameOf(req); !bytes.Equal(got, f) && !req.UnsupportedVersion {
				t.Fatalf("re-encoded % x, want % x", got, f)
			}
			checkDecode(t, frame)
		})
	}
	if !*updateSeeds {
		return
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzRequest")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name string, data []byte, chunk uint8) {
		body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\nuint8(%d)\n", data, chunk)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var all []byte
	for name, f := range seedRequests() {
		write(name, f, 255)
		write(name+"-split", f, 2)
		write(name+"-truncated", f[:len(f)/2], 255)
		// A frame whose size claims the whole, with the body cut short.
		cut := append([]byte(nil), f[:4]...)
		cut = append(cut, f[4:4+(len(f)-4)*3/4]...)
		cut = append(cut[:0:0], cut...)
		copy(cut[:4], bytesBE32(uint32(len(cut)-4)))
		write(name+"-short-body", cut, 255)
		all = append(all, f...)
	}
	write("pipelined", all, 7)
}

func frameOf(r *Request) []byte { return frame(r.AppendTo(nil)) }

func bytesBE32(v uint32) []byte { return []byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)} }
