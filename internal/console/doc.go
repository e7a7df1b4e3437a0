// Package console is samsa's web console: server-rendered pages over the
// whole cluster (overview, topics, messages, consumer groups, brokers,
// security, transactions), served by every broker under /console/ on
// the admin listener or on console.listener.
//
// The console is a Kafka client of the cluster, like any other: each
// page asks the brokers over the Kafka protocol (franz-go's kgo and kadm)
// starting from this broker's own listener, so a page on any broker
// shows the whole cluster and goes on working while a broker is down.
// Only the throughput charts read this broker's in-process counters
// (Config.Counters), for which the Kafka protocol has no answer.
//
// Use:
//
//  1. s, err := New(Config{Bootstrap: ..., Mechanisms: ..., Counters: ...})
//     starts the counter sampler.
//  2. Mount s (an http.Handler) at Prefix+"/".
//  3. s.Close() stops the sampler and closes the sessions' clients.
//
// Security: a listener with SASL makes every user log in with their own
// PLAIN or SCRAM credentials (or an OAUTHBEARER token); the console then talks to the cluster with
// a client authenticated as that user, so the broker's ACLs decide every
// page and action exactly as for the user's own clients. Without SASL the
// console acts as the listener's anonymous principal. Sessions are in
// memory (at most 1024, least recently used evicted first; ended after
// Config.SessionIdle unused), named by an HttpOnly, SameSite=Strict
// cookie. Every POST carries the session's CSRF token and, when the
// browser sends an Origin, comes from the console's own origin. Pages run
// no inline script (the Content-Security-Policy forbids it) and every
// value reaches them through html/template.
//
// Invariants: a page's Kafka requests are bounded by pageTimeout; a
// message browse reads at most maxScanBytes and returns at most maxCount
// records; the Server owns one goroutine (the sampler), started by New
// and waited for by Close. Lock order: every lock is a leaf
// (sessionStore.mu, session.mu, rateRing.mu, lagHistory.mu,
// Server.anonMu): none is held while another is taken, and a session's
// Kafka client is closed only after sessionStore.mu is released.
package console
