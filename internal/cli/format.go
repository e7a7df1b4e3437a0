package cli

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kgo"
)

// recordFormat is a parsed --format template. Verbs:
//
//	%k  key            %v  value (%s is the same)
//	%t  timestamp, ms  %T  topic
//	%o  offset         %p  partition
//	%h  headers as k=v joined by ","
//	%K  key length     %S  value length (-1 when null)
//	%%  a percent sign
//
// and the escapes \n, \t, \r and \\. A recordFormat is immutable and safe
// for concurrent use.
type recordFormat []formatOp

// formatOp is a literal (verb 0) or one verb.
type formatOp struct {
	verb byte
	lit  []byte
}

// parseFormat parses a --format template.
func parseFormat(s string) (recordFormat, error) {
	var f recordFormat
	var lit []byte
	flush := func() {
		if len(lit) > 0 {
			f = append(f, formatOp{lit: lit})
			lit = nil
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '%', '\\':
			if i+1 == len(s) {
				return nil, usagef("--format %q: dangling %c at the end", s, c)
			}
			i++
			n := s[i]
			if c == '\\' {
				switch n {
				case 'n':
					lit = append(lit, '\n')
				case 't':
					lit = append(lit, '\t')
				case 'r':
					lit = append(lit, '\r')
				case '\\':
					lit = append(lit, '\\')
				default:
					return nil, usagef("--format %q: unknown escape \\%c", s, n)
				}
				continue
			}
			switch n {
			case '%':
				lit = append(lit, '%')
			case 's':
				flush()
				f = append(f, formatOp{verb: 'v'})
			case 'k', 'v', 't', 'T', 'o', 'p', 'h', 'K', 'S':
				flush()
				f = append(f, formatOp{verb: n})
			default:
				return nil, usagef("--format %q: unknown verb %%%c", s, n)
			}
		default:
			lit = append(lit, c)
		}
	}
	flush()
	return f, nil
}

// lenOrNull is the length of b, or -1 when b is nil (a null key or value).
func lenOrNull(b []byte) int {
	if b == nil {
		return -1
	}
	return len(b)
}

// appendRecord appends r formatted by f to dst.
func (f recordFormat) appendRecord(dst []byte, r *kgo.Record) []byte {
	for _, op := range f {
		switch op.verb {
		case 0:
			dst = append(dst, op.lit...)
		case 'k':
			dst = append(dst, r.Key...)
		case 'v':
			dst = append(dst, r.Value...)
		case 't':
			dst = strconv.AppendInt(dst, r.Timestamp.UnixMilli(), 10)
		case 'T':
			dst = append(dst, r.Topic...)
		case 'o':
			dst = strconv.AppendInt(dst, r.Offset, 10)
		case 'p':
			dst = strconv.AppendInt(dst, int64(r.Partition), 10)
		case 'h':
			for i, h := range r.Headers {
				if i > 0 {
					dst = append(dst, ',')
				}
				dst = append(dst, h.Key...)
				dst = append(dst, '=')
				dst = append(dst, h.Value...)
			}
		case 'K':
			dst = strconv.AppendInt(dst, int64(lenOrNull(r.Key)), 10)
		case 'S':
			dst = strconv.AppendInt(dst, int64(lenOrNull(r.Value)), 10)
		}
	}
	return dst
}

// jsonRecord is one line of `consume --json`. Keys, values and header
// values that are not valid UTF-8 are given base64-encoded in the *_b64
// field instead.
type jsonRecord struct {
	Topic     string       `json:"topic"`
	Partition int32        `json:"partition"`
	Offset    int64        `json:"offset"`
	Timestamp int64        `json:"timestamp"`
	Key       *string      `json:"key"`
	KeyB64    *string      `json:"key_b64,omitempty"`
	Value     *string      `json:"value"`
	ValueB64  *string      `json:"value_b64,omitempty"`
	Headers   []jsonHeader `json:"headers"`
}

type jsonHeader struct {
	Key      string  `json:"key"`
	Value    *string `json:"value"`
	ValueB64 *string `json:"value_b64,omitempty"`
}

// textOrB64 returns b as text when it is valid UTF-8, otherwise as base64
// in the second result. Both are nil when b is nil.
func textOrB64(b []byte) (text, b64 *string) {
	if b == nil {
		return nil, nil
	}
	if utf8.Valid(b) {
		s := string(b)
		return &s, nil
	}
	s := base64.StdEncoding.EncodeToString(b)
	return nil, &s
}

// appendJSON appends r as one JSON object and a newline to dst.
func appendJSON(dst []byte, r *kgo.Record) ([]byte, error) {
	j := jsonRecord{
		Topic:     r.Topic,
		Partition: r.Partition,
		Offset:    r.Offset,
		Timestamp: r.Timestamp.UnixMilli(),
		Headers:   make([]jsonHeader, 0, len(r.Headers)),
	}
	j.Key, j.KeyB64 = textOrB64(r.Key)
	j.Value, j.ValueB64 = textOrB64(r.Value)
	for _, h := range r.Headers {
		jh := jsonHeader{Key: h.Key}
		jh.Value, jh.ValueB64 = textOrB64(h.Value)
		j.Headers = append(j.Headers, jh)
	}
	b, err := json.Marshal(j)
	if err != nil {
		return dst, fmt.Errorf("encode record as JSON: %w", err)
	}
	dst = append(dst, b...)
	return append(dst, '\n'), nil
}
