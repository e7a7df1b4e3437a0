package server

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Errors from decoding a request. Each of them closes the connection.
var (
	// ErrFrameSize reports a frame size that is zero, negative or above
	// socket.request.max.bytes.
	ErrFrameSize = errors.New("server: bad frame size")
	// ErrUnknownAPIKey reports an API key the handler does not serve.
	ErrUnknownAPIKey = errors.New("server: unknown api key")
	// ErrUnsupportedVersion reports a version outside the handler's range
	// (for any API but ApiVersions, which is answered instead).
	ErrUnsupportedVersion = errors.New("server: unsupported version")
	// ErrMalformed reports a request header or body that does not decode.
	ErrMalformed = errors.New("server: malformed request")
)

// apiVersionsKey is the API key of ApiVersions, the one request answered
// even at an unsupported version (KIP-511).
const apiVersionsKey = 18

// Request is one decoded request.
type Request struct {
	APIKey        int16
	APIVersion    int16
	CorrelationID int32
	ClientID      *string
	// Body is decoded at APIVersion, or, for an ApiVersions request with a
	// version above the supported maximum, left at version 0 and not decoded
	// (UnsupportedVersion is set; answer with an ApiVersions v0 response
	// carrying UNSUPPORTED_VERSION and the supported ranges).
	Body               kmsg.Request
	UnsupportedVersion bool
	// Size is the frame size in bytes.
	Size int
}

// headerVersion returns the request header version (0, 1 or 2) of a
// request for key at its body's current version.
func headerVersion(key, version int16, body kmsg.Request) int {
	if key == 7 && version == 0 { // ControlledShutdown v0 predates client ids
		return 0
	}
	if body.IsFlexible() {
		return 2
	}
	return 1
}

// DecodeRequest decodes one frame (the bytes after the 4-byte size) into a
// Request: the header, then the body at the header's version. versions
// reports the supported version range of an API key, as Handler.Versions
// does. It allocates nothing in proportion to lengths read from the frame
// that the frame cannot hold. The decoded body may alias frame.
//
// Errors wrap ErrUnknownAPIKey, ErrUnsupportedVersion or ErrMalformed.
func DecodeRequest(frame []byte, versions func(key int16) (min, max int16, ok bool)) (*Request, error) {
	if len(frame) < 8 {
		return nil, fmt.Errorf("%w: header of %d bytes", ErrMalformed, len(frame))
	}
	req := &Request{
		APIKey:        int16(binary.BigEndian.Uint16(frame[0:])),
		APIVersion:    int16(binary.BigEndian.Uint16(frame[2:])),
		CorrelationID: int32(binary.BigEndian.Uint32(frame[4:])),
		Size:          len(frame),
	}
	minV, maxV, ok := versions(req.APIKey)
	body := kmsg.RequestForKey(req.APIKey)
	if !ok || body == nil {
		return nil, fmt.Errorf("%w: %d", ErrUnknownAPIKey, req.APIKey)
	}
	rest := frame[8:]
	if req.APIVersion < minV || req.APIVersion > maxV || req.APIVersion > body.MaxVersion() || req.APIVersion < 0 {
		if req.APIKey != apiVersionsKey {
			return nil, fmt.Errorf("%w: key %d version %d", ErrUnsupportedVersion, req.APIKey, req.APIVersion)
		}
		// The client id is read if it is well formed; the rest, whose
		// layout this broker does not know, is not.
		if id, _, err := readClientID(rest); err == nil {
			req.ClientID = id
		}
		body.SetVersion(0)
		req.Body = body
		req.UnsupportedVersion = true
		return req, nil
	}
	body.SetVersion(req.APIVersion)
	hv := headerVersion(req.APIKey, req.APIVersion, body)
	if hv >= 1 {
		id, n, err := readClientID(rest)
		if err != nil {
			return nil, err
		}
		req.ClientID = id
		rest = rest[n:]
	}
	if hv >= 2 {
		n, err := skipTags(rest)
		if err != nil {
			return nil, err
		}
		rest = rest[n:]
	}
	if err := body.ReadFrom(rest); err != nil {
		return nil, fmt.Errorf("%w: key %d version %d body: %w", ErrMalformed, req.APIKey, req.APIVersion, err)
	}
	req.Body = body
	return req, nil
}

