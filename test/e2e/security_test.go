package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// secureBroker is a broker with three listeners: PLAINTEXT on addr()
// (for the harness), SASL_SSL (SCRAM-SHA-512 for the user admin, PLAIN
// for alice) advertised as localhost, and SSL that requires a client
// certificate. Its certificates come from `samsa dev certs`.
type secureBroker struct {
	*broker
	certs             string
	saslPort, sslPort int
}

func newSecureBroker(t *testing.T, extra ...string) *secureBroker {
	t.Helper()
	certs := filepath.Join(t.TempDir(), "certs")
	out, err := exec.Command(samsaBin, "dev", "certs", certs).CombinedOutput()
	if err != nil {
		t.Fatalf("samsa dev certs: %v\n%s", err, out)
	}
	s := &secureBroker{certs: certs, saslPort: freePort(t), sslPort: freePort(t)}
	plainAddr := func(b *broker) string { return b.addr() }
	_ = plainAddr
	port := freePort(t)
	overrides := []string{
		fmt.Sprintf("listeners=PLAINTEXT://127.0.0.1:%d,SASL_SSL://127.0.0.1:%d,SSL://127.0.0.1:%d", port, s.saslPort, s.sslPort),
		fmt.Sprintf("advertised.listeners=PLAINTEXT://127.0.0.1:%d,SASL_SSL://localhost:%d,SSL://localhost:%d", port, s.saslPort, s.sslPort),
		"inter.broker.listener.name=SASL_SSL",
		"ssl.keystore.location=" + filepath.Join(certs, "server.pem"),
		"ssl.truststore.location=" + filepath.Join(certs, "ca.pem"),
		"listener.name.ssl.ssl.client.auth=required",
		"sasl.enabled.mechanisms=SCRAM-SHA-512,PLAIN",
		`listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" password="admin-secret";`,
		`listener.name.sasl_ssl.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret";`,
	}
	b := &broker{t: t, dir: t.TempDir(), port: port, overrides: append(overrides, extra...), logPath: filepath.Join(t.TempDir(), "samsa.log")}
	t.Cleanup(func() {
		if b.running() {
			b.kill()
		}
		if t.Failed() {
			b.dumpLog()
		}
	})
	b.start()
	s.broker = b
	return s
}

func (s *secureBroker) saslArgs(mech, user, pass string) []string {
	return []string{"-b", "localhost:" + strconv.Itoa(s.saslPort),
		"-X", "security.protocol=SASL_SSL", "-X", "sasl.mechanism=" + mech,
		"-X", "sasl.username=" + user, "-X", "sasl.password=" + pass,
		"-X", "ssl.ca.location=" + filepath.Join(s.certs, "ca.pem")}
}

func (s *secureBroker) sslArgs(withCert bool) []string {
	args := []string{"-b", "localhost:" + strconv.Itoa(s.sslPort),
		"-X", "security.protocol=SSL", "-X", "ssl.ca.location=" + filepath.Join(s.certs, "ca.pem")}
	if withCert {
		args = append(args, "-X", "ssl.certificate.location="+filepath.Join(s.certs, "client.pem"),
			"-X", "ssl.key.location="+filepath.Join(s.certs, "client.key"))
	}
	return args
}

// kcatFails runs kcat expecting failure; it returns its stderr.
func kcatFails(t *testing.T, kcat string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, kcat, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err == nil {
		t.Fatalf("kcat %s succeeded; want a failure\nstdout:\n%s", strings.Join(args, " "), stdout.String())
	}
	return stderr.String()
}

