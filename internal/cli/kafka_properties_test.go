package cli_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"samsa/internal/cli"
	"samsa/internal/testutil"
)

// TestKRaftControllerListenerIsNotOpenedAsAKafkaPort: a broker given a
// KRaft server.properties' CONTROLLER listener (named in
// controller.listener.names) serves its Kafka listener and leaves the
// controller port closed.
func TestKRaftControllerListenerIsNotOpenedAsAKafkaPort(t *testing.T) {
	ctlAddr := closedAddr(t)
	b := testutil.StartBroker(t,
		"listeners=PLAINTEXT://127.0.0.1:0,CONTROLLER://"+ctlAddr,
		"controller.listener.names=CONTROLLER",
		"listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT")
	if a := b.Node.ListenerAddr("CONTROLLER"); a != "" {
		t.Fatalf("CONTROLLER listener opened at %s", a)
	}
	if c, err := net.DialTimeout("tcp", ctlAddr, time.Second); err == nil {
		c.Close()
		t.Fatalf("something accepts on the controller address %s", ctlAddr)
	}
	mustSamsa(t, b.Addr(), "topic", "list")
}

// TestConfigValidateAcceptsAZooKeeperEraFileWithOneWarning runs `samsa
// config validate` on a ZooKeeper-era server.properties.
func TestConfigValidateAcceptsAZooKeeperEraFileWithOneWarning(t *testing.T) {
	path := filepath.Join(t.TempDir(), "server.properties")
	props := "broker.id=0\nlisteners=PLAINTEXT://127.0.0.1:9092\nlog.dirs=" + t.TempDir() +
		"\nzookeeper.connect=localhost:2181\nzookeeper.connection.timeout.ms=18000\n"
	if err := os.WriteFile(path, []byte(props), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := cli.RunForTest(context.Background(), "", "config", "validate", "--config", path)
	if code != cli.ExitOK || out != "configuration valid\n" ||
		errs != "warning: ignored Kafka configs that have no meaning in samsa: zookeeper.connect, zookeeper.connection.timeout.ms\n" {
		t.Fatalf("exit %d\nstdout %q\nstderr %q", code, out, errs)
	}
	code, _, errs = cli.RunForTest(context.Background(), "", "config", "validate", "--override", "segment.bytes=1000")
	if code == cli.ExitOK || !strings.Contains(errs, "did you mean log.segment.bytes?") {
		t.Fatalf("segment.bytes at broker level: exit %d, stderr %q", code, errs)
	}
}
