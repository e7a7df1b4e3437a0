package chaos

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// The secure profile puts inter-broker traffic on a SASL_SSL listener with
// mutual TLS, as docs/security.md describes, while clients keep the
// PLAINTEXT listener:
//
//	listener  | used by                                   | security
//	----------+-------------------------------------------+---------------------------------------
//	PLAINTEXT | clients (franz-go, librdkafka), the tests | none
//	SASL_SSL  | replica fetchers (inter.broker.listener)  | TLS, client certificate required,
//	          |                                           | SCRAM-SHA-512 as user "broker"
//
// SAMSA_CHAOS_SECURE=1 turns it on for every cluster a test starts; the
// *SASLSSL scenarios turn it on themselves. Certificates are made once per
// cluster by `samsa dev certs` (the binary under test); the server
// certificate, which names localhost and 127.0.0.1, is every broker's key
// store and so also the client certificate brokers present to each other.
// The first broker to start stores the SCRAM credential of "broker" in
// etcd (ensureInterBrokerCredential); brokers started later keep it.

// Inter-broker SCRAM user of the secure profile.
const (
	interBrokerUser     = "broker"
	interBrokerPassword = "broker-secret"
)

// jaasOverride is the name of the JAAS config the inter-broker listener
// reads for SCRAM-SHA-512.
const jaasOverride = "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config"

// clusterProfile says how the brokers of a cluster reach each other.
type clusterProfile struct {
	// secure gives every broker a SASL_SSL inter-broker listener beside
	// the PLAINTEXT one clients use.
	secure bool
	// overrides are broker configs set after the scenarios' common ones.
	overrides []string
	// env is added to every broker's environment.
	env []string
}

// secureProfile is the profile of the *SASLSSL scenarios.
var secureProfile = clusterProfile{secure: true}

// envProfile is the profile SAMSA_CHAOS_SECURE asks for; insecure unless
// it is set.
func envProfile() clusterProfile {
	return clusterProfile{secure: os.Getenv("SAMSA_CHAOS_SECURE") != ""}
}

func (p clusterProfile) String() string {
	if p.secure {
		return "inter-broker SASL_SSL (mTLS, SCRAM-SHA-512)"
	}
	return "PLAINTEXT"
}

// devCerts is a directory written by `samsa dev certs`.
type devCerts struct{ dir string }

// makeDevCerts runs `samsa dev certs dir`.
func makeDevCerts(t *testing.T, dir string) devCerts {
	t.Helper()
	out, err := exec.Command(samsaBin, "dev", "certs", dir).CombinedOutput()
	if err != nil {
		t.Fatalf("samsa dev certs %s: %v\n%s", dir, err, out)
	}
	return devCerts{dir: dir}
}

// ca is the CA certificate (ssl.truststore.location).
func (d devCerts) ca() string { return filepath.Join(d.dir, "ca.pem") }

// keystore is the server key store: key, certificate and CA
// (ssl.keystore.location).
func (d devCerts) keystore() string { return filepath.Join(d.dir, "server.pem") }

// jaas is the inter-broker JAAS config with password.
func jaas(password string) string {
	return `org.apache.kafka.common.security.scram.ScramLoginModule required username="` +
		interBrokerUser + `" password="` + password + `";`
}

// listenerArgs returns the `samsa serve` overrides for b's listeners:
// PLAINTEXT on b.port alone, or under the secure profile also SASL_SSL on
// b.securePort as the inter-broker listener. plainAdv and secureAdv are
// the advertised host:port of each ("" advertises the listener itself).
func (c *testCluster) listenerArgs(b *broker, plainAdv, secureAdv string) []string {
	if plainAdv == "" {
		plainAdv = b.addr()
	}
	if c.certs == nil {
		args := []string{"--override", "listeners=PLAINTEXT://" + b.addr()}
		if plainAdv != b.addr() {
			args = append(args, "--override", "advertised.listeners=PLAINTEXT://"+plainAdv)
		}
		return args
	}
	if secureAdv == "" {
		// NB: localhost, not 127.0.0.1, so that followers verify the
		// leader's certificate by its DNS name.
		secureAdv = net.JoinHostPort("localhost", strconv.Itoa(b.securePort))
	}
	overrides := []string{
		"listeners=PLAINTEXT://" + b.addr() + ",SASL_SSL://" + b.secureAddr(),
		"advertised.listeners=PLAINTEXT://" + plainAdv + ",SASL_SSL://" + secureAdv,
		"inter.broker.listener.name=SASL_SSL",
		"ssl.keystore.location=" + c.certs.keystore(),
		"ssl.truststore.location=" + c.certs.ca(),
		"listener.name.sasl_ssl.ssl.client.auth=required",
		"sasl.enabled.mechanisms=SCRAM-SHA-512",
		jaasOverride + "=" + jaas(interBrokerPassword),
	}
	var args []string
	for _, o := range overrides {
		args = append(args, "--override", o)
	}
	return args
}

