// Package cli is samsa's command line: the cobra command tree behind the
// samsa binary. `samsa serve` turns its flags and config file into a
// node.Config and runs internal/node, which assembles the broker; the
// other commands are client tools that talk to any Kafka-compatible
// cluster through franz-go, and offline tools over a log dir's files.
//
// Usage, from cmd/samsa:
//
//	func main() { os.Exit(cli.Main()) }
//
// Commands:
//
//	+-------------------------------+-------------------------------------------+
//	| command                       | what it does                              |
//	+-------------------------------+-------------------------------------------+
//	| serve                         | run a broker                              |
//	| topic create|list|describe|    | topic administration (kadm)               |
//	|   delete|alter-config         |                                           |
//	| cluster describe|elect-leaders| brokers, controller; preferred or unclean |
//	|                               | leader elections (kadm)                   |
//	| produce TOPIC                 | one record per stdin line                 |
//	| consume TOPIC                 | direct partition consumption, --format    |
//	|                               | template or --json                        |
//	| perf produce|consume|e2e      | load generator: records/s, MB/s, latency  |
//	| dump-log FILE...              | offline segment and index dump            |
//	| config validate               | load and check broker config              |
//	| version                       | version, commit and Go version (also      |
//	|                               | --version)                                |
//	| healthcheck                   | exit 0 if /readyz answers 200 (the        |
//	|                               | image's HEALTHCHECK)                      |
//	| dev etcd|certs (hidden)       | an etcd member for multi-process brokers; |
//	|                               | a development CA and certificates         |
//	+-------------------------------+-------------------------------------------+
//
// The production binary does not link a fake broker. `dev kfake`,
// franz-go's in-memory broker that scripts/perf-compare.sh runs beside
// samsa, is in the development binary cmd/samsa-dev, which is this
// command tree with that command added through Main's argument; a
// separate command rather than a build tag, so that go build, go vet and
// go test need no tag and cannot silently skip it. internal/lint checks
// that cmd/samsa does not depend on kfake. `dev etcd` and `dev certs` stay
// in the production binary: they link nothing the broker does not
// (etcd's server is the embedded etcd of samsa serve, the certificates
// use the standard library), test/chaos runs `samsa dev etcd` from the
// samsa binary it builds, and the README's TLS and external etcd
// walkthroughs, which readers follow with the binary they run, use them.
//
// Exit codes:
//
//	+------+-------------------------------------------------------------+
//	| code | meaning                                                     |
//	+------+-------------------------------------------------------------+
//	| 0    | success                                                     |
//	| 1    | the command ran and failed (broker error, failed record,    |
//	|      | invalid batch, invalid config)                              |
//	| 2    | misuse: unknown command or flag, wrong argument count, a    |
//	|      | flag value that does not parse                              |
//	+------+-------------------------------------------------------------+
//
// Invariants:
//  1. An error reaches the user once, on stderr, as "samsa: <msg>"; the
//     commands themselves never print their own error.
//  2. Misuse errors wrap ErrUsage (or are cobra's unknown-command error);
//     everything else exits 1.
//  3. Commands read and write only the streams in their env, never
//     os.Stdin/os.Stdout directly, so tests run the whole tree in process.
//  4. Every goroutine a command starts (the perf e2e consumer) is stopped
//     and waited for before the command returns; kgo clients are closed.
package cli
