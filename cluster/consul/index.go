package consul

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
//
// A wiped store can also climb back to exactly the index a caller waits
// on, and then answers it as if nothing had changed. Queries that can tell
// one store from another pass a mark (the ModifyIndex of a key written once
// in the store's life, 0 while it has none): a new mark restarts the
// numbering too.
type indexMap struct {
	mu     sync.Mutex
	base   uint64 // added to Consul's index
	high   uint64 // largest index handed out
	mark   uint64 // the store's mark at the last answer
	marked bool   // an answer has set mark
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
	return m.observeMarked(wait, base, raw, 0)
}

// observeMarked is observe for a query that also read the store's mark.
// regressed also reports that the mark the store had is gone or another
// (not a first mark: that is a new store being set up).
func (m *indexMap) observeMarked(wait, base, raw, mark uint64) (index uint64, regressed bool) {
	// Consul never means 0; blocking on 0 would not block.
	raw = max(raw, 1)
	m.mu.Lock()
	defer m.mu.Unlock()
	backwards := raw < wait && base == m.base
	replaced := m.marked && mark != m.mark
	if backwards || replaced {
		m.base = m.high
	}
	regressed = backwards || replaced && m.mark != 0
	m.mark, m.marked = mark, true
	v := m.base + raw
	m.high = max(m.high, v)
	return v, regressed
}