// setOverride sets `--override name=value` in b's arguments for its next
// start, replacing an earlier value of name.
func (b *broker) setOverride(name, value string) {
	for i := 0; i+1 < len(b.args); i++ {
		if b.args[i] == "--override" && strings.HasPrefix(b.args[i+1], name+"=") {
			b.args[i+1] = name + "=" + value
			return
		}
	}
	b.args = append(b.args, "--override", name+"="+value)
}

// linkTLS returns the TLS settings of a link in front of a SASL_SSL
// listener: it serves the broker key store and requires a client
// certificate signed by the CA, as the broker does, and presents the key
// store to the broker behind it.
func (d devCerts) linkTLS(t *testing.T) *linkTLS {
	t.Helper()
	cert, err := tls.LoadX509KeyPair(d.keystore(), d.keystore())
	if err != nil {
		t.Fatalf("load %s: %v", d.keystore(), err)
	}
	pem, err := os.ReadFile(d.ca())
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		t.Fatalf("%s: no certificate", d.ca())
	}
	return &linkTLS{
		server: &tls.Config{
			Certificates: []tls.Certificate{cert},
			ClientAuth:   tls.RequireAndVerifyClientCert,
			ClientCAs:    pool,
			MinVersion:   tls.VersionTLS12,
		},
		client: &tls.Config{
			Certificates: []tls.Certificate{cert},
			RootCAs:      pool,
			ServerName:   "127.0.0.1",
			MinVersion:   tls.VersionTLS12,
		},
	}
}

// TestSASLSSLFollowerWithWrongPasswordStaysOutOfISR shows that the secure
// profile's replication really runs over SASL_SSL: a broker restarted with
// a wrong inter-broker password cannot fetch from any leader, so it stays
// out of every ISR while the leaders log its failed authentications; on a
// PLAINTEXT inter-broker path the password is never used and it would
// rejoin. Restarted with the right password it rejoins, so the password
// was the only thing in its way.
func TestSASLSSLFollowerWithWrongPasswordStaysOutOfISR(t *testing.T) {
	const (
		topic      = "secure-auth"
		partitions = 3
		// outFor is how long the refused follower is watched: more than
		// T_lag, after which a follower that fetches is caught up.
		outFor = 3 * 5 * time.Second
	)
	c := startClusterWith(t, secureProfile)
	c.createTopic(topic, partitions)
	victim := c.brokers[numBrokers-1]
	victim.kill()

	cl, err := kgo.NewClient(kgo.SeedBrokers(c.addrs()...), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	produce := func(n int) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		var recs []*kgo.Record
		for i := range n {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(i % partitions), Value: []byte(strconv.Itoa(i))})
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}
	// Records it lacks, written once it is out of every ISR.
	waitFor(t, isrTimeout, func() error {
		for p := range int32(partitions) {
			st, err := c.state(topic, p)
			if err != nil {
				return err
			}
			if st.inISR(victim.id) {
				return fmt.Errorf("%s-%d: %v", topic, p, st)
			}
		}
		return nil
	})
	produce(30)

	victim.setOverride(jaasOverride, jaas("wrong-secret"))
	c.restart(victim)
	until := time.Now().Add(outFor)
	for time.Now().Before(until) {
		produce(3)
		for p := range int32(partitions) {
			if st := c.mustState(topic, p); st.inISR(victim.id) {
				t.Fatalf("%s-%d: broker %d with a wrong inter-broker password joined the ISR: %v", topic, p, victim.id, st)
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	refused := 0
	for _, b := range c.brokers[:numBrokers-1] {
		for line := range strings.Lines(b.log()) {
			if strings.Contains(line, "authentication failed") && strings.Contains(line, "SASL_SSL") {
				refused++
			}
		}
	}
	if refused == 0 {
		t.Errorf("no leader logged a failed authentication on SASL_SSL")
	}
	t.Logf("broker %d with a wrong password: out of every ISR for %s, %d failed authentications logged by the leaders",
		victim.id, outFor, refused)

	victim.kill()
	victim.setOverride(jaasOverride, jaas(interBrokerPassword))
	restartedAt := time.Now()
	c.restart(victim)
	c.waitFullISR(topic, partitions)
	t.Logf("broker %d with the right password: full ISR after %s", victim.id, time.Since(restartedAt).Round(time.Millisecond))
}
