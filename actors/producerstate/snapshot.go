package producerstate

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"slices"
	"time"
)

// A snapshot file lets a replica skip replaying its whole log on open
// (Kafka's producer snapshot files): the state after every batch below an
// offset, so that only the batches from that offset on are replayed.

// ErrBadSnapshot: the bytes are not a snapshot EncodeSnapshot wrote.
var ErrBadSnapshot = errors.New("producer state snapshot does not decode")

const snapshotMagic = "sluice-producers-1\n"

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// EncodeSnapshot encodes the state of a log whose batches below offset it
// reflects.
func EncodeSnapshot(offset int64, producers []ProducerSnapshot) []byte {
	b := []byte(snapshotMagic)
	b = binary.AppendVarint(b, offset)
	b = binary.AppendUvarint(b, uint64(len(producers)))
	for _, p := range producers {
		b = binary.AppendVarint(b, p.ProducerID)
		b = binary.AppendVarint(b, int64(p.Epoch))
		b = binary.AppendVarint(b, p.LastUpdate.UnixMilli())
		b = binary.AppendUvarint(b, uint64(len(p.Batches)))
		for _, m := range p.Batches {
			b = binary.AppendVarint(b, int64(m.FirstSequence))
			b = binary.AppendVarint(b, int64(m.LastSequence))
			b = binary.AppendVarint(b, m.FirstOffset)
			b = binary.AppendVarint(b, m.LastOffset)
			b = binary.AppendVarint(b, m.MaxTimestamp)
		}
	}
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// DecodeSnapshot returns what EncodeSnapshot encoded.
func DecodeSnapshot(data []byte) (offset int64, producers []ProducerSnapshot, err error) {
	if len(data) < len(snapshotMagic)+4 || string(data[:len(snapshotMagic)]) != snapshotMagic {
		return 0, nil, ErrBadSnapshot
	}
	body := data[:len(data)-4]
	if crc32.Checksum(body, castagnoli) != binary.BigEndian.Uint32(data[len(data)-4:]) {
		return 0, nil, ErrBadSnapshot
	}
	r := reader{b: body[len(snapshotMagic):]}
	offset = r.varint()
	n := r.uvarint()
	if n > uint64(len(r.b)) {
		return 0, nil, ErrBadSnapshot
	}
	for range n {
		p := ProducerSnapshot{ProducerID: r.varint(), Epoch: int16(r.varint()), LastUpdate: time.UnixMilli(r.varint())}
		nb := r.uvarint()
		if nb == 0 || nb > WindowSize {
			return 0, nil, ErrBadSnapshot
		}
		for range nb {
			p.Batches = append(p.Batches, BatchMeta{FirstSequence: int32(r.varint()), LastSequence: int32(r.varint()),
				FirstOffset: r.varint(), LastOffset: r.varint(), MaxTimestamp: r.varint()})
		}
		producers = append(producers, p)
	}
	if r.bad || len(r.b) != 0 {
		return 0, nil, ErrBadSnapshot
	}
	return offset, producers, nil
}

type reader struct {
	b   []byte
	bad bool
}

func (r *reader) uvarint() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.bad, r.b = true, nil
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) varint() int64 {
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.bad, r.b = true, nil
		return 0
	}
	r.b = r.b[n:]
	return v
}

// Restore replaces the state with the snapshot's producers (as Snapshot
// returned them), least recently updated first in the recency list's
// order, as if their batches had been replayed.
func (s *State) Restore(producers []ProducerSnapshot) {
	s.Reset()
	sorted := slices.Clone(producers)
	slices.SortStableFunc(sorted, func(a, b ProducerSnapshot) int { return a.LastUpdate.Compare(b.LastUpdate) })
	for _, ps := range sorted {
		if len(ps.Batches) == 0 || len(ps.Batches) > WindowSize || s.producers[ps.ProducerID] != nil {
			continue
		}
		if s.producers == nil {
			s.producers = map[int64]*producer{}
		}
		p := &producer{id: ps.ProducerID, epoch: ps.Epoch, n: len(ps.Batches), lastUpdate: ps.LastUpdate}
		copy(p.batches[:], ps.Batches)
		s.producers[p.id] = p
		s.pushFront(p)
	}
	if limit := s.cfg.maxProducerIDs(); limit > 0 {
		for len(s.producers) > limit {
			s.remove(s.tail)
		}
	}
}