// TestKcatSASLSSLAndMutualTLS uses kcat (librdkafka) as a user would
// against TLS and SASL listeners: SCRAM-SHA-512 and PLAIN over SASL_SSL
// produce and consume, a client certificate on an SSL listener with
// ssl.client.auth=required reads the same records, and wrong passwords,
// a missing client certificate and plain text on a TLS port all fail.
// Metadata names each broker by the address of the listener asked.
func TestKcatSASLSSLAndMutualTLS(t *testing.T) {
	kcat := requireKcat(t)
	s := newSecureBroker(t)

	admin := s.saslArgs("SCRAM-SHA-512", "admin", "admin-secret")
	alice := s.saslArgs("PLAIN", "alice", "alice-secret")
	meta := runKcat(t, kcat, "", append(admin, "-L")...)
	if want := fmt.Sprintf("broker 0 at localhost:%d", s.saslPort); !strings.Contains(meta, want) {
		t.Errorf("SASL_SSL metadata lacks %q:\n%s", want, meta)
	}
	if meta := runKcat(t, kcat, "", "-b", s.addr(), "-L"); !strings.Contains(meta, "broker 0 at "+s.addr()) {
		t.Errorf("PLAINTEXT metadata does not name the PLAINTEXT address %s:\n%s", s.addr(), meta)
	}

	runKcat(t, kcat, "k1:one\nk2:two\n", append(admin, "-t", "secure", "-P", "-K:")...)
	runKcat(t, kcat, "k3:three\n", append(alice, "-t", "secure", "-P", "-K:")...)
	want := "k1=one@0\nk2=two@1\nk3=three@2\n"
	for name, args := range map[string][]string{"SCRAM": admin, "PLAIN": alice, "mTLS": s.sslArgs(true)} {
		got := runKcat(t, kcat, "", append(args, "-t", "secure", "-C", "-e", "-f", `%k=%s@%o\n`)...)
		if got != want {
			t.Errorf("%s consumer read %q, want %q", name, got, want)
		}
	}

	start := time.Now()
	stderr := kcatFails(t, kcat, append(s.saslArgs("SCRAM-SHA-512", "admin", "wrong"), "-L", "-m", "3")...)
	if !strings.Contains(stderr, "Authentication failed") {
		t.Errorf("wrong SCRAM password: stderr lacks the broker's reason:\n%s", stderr)
	}
	stderr = kcatFails(t, kcat, append(s.saslArgs("PLAIN", "alice", "wrong"), "-L", "-m", "3")...)
	if !strings.Contains(stderr, "Authentication failed") || !strings.Contains(stderr, "after 1") && !strings.Contains(stderr, "ms in state AUTH_REQ") {
		t.Errorf("wrong PLAIN password: stderr:\n%s", stderr)
	}
	t.Logf("failed authentications answered within %s", time.Since(start))
	kcatFails(t, kcat, append(s.saslArgs("SCRAM-SHA-256", "admin", "admin-secret"), "-L", "-m", "3")...)
	kcatFails(t, kcat, append(s.sslArgs(false), "-L", "-m", "3")...)
	kcatFails(t, kcat, "-b", "127.0.0.1:"+strconv.Itoa(s.sslPort), "-L", "-m", "3")
	kcatFails(t, kcat, "-b", "127.0.0.1:"+strconv.Itoa(s.saslPort), "-X", "security.protocol=SASL_PLAINTEXT",
		"-X", "sasl.mechanism=PLAIN", "-X", "sasl.username=alice", "-X", "sasl.password=alice-secret", "-L", "-m", "3")
}

// TestConfluentPythonSCRAMOverTLS produces and consumes in a group with
// confluent-kafka-python over SASL_SSL with SCRAM-SHA-512.
func TestConfluentPythonSCRAMOverTLS(t *testing.T) {
	python := requireConfluentPython(t)
	s := newSecureBroker(t)
	script := `
import sys, json
from confluent_kafka import Producer, Consumer
conf = {"bootstrap.servers": sys.argv[1], "security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": "admin", "sasl.password": "admin-secret", "ssl.ca.location": sys.argv[2]}
p = Producer(dict(conf, **{"enable.idempotence": True}))
errs = []
for i in range(200):
    p.produce("py-secure", key=str(i), value="v%d" % i, on_delivery=lambda e, m: e and errs.append(str(e)))
left = p.flush(30)
c = Consumer(dict(conf, **{"group.id": "py-secure-g", "auto.offset.reset": "earliest"}))
c.subscribe(["py-secure"])
seen = []
import time
deadline = time.time() + 60
while len(seen) < 200 and time.time() < deadline:
    m = c.poll(1.0)
    if m is None or m.error():
        continue
    seen.append(m.value().decode())
c.commit(asynchronous=False)
c.close()
print(json.dumps({"errors": errs, "unflushed": left, "seen": seen}))
`
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, python, "-c", script, "localhost:"+strconv.Itoa(s.saslPort), filepath.Join(s.certs, "ca.pem"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("python: %v\nstderr:\n%s", err, stderr.String())
	}
	out := stdout.String()
	if !strings.Contains(out, `"errors": []`) || !strings.Contains(out, `"unflushed": 0`) {
		t.Fatalf("producer: %s", out)
	}
	for i := 0; i < 200; i++ {
		if strings.Count(out, fmt.Sprintf(`"v%d"`, i)) != 1 {
			t.Fatalf("record v%d not consumed exactly once: %s", i, out)
		}
	}
	_ = os.Getenv
}
