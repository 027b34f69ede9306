package storage

import (
	"fmt"
	"time"

	"github.com/sluicemq/sluice/messages/record"
)

// MemLog is a Log held in memory, the model the WAL log is tested against.
// It stores and deletes whole batches, so DeleteBefore and retention work at
// batch granularity.
type MemLog struct {
	x      index
	data   [][]byte // data[i] is the batch x.batches[i]
	hdrs   []record.Header
	closed bool
}

var _ Log = (*MemLog)(nil)

// NewMemLog returns an empty in-memory log starting at offset 0.
func NewMemLog() *MemLog { return &MemLog{} }

// Write is Append: memory needs no sync.
func (m *MemLog) Write(batches ...[]byte) error { return m.Append(batches...) }

// SyncFunc returns a function that does nothing.
func (m *MemLog) SyncFunc() func() error { return func() error { return nil } }

func (m *MemLog) Append(batches ...[]byte) error {
	if m.closed {
		return ErrClosed
	}
	hdrs, err := m.x.check(batches, m.hdrs[:0])
	m.hdrs = hdrs
	if err != nil {
		return err
	}
	for i, b := range batches {
		m.data = append(m.data, append([]byte(nil), b...))
		m.x.push(hdrs[i])
	}
	return nil
}

func (m *MemLog) Read(offset int64, maxBytes int, maxOffset int64) ([][]byte, error) {
	if m.closed {
		return nil, ErrClosed
	}
	i, j, err := m.x.readRange(offset, maxBytes, maxOffset)
	if err != nil || i == j {
		return nil, err
	}
	out := make([][]byte, j-i)
	for k := range out {
		b := m.data[i+k]
		out[k] = b[:len(b):len(b)]
	}
	return out, nil
}

func (m *MemLog) LogStartOffset() int64 { return m.x.start }
func (m *MemLog) LogEndOffset() int64   { return m.x.leo }
func (m *MemLog) Size() int64           { return m.x.size }

func (m *MemLog) TruncateTo(offset int64) error {
	if m.closed {
		return ErrClosed
	}
	if offset < m.x.start || offset > m.x.leo {
		return fmt.Errorf("%w: truncate to %d, log holds [%d, %d)", ErrOffsetOutOfRange, offset, m.x.start, m.x.leo)
	}
	n := m.x.find(offset)
	m.x.truncate(n)
	clear(m.data[n:])
	m.data = m.data[:n]
	return nil
}

func (m *MemLog) DeleteBefore(offset int64) error {
	if m.closed {
		return ErrClosed
	}
	if offset > m.x.leo {
		return fmt.Errorf("%w: delete before %d, LEO is %d", ErrOffsetOutOfRange, offset, m.x.leo)
	}
	m.dropFront(m.x.find(offset))
	return nil
}

func (m *MemLog) Reset(offset int64) error {
	if m.closed {
		return ErrClosed
	}
	if offset < m.x.leo {
		return fmt.Errorf("%w: reset to %d, below the LEO %d", ErrOffsetOutOfRange, offset, m.x.leo)
	}
	m.dropFront(len(m.data))
	m.x.reset(offset)
	return nil
}

func (m *MemLog) ApplyRetention(now time.Time, maxBytes int64, maxAge time.Duration, maxOffset int64) (int64, error) {
	if m.closed {
		return m.x.start, ErrClosed
	}
	m.dropFront(m.x.retentionCut(now, maxBytes, maxAge, maxOffset, func(i int) int { return i + 1 }))
	return m.x.start, nil
}

func (m *MemLog) dropFront(n int) {
	m.x.dropFront(n)
	clear(m.data[:n])
	m.data = m.data[n:]
}

func (m *MemLog) OffsetForTimestamp(ts int64) (int64, int64, bool, error) {
	if m.closed {
		return 0, 0, false, ErrClosed
	}
	return m.x.offsetForTimestamp(ts, func(i int) ([]byte, error) { return m.data[i], nil })
}

func (m *MemLog) MaxTimestamp(below int64) (int64, int64, bool, error) {
	if m.closed {
		return 0, 0, false, ErrClosed
	}
	return m.x.maxTimestamp(below, func(i int) ([]byte, error) { return m.data[i], nil })
}

func (m *MemLog) Epochs() []EpochStart { return m.x.epochsCopy() }

func (m *MemLog) EndOffsetForEpoch(epoch int32) (int32, int64, bool) {
	return m.x.endOffsetForEpoch(epoch)
}

func (m *MemLog) Close() error {
	m.closed = true
	return nil
}
