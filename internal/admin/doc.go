// Package admin serves samsa's operator HTTP endpoints:
//
//	/metrics   Prometheus text format, or OpenMetrics when the scraper asks
//	           for it; the series are listed in docs/metrics.md
//	/healthz   200 while the process is up
//	/readyz    200 while the broker serves: log dir online, registered in the cluster
//	/console/  the web console (internal/console), when the node passes it;
//	           the root then redirects there
//
// Use:
//
//  1. reg := prometheus.NewRegistry(); m := NewMetrics(reg) creates the
//     series that hot paths update (request latency and errors, fsync,
//     etcd requests, rebalances). Pass m to the parts as their observer
//     before they start.
//  2. reg.MustRegister(NewCollector(sources, cfg)) adds the series read at
//     scrape time through the small interfaces of Sources, which the
//     wiring package satisfies; admin imports no other samsa package.
//  3. Start(addr, reg, ready, console, logger) returns a running Server;
//     Close stops it. StartConsole(addr, console, logger) serves only the
//     console, on a listener of its own (console.listener).
//
// Invariants: Metrics methods do not allocate and take no lock once a
// series exists; the collector does all the work of a scrape on the
// scraping goroutine. The server owns one goroutine, started by Start and
// waited for by Close.
package admin
