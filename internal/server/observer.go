package server

import (
	"reflect"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// RequestTimes splits the time a request spent in the connection loop the
// way Kafka's RequestMetrics does. Every request has all of them; a phase
// that did not happen is zero.
//
//	received ─ Queue ─ Handle starts ─ Local ─ Handle returns ─ ResponseQueue ─
//	  writer takes it ─ Remote (Reply.Wait) ─ Send (encode + write) ─ sent
//
// Total runs from received to sent. Throttle is the Reply.Throttle the
// handler (or its Wait) gave: the time the connection is muted after it,
// which is not part of Total (Kafka's ThrottleTimeMs).
type RequestTimes struct {
	// Queue is from the frame being read to Handle starting: decoding and
	// authentication state, Kafka's RequestQueueTimeMs.
	Queue time.Duration
	// Local is Handle: the handler's synchronous work (a Produce's
	// append), Kafka's LocalTimeMs.
	Local time.Duration
	// ResponseQueue is from Handle returning to the writer taking the
	// reply: the replies ahead of it being waited for and written,
	// Kafka's ResponseQueueTimeMs.
	ResponseQueue time.Duration
	// Remote is the time in Reply.Wait: acks=all waiting for the high
	// watermark, a Fetch long-poll. Kafka's RemoteTimeMs.
	Remote time.Duration
	// Throttle is the quota throttle given with the reply.
	Throttle time.Duration
	// Send is encoding and writing the response, and flushing it when
	// nothing else is queued: Kafka's ResponseSendTimeMs.
	Send time.Duration
	// Total is from received to sent: Kafka's TotalTimeMs.
	Total time.Duration
}

// Observer receives per-request measurements from the connection loop.
// Its methods are called on connection goroutines, concurrently, once per
// request: they must be cheap and must not block (no allocation, no lock
// shared between connections).
type Observer interface {
	// ObserveRequest is called once a response is written (or dropped,
	// for Produce with acks=0), with the request's API key.
	ObserveRequest(key int16, t RequestTimes)
	// ObserveError is called once for every non-zero error code in a
	// response (a Produce response with two failed partitions gives two
	// calls).
	ObserveError(key int16, code int16)
}

// ErrorCoder is implemented by a Body that can report the error codes in
// the response it encodes; the server gives them to Observer.ObserveError.
type ErrorCoder interface {
	// ErrorCodes calls f for every error code in the response, zero
	// included.
	ErrorCodes(f func(code int16))
}

// observeErrors gives every non-zero error code of r to o.
func observeErrors(o Observer, key int16, r Reply) {
	switch {
	case r.Msg != nil:
		switch m := r.Msg.(type) {
		case *kmsg.ProduceResponse:
			// The hot path, without reflection.
			for i := range m.Topics {
				for j := range m.Topics[i].Partitions {
					if c := m.Topics[i].Partitions[j].ErrorCode; c != 0 {
						o.ObserveError(key, c)
					}
				}
			}
		default:
			walkErrorCodes(o, key, reflect.ValueOf(r.Msg))
		}
	case r.Body != nil:
		if ec, ok := r.Body.(ErrorCoder); ok {
			ec.ErrorCodes(func(code int16) {
				if code != 0 {
					o.ObserveError(key, code)
				}
			})
		}
	}
}

var int16Type = reflect.TypeOf(int16(0))

// walkErrorCodes finds every int16 field named ErrorCode in a kmsg
// response, in nested structs and slices of structs.
func walkErrorCodes(o Observer, key int16, v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			walkErrorCodes(o, key, v.Elem())
		}
	case reflect.Struct:
		t := v.Type()
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			fv := v.Field(i)
			if f.Name == "ErrorCode" && f.Type == int16Type {
				if c := int16(fv.Int()); c != 0 {
					o.ObserveError(key, c)
				}
				continue
			}
			switch f.Type.Kind() {
			case reflect.Struct, reflect.Pointer:
				walkErrorCodes(o, key, fv)
			case reflect.Slice:
				if f.Type.Elem().Kind() == reflect.Struct {
					for j := 0; j < fv.Len(); j++ {
						walkErrorCodes(o, key, fv.Index(j))
					}
				}
			}
		}
	}
}
