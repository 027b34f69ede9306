package cluster

import "sync"

// indexMap turns the X-Consul-Index of one kind of query into the index
// this backend hands out, which never goes backwards.
//
// Consul's index can go backwards: a restored snapshot, a wiped server, or
// reaped KV tombstones lowering a prefix's index. A caller then still holds
// the old, larger index; blocking on it would wait until Consul catches up,
// missing every change meanwhile. So when a blocking query answers below the
// index it waited on, numbering restarts above every index handed out: the
// caller sees a larger index, i.e. a change, and re-reads.
type indexMap struct {
	mu   sync.Mutex
	base uint64 // added to Consul's index
	high uint64 // largest index handed out
}

// wait returns the Consul index to block on for a caller's afterIndex, and
// the base it was computed with (to pass back to observe).
func (m *indexMap) wait(after uint64) (raw, base uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if after <= m.base {
		// From before a reset (or 0): anything now is news.
		return 0, m.base
	}
	return after - m.base, m.base
}

// observe maps the index Consul answered (raw) for a query that waited on
// wait, computed with base, to the caller's index; regressed reports that
// Consul's index went backwards.
func (m *indexMap) observe(wait, base, raw uint64) (index uint64, regressed bool) {
	// Consul never means 0; blocking on 0 would not block.
	raw = max(raw, 1)
	m.mu.Lock()
	defer m.mu.Unlock()
	if raw < wait && base == m.base {
		m.base = m.high
		regressed = true
	}
	v := m.base + raw
	m.high = max(m.high, v)
	return v, regressed
}
