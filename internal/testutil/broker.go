package testutil

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"samsa/internal/config"
	"samsa/internal/node"
	"samsa/internal/vfs"
)

// Broker is an in-process samsa broker.
type Broker struct {
	t       testing.TB
	Dir     string
	cfgArgs []string
	Node    *node.Node
	logTo   io.Writer // where the broker logs; nil discards
	// Log keeps the broker's log, in JSON, if it was started by
	// StartBrokerLogged or StartClusterLogged; nil otherwise.
	Log *LogBuffer
	// FS holds the broker's partitions (node.Config.FS); nil is the
	// disk. Set it between Cluster.Kill and Cluster.Start to restart the
	// broker on another file system, such as a MemFS.CrashClone.
	FS vfs.FS
	// Now is the broker's clock (node.Config.Now); nil is time.Now. Set
	// it before the broker starts (Cluster.Start).
	Now func() time.Time
}

// StartBroker starts a broker on 127.0.0.1 with a free port and a data dir
// under t.TempDir(). overrides are Kafka config settings, name=value. The
// broker is closed when the test ends.
func StartBroker(t testing.TB, overrides ...string) *Broker {
	t.Helper()
	b, err := TryStartBroker(t, overrides...)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// StartBrokerLogging is StartBroker with the broker's log (text, debug
// level) written to w, which must be safe for concurrent writes.
func StartBrokerLogging(t testing.TB, w io.Writer, overrides ...string) *Broker {
	t.Helper()
	b := &Broker{t: t, Dir: t.TempDir(), logTo: w}
	b.cfgArgs = append([]string{
		"listeners=PLAINTEXT://127.0.0.1:0",
		"log.dirs=" + b.Dir,
		"admin.listener=",
	}, overrides...)
	b.start()
	t.Cleanup(func() { b.Node.Close() })
	return b
}

// TryStartBroker is StartBroker for a broker that may not start: it
// returns the error of a config that does not load or a node that does
// not start, instead of failing the test.
func TryStartBroker(t testing.TB, overrides ...string) (*Broker, error) {
	t.Helper()
	return tryStartBroker(t, nil, overrides)
}

// StartBrokerLogged is StartBroker with the broker's log kept in
// Broker.Log, in JSON at log.level (info unless overrides say otherwise).
func StartBrokerLogged(t testing.TB, overrides ...string) *Broker {
	t.Helper()
	b, err := tryStartBroker(t, new(LogBuffer), overrides)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func tryStartBroker(t testing.TB, lb *LogBuffer, overrides []string) (*Broker, error) {
	t.Helper()
	b := &Broker{t: t, Dir: t.TempDir(), Log: lb}
	b.cfgArgs = append([]string{
		"listeners=PLAINTEXT://127.0.0.1:0",
		"log.dirs=" + b.Dir,
		"admin.listener=",
	}, overrides...)
	if err := b.tryStart(); err != nil {
		return nil, err
	}
	t.Cleanup(func() { b.Node.Close() })
	return b, nil
}

func (b *Broker) start() {
	b.t.Helper()
	if err := b.tryStart(); err != nil {
		b.t.Fatal(err)
	}
}

func (b *Broker) tryStart() error {
	cfg, err := config.Load("", b.cfgArgs)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if mfs, ok := b.FS.(*vfs.MemFS); ok {
		// The log dir's parents exist on a real disk before the broker
		// starts; on a MemFS they must be as durable.
		if err := mfs.MkdirAllDurable(filepath.Dir(b.Dir)); err != nil {
			return err
		}
	}
	n, err := node.Start(ctx, node.Config{Broker: cfg, Logger: testLogger(cfg, b.Log, b.logTo), FS: b.FS, Now: b.Now})
	if err != nil {
		return fmt.Errorf("start broker: %w", err)
	}
	b.Node = n
	return nil
}

// testLogger returns the logger of a test broker: JSON into lb when lb
// is not nil; else debug text on stderr when SAMSA_TEST_LOG is set; else
// nothing.
func testLogger(cfg *config.Broker, lb *LogBuffer, w io.Writer) *slog.Logger {
	switch {
	case w != nil:
		c := *cfg
		c.LogLevel = slog.LevelDebug
		return node.NewLogger(w, &c)
	case lb != nil:
		c := *cfg
		c.LogFormat = "json"
		return node.NewLogger(lb, &c)
	case os.Getenv("SAMSA_TEST_LOG") != "":
		c := *cfg
		c.LogLevel = slog.LevelDebug
		return node.NewLogger(os.Stderr, &c)
	}
	return slog.New(slog.DiscardHandler)
}

// Addr is the broker's Kafka address.
func (b *Broker) Addr() string { return b.Node.Addr() }

// Restart shuts the broker down cleanly and starts it again on the same data
// dir and port.
func (b *Broker) Restart() {
	b.t.Helper()
	addr := b.Addr()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := b.Node.Shutdown(ctx); err != nil {
		b.t.Fatalf("shutdown: %v", err)
	}
	b.setListener(addr)
	b.start()
}

func (b *Broker) setListener(addr string) {
	for i, a := range b.cfgArgs {
		if strings.HasPrefix(a, "listeners=") {
			b.cfgArgs[i] = "listeners=PLAINTEXT://" + addr
		}
	}
}

// Client returns a franz-go client for the broker, closed at the end of the
// test.
func (b *Broker) Client(opts ...kgo.Opt) *kgo.Client {
	b.t.Helper()
	return NewClient(b.t, b.Addr(), opts...)
}

// NewClient returns a franz-go client for addr, closed at the end of the
// test.
func NewClient(t testing.TB, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr)}, opts...)...)
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// Admin returns an admin client for the broker.
func (b *Broker) Admin() *kadm.Client {
	return kadm.NewClient(b.Client())
}

// CreateTopic creates a topic with the given partitions and configs
// (name=value) and fails the test on error.
func CreateTopic(t testing.TB, adm *kadm.Client, topic string, partitions int32, configs ...string) {
	t.Helper()
	cfgs := make(map[string]*string)
	for _, c := range configs {
		k, v, _ := strings.Cut(c, "=")
		cfgs[k] = &v
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := adm.CreateTopic(ctx, partitions, 1, cfgs, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create topic %s: %v", topic, err)
	}
}

// Eventually polls cond every 10ms until it returns nil or d passes, then
// fails the test with cond's last error.
func Eventually(t testing.TB, d time.Duration, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("condition not met after %v: %v", d, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Errorf is fmt.Errorf, for Eventually conditions.
var Errorf = fmt.Errorf
