package server

import (
	"bytes"
	"fmt"
	"testing"
)

func BenchmarkDecodeRequest(b *testing.B) {
	seeds := seedRequests()
	for _, name := range []string{"Produce-v11", "Fetch-v12", "Metadata-v12", "ApiVersions-v4"} {
		f := seeds[name][4:]
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(f)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := DecodeRequest(f, allVersions); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkPipelined measures round trips of small pipelined requests on
// one connection, batch requests at a time.
func BenchmarkPipelined(b *testing.B) {
	for _, batch := range []int{1, 16, 256} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			h := newTestHandler()
			s := New(Config{}, h)
			ln := listen(b)
			done := make(chan error, 1)
			go func() { done <- s.Serve(ln) }()
			defer func() { s.Close(); <-done }()
			c := dial(b, ln.Addr().String())
			var out bytes.Buffer
			for i := range batch {
				out.Write(encode(int32(i), metadata("t"), 9))
			}
			b.ReportAllocs()
			b.SetBytes(int64(out.Len()))
			for b.Loop() {
				c.write(out.Bytes())
				for range batch {
					if _, _, err := c.readResponse(true); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batch), "ns/request")
		})
	}
}
