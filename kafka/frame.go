package kafka

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// errFrameTooLarge is a size prefix above the listener's limit; the frame
// is refused before its body is read.
var errFrameTooLarge = errors.New("frame larger than the limit")

// readSize reads a frame's 4-byte size prefix and refuses a size above
// max.
func readSize(r io.Reader, max int) (int, error) {
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return 0, err
	}
	n := int32(binary.BigEndian.Uint32(size[:]))
	if n < 0 || int(n) > max {
		return 0, fmt.Errorf("%w: %d bytes, at most %d", errFrameTooLarge, n, max)
	}
	return int(n), nil
}

// firstRead is how much of a frame's body is allocated before any of it
// has arrived: most frames fit, and are read into one buffer.
const firstRead = 1 << 20

// readBody reads a frame body of n bytes. A large frame's buffer grows as
// its bytes arrive (doubling, up to n), so a peer that announces a large
// frame and sends little of it makes the broker hold little.
func readBody(r io.Reader, n int) ([]byte, error) {
	buf := make([]byte, 0, min(n, firstRead))
	for len(buf) < n {
		if len(buf) == cap(buf) {
			grown := make([]byte, len(buf), min(n, 2*cap(buf)))
			copy(grown, buf)
			buf = grown
		}
		got, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+got]
		if err != nil {
			if err == io.EOF && len(buf) < n {
				err = io.ErrUnexpectedEOF
			}
			if len(buf) < n {
				return nil, err
			}
		}
	}
	return buf, nil
}

// readFrame reads one size-prefixed frame of at most max bytes.
func readFrame(r io.Reader, max int) ([]byte, error) {
	n, err := readSize(r, max)
	if err != nil {
		return nil, err
	}
	return readBody(r, n)
}

// header is a request header (v1 or, for flexible requests, v2).
type header struct {
	key           int16
	version       int16
	correlationID int32
	clientID      *string
}

// errMalformed is a frame whose header cannot be read.
var errMalformed = errors.New("malformed request")

// parseHeader reads the request header and returns the body after it.
// Tagged fields of a flexible header are skipped: none is used.
func parseHeader(frame []byte) (header, []byte, error) {
	var h header
	if len(frame) < 10 {
		return h, nil, fmt.Errorf("%w: %d-byte frame", errMalformed, len(frame))
	}
	h.key = int16(binary.BigEndian.Uint16(frame[0:]))
	h.version = int16(binary.BigEndian.Uint16(frame[2:]))
	h.correlationID = int32(binary.BigEndian.Uint32(frame[4:]))
	idLen := int16(binary.BigEndian.Uint16(frame[8:]))
	rest := frame[10:]
	if idLen >= 0 {
		if int(idLen) > len(rest) {
			return h, nil, fmt.Errorf("%w: client id of %d bytes in a %d-byte frame", errMalformed, idLen, len(frame))
		}
		id := string(rest[:idLen])
		h.clientID = &id
		rest = rest[idLen:]
	}
	req := kmsg.RequestForKey(h.key)
	if req == nil {
		return h, rest, nil
	}
	req.SetVersion(h.version)
	if req.IsFlexible() {
		var err error
		if rest, err = skipTags(rest); err != nil {
			return h, nil, err
		}
	}
	return h, rest, nil
}

// skipTags skips a tagged-field section: a count, then each tag's number,
// size and bytes, all unsigned varints.
func skipTags(b []byte) ([]byte, error) {
	n, used := binary.Uvarint(b)
	if used <= 0 {
		return nil, fmt.Errorf("%w: bad tag count", errMalformed)
	}
	b = b[used:]
	for ; n > 0; n-- {
		if _, used = binary.Uvarint(b); used <= 0 {
			return nil, fmt.Errorf("%w: bad tag", errMalformed)
		}
		b = b[used:]
		size, used := binary.Uvarint(b)
		if used <= 0 || size > uint64(len(b)-used) {
			return nil, fmt.Errorf("%w: bad tag size", errMalformed)
		}
		b = b[used+int(size):]
	}
	return b, nil
}

// decodeRequest reads a request's body at the header's key and version.
func decodeRequest(h header, body []byte) (kmsg.Request, error) {
	req := kmsg.RequestForKey(h.key)
	if req == nil {
		return nil, fmt.Errorf("unknown API key %d", h.key)
	}
	req.SetVersion(h.version)
	// kmsg aliases its input: the request owns the frame from here on.
	if err := req.ReadFrom(body); err != nil {
		return nil, fmt.Errorf("%w: %s v%d: %v", errMalformed, kmsg.NameForKey(h.key), h.version, err)
	}
	return req, nil
}

// encodeResponse frames a response: size, correlation id, the tagged
// fields of a flexible response header (never for ApiVersions, whose
// header is always v0), then the body.
func encodeResponse(correlationID int32, resp kmsg.Response) []byte {
	buf := make([]byte, 8, 256)
	binary.BigEndian.PutUint32(buf[4:], uint32(correlationID))
	if resp.IsFlexible() && resp.Key() != kmsg.ApiVersions.Int16() {
		buf = append(buf, 0)
	}
	buf = resp.AppendTo(buf)
	binary.BigEndian.PutUint32(buf[0:], uint32(len(buf)-4))
	return buf
}
