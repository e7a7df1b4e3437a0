package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"samsa/internal/config"
	"samsa/internal/node"
)

// serveEtcdFlags are the flags of `samsa serve` that stand for an etcd
// config, named after etcdctl's flags (--endpoints, --cacert, --cert,
// --key) with an etcd- prefix.
var serveEtcdFlags = []struct{ flag, config, usage string }{
	{"etcd-endpoints", "etcd.endpoints", "external etcd cluster, comma-separated URLs (etcd.endpoints); unset runs an embedded etcd"},
	{"etcd-cacert", "etcd.ssl.ca.file", "PEM CA bundle that verifies the etcd servers (etcd.ssl.ca.file)"},
	{"etcd-cert", "etcd.ssl.cert.file", "PEM client certificate for etcd (etcd.ssl.cert.file)"},
	{"etcd-key", "etcd.ssl.key.file", "PEM private key of --etcd-cert (etcd.ssl.key.file)"},
}

// newServeCmd returns the `samsa serve` command.
func newServeCmd() *cobra.Command {
	var (
		configPath string
		overrides  []string
		logLevel   string
		etcdValues = make([]string, len(serveEtcdFlags))
	)
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run a samsa broker",
		Long: `Run a samsa broker.

With no flags, serve runs a complete single-broker cluster: a Kafka listener
on 127.0.0.1:9092, an embedded etcd holding the cluster metadata, the admin
HTTP endpoints (/metrics, /healthz, /readyz) on 127.0.0.1:9080 with the web
console at http://127.0.0.1:9080/console/ (its address is printed once the
broker is ready), and data in ./samsa-data.

The console (console.enabled, console.listener, console.read.only) is
served by default only while its listener is on a loopback address; see
docs/console.md.

Configuration uses Kafka's names (node.id, listeners, log.dirs,
log.retention.ms, ...), from a server.properties file given with --config
and from --override name=value, which wins over the file. Unknown names are
an error, with the config a near miss most likely meant. A Kafka
server.properties loads: Kafka configs that have no meaning in samsa
(zookeeper.connect, KRaft's metadata log, thread pools) are accepted with
one warning naming them, a listener named in controller.listener.names is
not opened, and Kafka configs samsa does not implement are refused when
their value would change what the broker does. See docs/configuration.md
for every config.

By default the broker embeds its etcd. --etcd-endpoints connects it to an
external etcd cluster instead; --etcd-cacert, --etcd-cert and --etcd-key
(as etcdctl's --cacert, --cert, --key) give the CA that verifies the etcd
servers and the client certificate and key for etcd's client certificate
authentication. They set etcd.endpoints, etcd.ssl.ca.file,
etcd.ssl.cert.file and etcd.ssl.key.file, and win over --override and the
file. An https:// endpoint or any etcd.ssl.* config turns TLS on. The
broker fails to start if etcd does not answer within
etcd.connection.timeout.ms (18 s).

Each log dir is locked (its .lock file, which holds the broker's pid) before
anything else starts: a second broker on the same log.dirs exits at once,
naming the dir and the pid that holds it. A signal while the broker starts
stops the startup and exits.

SIGINT or SIGTERM shut the broker down cleanly: it stops accepting, finishes
in-flight requests, flushes the logs, and deregisters. A second signal exits
at once. A write or fsync that fails in the log dir (a full disk, an I/O
error, a read-only file system) takes it offline; the broker then shuts
down the same way and exits with status 1, as Kafka stops a broker whose
log dirs have all failed.`,
		Example: `  samsa serve
  samsa serve --config server.properties
  samsa serve --override log.dirs=/var/lib/samsa --override listeners=PLAINTEXT://0.0.0.0:9092
  samsa serve --etcd-endpoints https://etcd1:2379,https://etcd2:2379,https://etcd3:2379 \
    --etcd-cacert ca.pem --etcd-cert samsa.pem --etcd-key samsa-key.pem`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			set := append([]string(nil), overrides...)
			for i, f := range serveEtcdFlags {
				if cmd.Flags().Changed(f.flag) {
					set = append(set, f.config+"="+etcdValues[i])
				}
			}
			cfg, err := config.Load(configPath, set)
			if err != nil {
				return usageError{err}
			}
			if cmd.Flags().Changed("log-level") {
				if cfg.LogLevel, err = config.ParseLogLevel(logLevel); err != nil {
					return usagef("--log-level: %v", err)
				}
			}
			log := node.NewLogger(cmd.ErrOrStderr(), cfg)
			for _, w := range cfg.Warnings {
				log.Warn(w)
			}
			return serve(cmd.Context(), cfg, log, cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&configPath, "config", "", "a Kafka-style server.properties file")
	cmd.Flags().StringArrayVar(&overrides, "override", nil, "set a config, name=value (repeatable; wins over --config)")
	cmd.Flags().StringVar(&logLevel, "log-level", "info", "log level: debug, info, warn, error (wins over log.level)")
	for i, f := range serveEtcdFlags {
		cmd.Flags().StringVar(&etcdValues[i], f.flag, "", f.usage)
	}
	return cmd
}

