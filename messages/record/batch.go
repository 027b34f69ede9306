package record

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// Byte positions of the RecordBatch v2 header fields.
const (
	offBaseOffset      = 0
	offBatchLength     = 8
	offLeaderEpoch     = 12
	offMagic           = 16
	offCRC             = 17
	offAttributes      = 21
	offLastOffsetDelta = 23
	offBaseTimestamp   = 27
	offMaxTimestamp    = 35
	offProducerID      = 43
	offProducerEpoch   = 51
	offBaseSequence    = 53
	offRecordCount     = 57

	// HeaderSize is the size of the fixed batch header.
	HeaderSize = 61
	// lengthPrefix is the part of the header not counted in batchLength.
	lengthPrefix = 12

	// Magic is the only batch format version Sluice reads and writes.
	Magic = 2
)

// Attribute bits of a batch.
const (
	attrCompressionMask = 0x07
	attrTimestampType   = 0x08
	attrTransactional   = 0x10
	attrControl         = 0x20
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrCorrupt is wrapped by every error that reports a batch whose bytes do
// not form a valid RecordBatch v2.
var ErrCorrupt = errors.New("corrupt record batch")

// ErrTooLarge is returned by Validate for a batch above the size limit.
var ErrTooLarge = errors.New("record batch too large")

// Header is the decoded fixed header of a batch.
type Header struct {
	BaseOffset      int64
	BatchLength     int32
	LeaderEpoch     int32
	Magic           int8
	CRC             uint32
	Attributes      int16
	LastOffsetDelta int32
	BaseTimestamp   int64
	MaxTimestamp    int64
	ProducerID      int64
	ProducerEpoch   int16
	BaseSequence    int32
	RecordCount     int32
}

// LastOffset is the offset of the batch's last record.
func (h Header) LastOffset() int64 { return h.BaseOffset + int64(h.LastOffsetDelta) }

// NextOffset is the offset that follows the batch.
func (h Header) NextOffset() int64 { return h.LastOffset() + 1 }

// Size is the number of bytes the batch occupies.
func (h Header) Size() int { return int(h.BatchLength) + lengthPrefix }

// ParseHeader decodes the fixed header of b without checking the CRC.
func ParseHeader(b []byte) (Header, error) {
	if len(b) < HeaderSize {
		return Header{}, fmt.Errorf("%w: %d bytes is shorter than the %d-byte header", ErrCorrupt, len(b), HeaderSize)
	}
	h := Header{
		BaseOffset:      int64(binary.BigEndian.Uint64(b[offBaseOffset:])),
		BatchLength:     int32(binary.BigEndian.Uint32(b[offBatchLength:])),
		LeaderEpoch:     int32(binary.BigEndian.Uint32(b[offLeaderEpoch:])),
		Magic:           int8(b[offMagic]),
		CRC:             binary.BigEndian.Uint32(b[offCRC:]),
		Attributes:      int16(binary.BigEndian.Uint16(b[offAttributes:])),
		LastOffsetDelta: int32(binary.BigEndian.Uint32(b[offLastOffsetDelta:])),
		BaseTimestamp:   int64(binary.BigEndian.Uint64(b[offBaseTimestamp:])),
		MaxTimestamp:    int64(binary.BigEndian.Uint64(b[offMaxTimestamp:])),
		ProducerID:      int64(binary.BigEndian.Uint64(b[offProducerID:])),
		ProducerEpoch:   int16(binary.BigEndian.Uint16(b[offProducerEpoch:])),
		BaseSequence:    int32(binary.BigEndian.Uint32(b[offBaseSequence:])),
		RecordCount:     int32(binary.BigEndian.Uint32(b[offRecordCount:])),
	}
	if h.Magic != Magic {
		return h, fmt.Errorf("%w: magic %d, want %d", ErrCorrupt, h.Magic, Magic)
	}
	return h, nil
}

// ComputeCRC returns the CRC32C of the part of b the batch CRC covers.
func ComputeCRC(b []byte) uint32 { return crc32.Checksum(b[offAttributes:], castagnoli) }

// CheckCRC verifies the length field and CRC of one whole batch b.
func CheckCRC(b []byte) (Header, error) {
	h, err := ParseHeader(b)
	if err != nil {
		return h, err
	}
	if int(h.BatchLength) != len(b)-lengthPrefix {
		return h, fmt.Errorf("%w: batch length field %d does not match %d bytes", ErrCorrupt, h.BatchLength, len(b)-lengthPrefix)
	}
	if got := ComputeCRC(b); got != h.CRC {
		return h, fmt.Errorf("%w: CRC %08x, header says %08x", ErrCorrupt, got, h.CRC)
	}
	return h, nil
}

// Validate checks that b is exactly one well-formed, non-transactional
// batch of at most maxBytes (0: no limit): header, CRC, and the framing of
// every record (lengths and offset deltas). An uncompressed batch is
// checked without allocating; a compressed one is decompressed to check
// its records (at most MaxDecompressedBytes). Errors wrap ErrCorrupt or
// ErrTooLarge.
func Validate(b []byte, maxBytes int) (Header, error) {
	if maxBytes > 0 && len(b) > maxBytes {
		return Header{}, fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, len(b), maxBytes)
	}
	h, err := CheckCRC(b)
	if err != nil {
		return h, err
	}
	if c := h.Codec(); c > Zstd {
		return h, fmt.Errorf("%w: unknown compression codec %d", ErrCorrupt, c)
	}
	if h.Attributes&(attrTransactional|attrControl) != 0 {
		return h, fmt.Errorf("%w: transactional and control batches are not supported", ErrCorrupt)
	}
	if h.RecordCount <= 0 || h.LastOffsetDelta != h.RecordCount-1 {
		return h, fmt.Errorf("%w: %d records with last offset delta %d", ErrCorrupt, h.RecordCount, h.LastOffsetDelta)
	}
	if h.MaxTimestamp < h.BaseTimestamp {
		return h, fmt.Errorf("%w: max timestamp %d before first timestamp %d", ErrCorrupt, h.MaxTimestamp, h.BaseTimestamp)
	}
	n := 0
	it := Records(b)
	for {
		r, ok, err := it.Next()
		if err != nil {
			return h, err
		}
		if !ok {
			break
		}
		if r.OffsetDelta != int32(n) {
			return h, fmt.Errorf("%w: record %d has offset delta %d", ErrCorrupt, n, r.OffsetDelta)
		}
		n++
	}
	if n != int(h.RecordCount) {
		return h, fmt.Errorf("%w: header counts %d records, found %d", ErrCorrupt, h.RecordCount, n)
	}
	return h, nil
}

