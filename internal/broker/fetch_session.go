package broker

// Fetch sessions (KIP-227) for 01_fetch.go: the translation between a
// kmsg Fetch and the fetchsession cache.
//
// A sessionless full fetch (session id 0, epoch -1, and every Fetch below
// v7) bypasses the cache. Any other request opens its place in the cache
// first: a session error is answered at once, with the error code at the
// top level, session id 0 and no partitions, as Kafka's SessionErrorContext
// does. An incremental fetch is then read as a request naming every
// partition of its session, in the session's order, with the fetch offsets
// the fetcher last sent, so the read, the long-poll watches, authorization
// and a follower's fetch offsets (FollowerFetched) cover the partitions the
// request left out: a follower that is caught up and idle keeps its fetch
// offset and its caught-up time, as a full fetch would. When the response
// is laid out (fetchResult.reply), the session drops the partitions with
// nothing new and the response carries the session id; a response a quota
// throttles to nothing carries the session id of an incremental fetch and
// 0 for a full one (fetchQuota.reply), and the session will tell again
// what it withheld.
//
// Topics are named by id in sessions of v13+ and by name below; a session
// opened at one and used at the other answers FETCH_SESSION_TOPIC_ID_ERROR.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/fetchsession"
	"samsa/internal/server"
)

// fetchSession is one Fetch request's use of the session cache.
type fetchSession struct {
	x     *fetchsession.Context
	nowMs int64
}

// openFetchSession returns the request to read for req (req itself, or
// for an incremental fetch one naming every partition of its session) and
// its session, nil for a sessionless fetch; or the reply to send at once.
func (b *Broker) openFetchSession(req *kmsg.FetchRequest) (*kmsg.FetchRequest, *fetchSession, *server.Reply) {
	if req.Version < 7 || req.SessionID == 0 && req.SessionEpoch == fetchsession.FinalEpoch {
		return req, nil, nil
	}
	ids := req.Version >= 13
	sr := fetchsession.Request{
		SessionID:    req.SessionID,
		Epoch:        req.SessionEpoch,
		Privileged:   fetchReplicaID(req) >= 0,
		UsesTopicIDs: ids,
	}
	for i := range req.Topics {
		rt := &req.Topics[i]
		k := fetchsession.Key{Topic: rt.Topic}
		if ids {
			k = fetchsession.Key{TopicID: rt.TopicID}
		}
		for j := range rt.Partitions {
			rp := &rt.Partitions[j]
			k.Partition = rp.Partition
			sr.Partitions = append(sr.Partitions, fetchsession.Partition{Key: k, Params: fetchsession.Params{
				FetchOffset:        rp.FetchOffset,
				LogStartOffset:     rp.LogStartOffset,
				MaxBytes:           rp.PartitionMaxBytes,
				CurrentLeaderEpoch: rp.CurrentLeaderEpoch,
				LastFetchedEpoch:   rp.LastFetchedEpoch,
			}})
		}
	}
	for _, ft := range req.ForgottenTopics {
		k := fetchsession.Key{Topic: ft.Topic}
		if ids {
			k = fetchsession.Key{TopicID: ft.TopicID}
		}
		for _, p := range ft.Partitions {
			k.Partition = p
			sr.Forgotten = append(sr.Forgotten, k)
		}
	}
	nowMs := b.now().UnixMilli()
	x, err := b.fetchSessions.Open(sr, nowMs)
	if err != nil {
		resp := req.ResponseKind().(*kmsg.FetchResponse)
		resp.ErrorCode = errCode(err).Code
		return nil, nil, &server.Reply{Msg: resp}
	}
	s := &fetchSession{x: x, nowMs: nowMs}
	if !x.Incremental() {
		return req, s, nil
	}
	return sessionRequest(req, x.Partitions()), s, nil
}

// sessionRequest is req naming parts instead of its own partitions, each
// run of partitions of one topic under one topic entry.
func sessionRequest(req *kmsg.FetchRequest, parts []fetchsession.Partition) *kmsg.FetchRequest {
	r := *req
	r.Topics, r.ForgottenTopics = nil, nil
	var cur *kmsg.FetchRequestTopic
	for _, p := range parts {
		if cur == nil || cur.Topic != p.Topic || cur.TopicID != p.TopicID {
			r.Topics = append(r.Topics, kmsg.NewFetchRequestTopic())
			cur = &r.Topics[len(r.Topics)-1]
			cur.Topic, cur.TopicID = p.Topic, p.TopicID
		}
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition = p.Partition
		rp.FetchOffset = p.FetchOffset
		rp.LogStartOffset = p.LogStartOffset
		rp.PartitionMaxBytes = p.MaxBytes
		rp.CurrentLeaderEpoch = p.CurrentLeaderEpoch
		rp.LastFetchedEpoch = p.LastFetchedEpoch
		cur.Partitions = append(cur.Partitions, rp)
	}
	return &r
}

// respond tells the session what f's response holds, drops from it the
// partitions the fetcher need not hear of, and sets its session id (or
// the session error). It is a no-op on a nil session and after the first
// call.
func (s *fetchSession) respond(f *fetchResult) {
	if s == nil || f.sessionDone {
		return
	}
	f.sessionDone = true
	var results []fetchsession.Result
	for i := range f.resp.Topics {
		for j := range f.resp.Topics[i].Partitions {
			sp := &f.resp.Topics[i].Partitions[j]
			results = append(results, fetchsession.Result{
				HighWatermark:    sp.HighWatermark,
				LastStableOffset: sp.LastStableOffset,
				LogStartOffset:   sp.LogStartOffset,
				Records:          len(f.regions[i][j]) > 0 || len(sp.RecordBatches) > 0,
				Error:            sp.ErrorCode != 0,
			})
		}
	}
	id, include, err := s.x.Respond(results, s.nowMs)
	f.resp.SessionID = id
	if err != nil {
		f.resp.ErrorCode = errCode(err).Code
		f.resp.Topics, f.regions, f.n, f.hinted = nil, nil, 0, nil
		return
	}
	if include == nil {
		return
	}
	k := 0
	topics, regions := f.resp.Topics[:0], f.regions[:0]
	for i := range f.resp.Topics {
		st := f.resp.Topics[i]
		parts, rs := st.Partitions[:0], f.regions[i][:0]
		for j := range st.Partitions {
			if include[k] {
				parts = append(parts, st.Partitions[j])
				rs = append(rs, f.regions[i][j])
			}
			k++
		}
		if len(parts) > 0 {
			st.Partitions = parts
			topics = append(topics, st)
			regions = append(regions, rs)
		}
	}
	f.resp.Topics, f.regions = topics, regions
}

// throttled sets the session id of resp, the response a quota sent
// instead of f's, without its partitions (fetchsession.Context.Abandon),
// and its session error if f had one. It is a no-op on a nil session.
func (s *fetchSession) throttled(f *fetchResult, resp *kmsg.FetchResponse) {
	if s == nil {
		return
	}
	resp.ErrorCode = f.resp.ErrorCode
	resp.SessionID = s.x.Abandon()
}

// withSession returns q carrying s for the results it reads; the shared
// noFetchQuota is copied first.
func (q *fetchQuota) withSession(s *fetchSession) *fetchQuota {
	if s == nil {
		return q
	}
	c := *q
	c.session = s
	return &c
}

// FetchSessionStats returns the fetch session cache's gauges and counters.
func (b *Broker) FetchSessionStats() fetchsession.Stats { return b.fetchSessions.Stats() }