// readClientID reads a nullable string: int16 length, -1 for null.
func readClientID(b []byte) (*string, int, error) {
	if len(b) < 2 {
		return nil, 0, fmt.Errorf("%w: client id length", ErrMalformed)
	}
	l := int(int16(binary.BigEndian.Uint16(b)))
	switch {
	case l == -1:
		return nil, 2, nil
	case l < -1 || l > len(b)-2:
		return nil, 0, fmt.Errorf("%w: client id length %d", ErrMalformed, l)
	}
	s := string(b[2 : 2+l])
	return &s, 2 + l, nil
}

// readUvarint reads an unsigned varint of at most 5 bytes that fits in
// 32 bits, as Kafka's uvarints do.
func readUvarint(b []byte) (uint32, int, error) {
	var v uint64
	for i := 0; i < 5; i++ {
		if i >= len(b) {
			return 0, 0, fmt.Errorf("%w: truncated uvarint", ErrMalformed)
		}
		c := b[i]
		v |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			if v > 0xffffffff {
				return 0, 0, fmt.Errorf("%w: uvarint overflows 32 bits", ErrMalformed)
			}
			return uint32(v), i + 1, nil
		}
	}
	return 0, 0, fmt.Errorf("%w: uvarint longer than 5 bytes", ErrMalformed)
}

// skipTags skips a tagged field section: uvarint count, then per field
// uvarint tag, uvarint size and size bytes. Tags must be strictly
// increasing. It returns the section's length.
func skipTags(b []byte) (int, error) {
	count, off, err := readUvarint(b)
	if err != nil {
		return 0, err
	}
	// Each field takes at least two bytes (tag and size).
	if uint64(count)*2 > uint64(len(b)-off) {
		return 0, fmt.Errorf("%w: %d tagged fields in %d bytes", ErrMalformed, count, len(b)-off)
	}
	last := int64(-1)
	for i := uint32(0); i < count; i++ {
		tag, n, err := readUvarint(b[off:])
		if err != nil {
			return 0, err
		}
		off += n
		if int64(tag) <= last {
			return 0, fmt.Errorf("%w: tagged field %d after %d", ErrMalformed, tag, last)
		}
		last = int64(tag)
		size, n, err := readUvarint(b[off:])
		if err != nil {
			return 0, err
		}
		off += n
		if uint64(size) > uint64(len(b)-off) {
			return 0, fmt.Errorf("%w: tagged field %d of %d bytes, %d left", ErrMalformed, tag, size, len(b)-off)
		}
		off += int(size)
	}
	return off, nil
}

// AppendTo appends the request as a frame without its size prefix: the
// request header (no tagged fields) and the body encoded at Body's
// version. For an UnsupportedVersion request only the header is written.
// It is the inverse of DecodeRequest.
func (r *Request) AppendTo(dst []byte) []byte {
	dst = binary.BigEndian.AppendUint16(dst, uint16(r.APIKey))
	dst = binary.BigEndian.AppendUint16(dst, uint16(r.APIVersion))
	dst = binary.BigEndian.AppendUint32(dst, uint32(r.CorrelationID))
	hv := 1
	if r.Body != nil && !r.UnsupportedVersion {
		hv = headerVersion(r.APIKey, r.APIVersion, r.Body)
	}
	if hv >= 1 {
		if r.ClientID == nil {
			dst = binary.BigEndian.AppendUint16(dst, 0xffff)
		} else {
			dst = binary.BigEndian.AppendUint16(dst, uint16(len(*r.ClientID)))
			dst = append(dst, *r.ClientID...)
		}
	}
	if r.UnsupportedVersion || r.Body == nil {
		return dst
	}
	if hv >= 2 {
		dst = append(dst, 0)
	}
	return r.Body.AppendTo(dst)
}
