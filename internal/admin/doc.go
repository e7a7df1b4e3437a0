// Package admin serves samsa's operator HTTP endpoints:
//
//	/metrics   Prometheus text format: the Kafka listener's counters, Go and process metrics
//	/healthz   200 while the process is up
//	/readyz    200 while the broker serves: log dir online, registered in the cluster
//
// Use: Start(addr, registry, ready, logger) returns a running Server; Close
// stops it. The server owns one goroutine, started by Start and waited for
// by Close.
package admin
