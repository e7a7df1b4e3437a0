// Package fetchsession implements Kafka's incremental fetch sessions (KIP-227) as
// deterministic types: the broker's session cache (Cache), which remembers, per session,
// the partitions a fetcher reads and what it was last told about them, and the fetcher's
// side (Handler), which sends only what changed. It knows no wire protocol, opens no
// sockets, starts no goroutines and reads no clock: every method that depends on time
// takes nowMs.
//
// # Session id and epoch
//
// A Fetch request (v7+) carries a session id and an epoch:
//
//	id    epoch   meaning                                     broker
//	----  ------  ------------------------------------------  -------------------------------
//	0     -1      full fetch, no session                      reads the request's partitions
//	0     0       full fetch, open a session                  reads them, then creates a
//	                                                          session (if a slot is free) and
//	                                                          answers with its id
//	n     0       full fetch, replace session n               closes n, then as id 0 epoch 0
//	n     -1      close session n, full fetch without one     closes n, then as id 0 epoch -1
//	n     e > 0   incremental fetch in session n              adds/updates the request's
//	                                                          partitions, drops the forgotten
//	                                                          ones, reads every partition of
//	                                                          the session, answers only those
//	                                                          that changed
//
// A session's first incremental fetch carries epoch 1; each fetch the broker accepts moves
// the epoch on by one (after math.MaxInt32 it wraps to 1). An unknown id answers
// ErrSessionIDNotFound, an epoch other than the expected one ErrInvalidEpoch, and a
// request whose version uses topic ids (v13+) in a session opened without them, or the
// reverse, ErrTopicIDMismatch (Kafka's FETCH_SESSION_ID_NOT_FOUND,
// INVALID_FETCH_SESSION_EPOCH and FETCH_SESSION_TOPIC_ID_ERROR). Any of these, like a
// lost response, makes the fetcher start over with a full fetch.
//
// # Usage (broker)
//
//  1. Per Fetch request, call Cache.Open with the request's session fields and
//     partitions. On error answer the request with the matching error code, session id 0
//     and no partitions.
//  2. Read the partitions Context.Partitions returns, in that order (for an incremental
//     fetch, every partition of the session, with the fetch offsets last sent).
//  3. Call Context.Respond with a Result per partition, in the same order. It returns the
//     session id to answer with and which partitions the response holds: all of them for a
//     full fetch, only those with records, an error or a new high watermark, last stable
//     offset or log start offset for an incremental one.
//  4. If the response goes out without what Respond was told (a quota throttled it and it
//     carries no partitions), call Context.Abandon instead of sending the session id
//     Respond returned: it answers the id to send, and makes the session send again what
//     the fetcher did not get.
//
// # Usage (fetcher)
//
// A Handler per leader: Handler.Build takes the partitions to fetch now and returns the
// session id, epoch, partitions to send and partitions to forget; Handler.Done takes the
// response's error and session id; Handler.Failed is called when no response came.
//
// # Eviction
//
// The cache holds at most max.incremental.fetch.session.cache.slots sessions (Kafka's
// FetchSessionCache). A full fetch that asks for a session when every slot is taken may
// evict, in this order: the session unused for longest, if unused for more than
// min.incremental.fetch.session.eviction.ms; else the least valuable session that is
// evictable, if the new one is worth more. Sessions of followers are privileged.
// Value is ordered by (privileged, number of partitions): a privileged new session may
// evict an unprivileged one of any age, or a privileged one older than the eviction time;
// an unprivileged new session only one older than the eviction time, and only if it is
// unprivileged and has fewer partitions. NB: Kafka decides which sessions are evictable
// when a session is last used; here it is decided at the time of eviction, with the same
// rule, so a session does not stay protected for being idle.
//
// # Invariants
//
//   - Given the same calls with the same nowMs and the same session id source, the types
//     return the same results.
//   - Session ids are positive and unique among the sessions cached; they come from a
//     random source so that a fetcher whose broker restarted gets ErrSessionIDNotFound
//     rather than another fetcher's session.
//   - A Context's partition list never changes after Open; concurrent requests on one
//     session are refused by the epoch check (at Open, and again at Respond).
//   - Cache and Handler are safe for concurrent use; a Context belongs to one request.
//     Cache.mu and a Session's mu are never held together; neither is held for work
//     proportional to the partitions of another session.
package fetchsession