// serve runs a node until ctx is done (the first SIGINT/SIGTERM), then
// shuts it down; a second signal during shutdown exits at once. The web
// console's address, when it is served, goes to stdout once the broker
// is ready.
func serve(ctx context.Context, cfg *config.Broker, log *slog.Logger, stdout io.Writer) error {
	start := time.Now()
	n, err := startInterruptibly(ctx, cfg, log)
	if err != nil {
		return err
	}
	listeners := make([]string, len(cfg.Listeners))
	for i, l := range cfg.Listeners {
		listeners[i] = l.String()
	}
	log.Info("samsa broker ready", "node.id", cfg.NodeID, "listeners", strings.Join(listeners, ","),
		"addr", n.Addr(), "admin", n.AdminAddr(), "console", n.ConsoleURL(), "log.dirs", strings.Join(cfg.LogDirs, ","),
		"startup", time.Since(start).Round(time.Millisecond))
	if u := n.ConsoleURL(); u != "" {
		fmt.Fprintf(stdout, "samsa console: %s\n", u)
	}

	failed, failErr := n.LogDirFailed()
	var fatal error
	select {
	case <-ctx.Done():
		log.Info("shutting down; a second signal exits at once")
	case <-failed:
		// Kafka halts a broker whose every log dir, or whose
		// metadata log dir, has failed. A controlled shutdown does
		// better: the controller moves the leaderships to in-sync
		// replicas at once instead of after the session timeout. The
		// process then exits non-zero; it starts again once the disk
		// is fixed, recovering its logs.
		fatal = failErr()
		log.Error("log dir failure; shutting down", "log.dirs", strings.Join(cfg.LogDirs, ","), "err", fatal)
	}
	again := make(chan os.Signal, 1)
	signal.Notify(again, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(again)
	// stopped ends the watcher of a second signal once shutdown is over
	// (signal.Stop does not close again).
	stopped := make(chan struct{})
	defer close(stopped)
	go func() {
		select {
		case <-again:
			fmt.Fprintln(os.Stderr, "samsa: second signal, exiting now")
			os.Exit(1)
		case <-stopped:
		}
	}()
	sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := n.Shutdown(sctx); err != nil && fatal == nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	if fatal != nil {
		log.Error("samsa broker stopped", "err", fatal)
		return fatal
	}
	log.Info("samsa broker stopped")
	return nil
}

// volatileWritesEnv, set to 1, sets node.Config.VolatileWrites: a test
// mode for power-loss scenarios across processes (docs/reliability.md).
const volatileWritesEnv = "SAMSA_TEST_VOLATILE_WRITES"

// testClockEnv names a file holding a signed offset in milliseconds that
// the broker adds to the machine's clock ("{node.id}" in the name is
// replaced by the node id): a test mode for clock skew and jumps across
// processes (TESTPLAN S-24). libfaketime cannot do it, since a Go program
// reads the clock through the kernel's vDSO, not libc.
const testClockEnv = "SAMSA_TEST_CLOCK_FILE"

// fileClock returns a clock that is time.Now plus the offset in path,
// read again every 20 ms until ctx ends. The time it returns carries no
// monotonic reading, so a change of the offset is a step of the wall
// clock that every duration the broker measures sees, as it would with
// wall-clock milliseconds. A missing or unreadable file is offset 0.
func fileClock(ctx context.Context, path string, log *slog.Logger) func() time.Time {
	var off atomic.Int64
	read := func() {
		b, err := os.ReadFile(path)
		if err != nil {
			off.Store(0)
			return
		}
		ms, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil {
			log.Warn("test clock: bad offset", "file", path, "err", err)
			return
		}
		off.Store(ms * int64(time.Millisecond))
	}
	read()
	go func() {
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				read()
			}
		}
	}()
	return func() time.Time { return time.Now().Round(0).Add(time.Duration(off.Load())) }
}

// startAbandonTimeout is how long a signal during startup waits for
// node.Start to give up before serve returns without it.
const startAbandonTimeout = 5 * time.Second

// startInterruptibly is node.Start that honours ctx even where a step of
// the startup does not (a file lock inside etcd, a dial): once ctx is done
// it waits startAbandonTimeout for node.Start to return, then returns
// without it, and the process exits.
func startInterruptibly(ctx context.Context, cfg *config.Broker, log *slog.Logger) (*node.Node, error) {
	type started struct {
		n   *node.Node
		err error
	}
	done := make(chan started, 1)
	nc := node.Config{Broker: cfg, Logger: log}
	if path := os.Getenv(testClockEnv); path != "" {
		path = strings.ReplaceAll(path, "{node.id}", strconv.Itoa(int(cfg.NodeID)))
		nc.Now = fileClock(ctx, path, log)
		log.Warn("test mode: the broker's clock is the machine's plus the offset in a file; never use it in production",
			"env", testClockEnv, "file", path)
	}
	if os.Getenv(volatileWritesEnv) == "1" {
		nc.VolatileWrites = true
		log.Warn("test mode: unsynced writes are kept in this process's memory, so kill -9 loses them as a power cut would; never use it in production",
			"env", volatileWritesEnv)
	}
	go func() {
		v := buildVersion()
		nc.Version, nc.Commit = v.Version, v.Commit
		n, err := node.Start(ctx, nc)
		done <- started{n, err}
	}()
	select {
	case s := <-done:
		return s.n, s.err
	case <-ctx.Done():
	}
	log.Info("signal while starting; stopping")
	t := time.NewTimer(startAbandonTimeout)
	defer t.Stop()
	select {
	case s := <-done:
		if s.err == nil {
			s.n.Close()
		}
	case <-t.C:
	}
	return nil, errors.New("interrupted while starting")
}