// SetBaseOffset rewrites the base offset of batch b in place. The base
// offset lies outside the CRC.
func SetBaseOffset(b []byte, offset int64) {
	binary.BigEndian.PutUint64(b[offBaseOffset:], uint64(offset))
}

// SetLeaderEpoch rewrites the partition leader epoch of batch b in place.
// The epoch lies outside the CRC.
func SetLeaderEpoch(b []byte, epoch int32) {
	binary.BigEndian.PutUint32(b[offLeaderEpoch:], uint32(epoch))
}

// Split cuts a concatenation of whole batches into batches, checking only
// the length fields. A trailing partial batch is an error.
func Split(b []byte, dst [][]byte) ([][]byte, error) {
	for len(b) > 0 {
		if len(b) < lengthPrefix {
			return dst, fmt.Errorf("%w: %d trailing bytes", ErrCorrupt, len(b))
		}
		size := int(int32(binary.BigEndian.Uint32(b[offBatchLength:]))) + lengthPrefix
		if size < HeaderSize || size > len(b) {
			return dst, fmt.Errorf("%w: batch of %d bytes in %d remaining", ErrCorrupt, size, len(b))
		}
		dst = append(dst, b[:size:size])
		b = b[size:]
	}
	return dst, nil
}

// RecordsFrom counts the records at or after offset from in batches (each
// entry one or more whole batches) by their offset ranges: what a reader
// that starts at from receives. Bytes that do not parse end an entry.
func RecordsFrom(batches [][]byte, from int64) int64 {
	var n int64
	for _, b := range batches {
		for len(b) >= HeaderSize {
			h, err := ParseHeader(b)
			if err != nil || h.Size() < HeaderSize || h.Size() > len(b) {
				break
			}
			if last := h.LastOffset(); last >= from {
				n += last - max(h.BaseOffset, from) + 1
			}
			b = b[h.Size():]
		}
	}
	return n
}
