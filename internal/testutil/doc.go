// Package testutil starts real samsa brokers for tests: in process, with an
// embedded etcd, real TCP on 127.0.0.1 and a data dir under t.TempDir(); or
// as a subprocess of the samsa binary, for tests that kill -9 it. Clients are
// franz-go's kgo and kadm.
//
// Test-only: nothing outside _test.go files imports it.
package testutil
