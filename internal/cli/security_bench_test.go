package cli_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"samsa/internal/testutil"
	"samsa/internal/tlsconfig"
)

// BenchmarkSASLSSLConnect opens conns connections at once to a SASL_SSL
// listener, each a TLS 1.3 handshake, SaslHandshake and a SCRAM-SHA-512
// exchange (client side PBKDF2 at 4096 iterations) and one Metadata
// request, and reports the p50 and p99 time from dial to the Metadata
// answer. Target (issue): p99 under 20 ms with 100 connections.
func BenchmarkSASLSSLConnect(b *testing.B) {
	dir := b.TempDir()
	files, err := tlsconfig.GenerateDevCerts(dir, nil, time.Now())
	if err != nil {
		b.Fatal(err)
	}
	br := testutil.StartBroker(b,
		"listeners=PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0",
		"inter.broker.listener.name=SASL_SSL",
		"ssl.keystore.location="+files.Server,
		"sasl.enabled.mechanisms=SCRAM-SHA-512",
		`listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="bench" password="bench-secret";`,
	)
	addr := br.Node.ListenerAddr("SASL_SSL")
	pem, err := os.ReadFile(filepath.Join(dir, "ca.pem"))
	if err != nil {
		b.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	for _, conns := range []int{1, 10, 100} {
		b.Run(fmt.Sprintf("conns=%d", conns), func(b *testing.B) { benchConnect(b, addr, pool, conns) })
	}
}

func benchConnect(b *testing.B, addr string, pool *x509.CertPool, conns int) {
	var all []time.Duration
	b.ResetTimer()
	for range b.N {
		var mu sync.Mutex
		var wg sync.WaitGroup
		for range conns {
			wg.Add(1)
			go func() {
				defer wg.Done()
				start := time.Now()
				cl, err := kgo.NewClient(kgo.SeedBrokers(addr),
					kgo.DialTLSConfig(&tls.Config{RootCAs: pool, ServerName: "localhost"}),
					kgo.SASL(scram.Auth{User: "bench", Pass: "bench-secret"}.AsSha512Mechanism()))
				if err != nil {
					b.Error(err)
					return
				}
				defer cl.Close()
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				if _, err := cl.SeedBrokers()[0].Request(ctx, kmsg.NewPtrMetadataRequest()); err != nil {
					b.Error(err)
					return
				}
				d := time.Since(start)
				mu.Lock()
				all = append(all, d)
				mu.Unlock()
			}()
		}
		wg.Wait()
	}
	b.StopTimer()
	slices.Sort(all)
	if len(all) > 0 {
		b.ReportMetric(float64(all[len(all)/2].Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(all[len(all)*99/100].Microseconds())/1000, "p99-ms")
	}
}
