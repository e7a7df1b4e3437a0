// Package node assembles one samsa broker from its configuration and runs
// it: the log dir lock, the Kafka listeners and their security (TLS, SASL,
// connection limits), the cluster membership (embedded or external etcd),
// the log manager, the broker's request handlers and the admin HTTP
// server with its metrics. It is the one package that knows every part;
// `samsa serve` (internal/cli) and the in-process test brokers
// (internal/testutil) both start brokers through it.
//
// Usage:
//
//	cfg, err := config.Load(path, overrides)
//	...
//	n, err := node.Start(ctx, node.Config{Broker: cfg, Logger: node.NewLogger(os.Stderr, cfg)})
//	...
//	defer n.Shutdown(ctx) // controlled shutdown, drain, close
//
// Start's steps, in order (each one's failure closes what the earlier ones
// opened):
//
//  1. lock the log dir (.lock holds the pid; a second broker fails at once);
//  2. bind the listeners (an advertised port 0 becomes the bound port);
//  3. open the cluster membership and register the broker;
//  4. open the log manager (recovery, flusher, retention, cleaner);
//  5. build the inter-broker client options and each listener's TLS
//     config and SASL authenticator;
//  6. start the broker, which hosts the partitions the image assigns here;
//  7. serve the listeners, then the web console (as a Kafka client of
//     one of them) and the admin HTTP server, and the console's own
//     listener if console.listener names one.
//
// Invariants:
//
//   - Close (and Shutdown, which ends with it) stops the parts in the
//     reverse order of their start: listeners and connections, the broker,
//     the logs, the cluster membership, the log dir lock last; it is
//     idempotent.
//   - Every goroutine the node starts (listener loops, JWKS refreshes) is
//     stopped and waited for by Close.
//   - Each part gets the node's logger with PkgKey naming the part, so
//     log.level.overrides applies per package.
package node
