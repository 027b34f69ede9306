package record

import (
	"encoding/binary"
)

// Producer identifies an idempotent producer's batch: its id, epoch and the
// sequence number of the batch's first record.
type Producer struct {
	ID           int64
	Epoch        int16
	BaseSequence int32
}

// NoProducer marks a batch written without idempotence.
var NoProducer = Producer{ID: -1, Epoch: -1, BaseSequence: -1}

// Builder appends records to one batch. The zero value is ready after Reset.
// A Builder reuses its buffer: the slice Finish returns is valid until the
// next Reset.
type Builder struct {
	buf     []byte
	count   int32
	firstTS int64
	maxTS   int64
	prod    Producer
}

// Reset starts a new, empty batch.
func (b *Builder) Reset(p Producer) {
	if cap(b.buf) < HeaderSize {
		b.buf = make([]byte, HeaderSize, 16<<10)
	}
	b.buf = b.buf[:HeaderSize]
	b.count = 0
	b.firstTS, b.maxTS = 0, 0
	b.prod = p
}

// ResetBuffer starts a new, empty batch written into buf's storage (its
// length is ignored). The Builder no longer uses its previous buffer, so a
// slice returned by an earlier Finish stays valid.
func (b *Builder) ResetBuffer(buf []byte, p Producer) {
	if cap(buf) < HeaderSize {
		buf = make([]byte, HeaderSize, 16<<10)
	}
	b.buf = buf[:HeaderSize]
	b.count = 0
	b.firstTS, b.maxTS = 0, 0
	b.prod = p
}

// Len is the size in bytes the batch would have if finished now.
func (b *Builder) Len() int { return len(b.buf) }

// Count is the number of records appended since Reset.
func (b *Builder) Count() int { return int(b.count) }

// RecordSize returns how many bytes Append would add for these fields.
func RecordSize(offsetDelta int32, tsDelta int64, key, value []byte, headers []RecordHeader) int {
	body := bodySize(offsetDelta, tsDelta, key, value, headers)
	return varintSize(int64(body)) + body
}

func bodySize(offsetDelta int32, tsDelta int64, key, value []byte, headers []RecordHeader) int {
	n := 1 + varintSize(tsDelta) + varintSize(int64(offsetDelta))
	n += bytesSize(key) + bytesSize(value)
	n += varintSize(int64(len(headers)))
	for _, h := range headers {
		n += varintSize(int64(len(h.Key))) + len(h.Key) + bytesSize(h.Value)
	}
	return n
}

// Append adds one record with a timestamp in Unix milliseconds. A nil key
// or value is encoded as null.
func (b *Builder) Append(timestampMs int64, key, value []byte, headers []RecordHeader) {
	if b.count == 0 {
		b.firstTS, b.maxTS = timestampMs, timestampMs
	}
	if timestampMs > b.maxTS {
		b.maxTS = timestampMs
	}
	tsDelta := timestampMs - b.firstTS
	delta := b.count
	body := bodySize(delta, tsDelta, key, value, headers)
	buf := b.buf
	buf = binary.AppendVarint(buf, int64(body))
	buf = append(buf, 0) // record attributes, unused
	buf = binary.AppendVarint(buf, tsDelta)
	buf = binary.AppendVarint(buf, int64(delta))
	buf = appendBytes(buf, key)
	buf = appendBytes(buf, value)
	buf = binary.AppendVarint(buf, int64(len(headers)))
	for _, h := range headers {
		buf = binary.AppendVarint(buf, int64(len(h.Key)))
		buf = append(buf, h.Key...)
		buf = appendBytes(buf, h.Value)
	}
	b.buf = buf
	b.count++
}

// Finish writes the header and CRC and returns the batch. Base offset and
// leader epoch are 0; the partition leader sets them.
func (b *Builder) Finish() []byte {
	buf := b.buf
	binary.BigEndian.PutUint64(buf[offBaseOffset:], 0)
	binary.BigEndian.PutUint32(buf[offBatchLength:], uint32(len(buf)-lengthPrefix))
	binary.BigEndian.PutUint32(buf[offLeaderEpoch:], 0)
	buf[offMagic] = Magic
	binary.BigEndian.PutUint16(buf[offAttributes:], 0)
	binary.BigEndian.PutUint32(buf[offLastOffsetDelta:], uint32(b.count-1))
	binary.BigEndian.PutUint64(buf[offBaseTimestamp:], uint64(b.firstTS))
	binary.BigEndian.PutUint64(buf[offMaxTimestamp:], uint64(b.maxTS))
	binary.BigEndian.PutUint64(buf[offProducerID:], uint64(b.prod.ID))
	binary.BigEndian.PutUint16(buf[offProducerEpoch:], uint16(b.prod.Epoch))
	binary.BigEndian.PutUint32(buf[offBaseSequence:], uint32(b.prod.BaseSequence))
	binary.BigEndian.PutUint32(buf[offRecordCount:], uint32(b.count))
	binary.BigEndian.PutUint32(buf[offCRC:], ComputeCRC(buf))
	return buf
}

// SetProducer rewrites the producer fields of a finished batch and its CRC.
// Producers use it to stamp a sequence number when the batch is sent.
func SetProducer(batch []byte, p Producer) {
	binary.BigEndian.PutUint64(batch[offProducerID:], uint64(p.ID))
	binary.BigEndian.PutUint16(batch[offProducerEpoch:], uint16(p.Epoch))
	binary.BigEndian.PutUint32(batch[offBaseSequence:], uint32(p.BaseSequence))
	binary.BigEndian.PutUint32(batch[offCRC:], ComputeCRC(batch))
}

func appendBytes(buf, v []byte) []byte {
	if v == nil {
		return binary.AppendVarint(buf, -1)
	}
	buf = binary.AppendVarint(buf, int64(len(v)))
	return append(buf, v...)
}

func bytesSize(v []byte) int {
	if v == nil {
		return varintSize(-1)
	}
	return varintSize(int64(len(v))) + len(v)
}

func varintSize(v int64) int {
	u := uint64(v<<1) ^ uint64(v>>63)
	n := 1
	for u >= 0x80 {
		u >>= 7
		n++
	}
	return n
}
