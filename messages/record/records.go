package record

import (
	"encoding/binary"
	"fmt"
)

// RecordHeader is one key/value header of a record. A nil Value is encoded
// as a null header value.
type RecordHeader struct {
	Key   string
	Value []byte
}

// Record is one decoded record. Key, Value and header values alias the
// batch bytes: copy them to keep them past the batch's lifetime.
type Record struct {
	Attributes     int8
	TimestampDelta int64
	OffsetDelta    int32
	Key            []byte // nil for a null key
	Value          []byte // nil for a null value
	headers        []byte // encoded headers, decoded on demand
	headerCount    int
}

// HeaderCount is the number of headers of r.
func (r *Record) HeaderCount() int { return r.headerCount }

// Headers decodes the headers of r, appending them to dst.
func (r *Record) Headers(dst []RecordHeader) ([]RecordHeader, error) {
	b := r.headers
	for i := 0; i < r.headerCount; i++ {
		k, n, err := readBytes(b)
		if err != nil {
			return dst, err
		}
		b = b[n:]
		v, n, err := readBytes(b)
		if err != nil {
			return dst, err
		}
		b = b[n:]
		dst = append(dst, RecordHeader{Key: string(k), Value: v})
	}
	return dst, nil
}

// Iterator walks the records of one batch.
type Iterator struct {
	rest []byte
	err  error
}

// Records returns an iterator over the records of batch b. The batch header
// must already have been checked (ParseHeader or CheckCRC). A compressed
// batch is decompressed first, into a new buffer the records alias.
func Records(b []byte) Iterator {
	if len(b) < HeaderSize {
		return Iterator{err: fmt.Errorf("%w: batch shorter than its header", ErrCorrupt)}
	}
	if c := Codec(b[offAttributes+1] & attrCompressionMask); c != NoCompression {
		body, err := decompress(c, b[HeaderSize:])
		if err != nil {
			return Iterator{err: err}
		}
		return Iterator{rest: body}
	}
	return Iterator{rest: b[HeaderSize:]}
}

// Next decodes the next record. It returns ok=false at the end of the batch.
func (it *Iterator) Next() (r Record, ok bool, err error) {
	if it.err != nil {
		return r, false, it.err
	}
	if len(it.rest) == 0 {
		return r, false, nil
	}
	length, n := binary.Varint(it.rest)
	if n <= 0 || length < 0 || int64(len(it.rest)-n) < length {
		it.err = fmt.Errorf("%w: record length %d with %d bytes left", ErrCorrupt, length, len(it.rest)-n)
		return r, false, it.err
	}
	body := it.rest[n : n+int(length)]
	it.rest = it.rest[n+int(length):]
	if err := decodeRecord(body, &r); err != nil {
		it.err = err
		return r, false, err
	}
	return r, true, nil
}

func decodeRecord(b []byte, r *Record) error {
	if len(b) < 1 {
		return fmt.Errorf("%w: empty record", ErrCorrupt)
	}
	r.Attributes = int8(b[0])
	b = b[1:]
	ts, n := binary.Varint(b)
	if n <= 0 {
		return fmt.Errorf("%w: bad timestamp delta", ErrCorrupt)
	}
	r.TimestampDelta = ts
	b = b[n:]
	od, n := binary.Varint(b)
	if n <= 0 || od < 0 || od > 1<<31-1 {
		return fmt.Errorf("%w: bad offset delta", ErrCorrupt)
	}
	r.OffsetDelta = int32(od)
	b = b[n:]
	var err error
	if r.Key, n, err = readBytes(b); err != nil {
		return err
	}
	b = b[n:]
	if r.Value, n, err = readBytes(b); err != nil {
		return err
	}
	b = b[n:]
	hc, n := binary.Varint(b)
	if n <= 0 || hc < 0 || hc > int64(len(b)) {
		return fmt.Errorf("%w: bad header count", ErrCorrupt)
	}
	b = b[n:]
	r.headerCount = int(hc)
	r.headers = b
	// Walk the headers once so that a batch that validates always decodes.
	for i := 0; i < r.headerCount; i++ {
		for j := 0; j < 2; j++ {
			_, n, err := readBytes(b)
			if err != nil {
				return err
			}
			b = b[n:]
		}
	}
	if len(b) != 0 {
		return fmt.Errorf("%w: %d bytes after the last header", ErrCorrupt, len(b))
	}
	return nil
}

// readBytes reads a varint length (-1: null) and that many bytes.
func readBytes(b []byte) ([]byte, int, error) {
	l, n := binary.Varint(b)
	if n <= 0 || l < -1 || int64(len(b)-n) < l {
		return nil, 0, fmt.Errorf("%w: bad field length", ErrCorrupt)
	}
	if l == -1 {
		return nil, n, nil
	}
	return b[n : n+int(l) : n+int(l)], n + int(l), nil
}
