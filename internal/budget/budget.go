// Package budget counts the bytes a broker holds for its peers (requests
// read but not yet answered, answers assembled but not yet written) against
// one limit for the whole broker and a smaller one for each source, so no
// peer, and no set of peers, can make the broker hold more.
//
// A reader asks before it reads: Acquire waits until the budget has room
// and then grants the whole request, even when that takes the count over
// the limit by less than one request (Kafka's memory pool does the same),
// so a request larger than what is left never starves. A source at its
// own limit waits while others go on. Take counts bytes without waiting,
// for what is already in memory (an answer); the next Acquire feels it.
//
// The package imports nothing of the broker; a listener gives each of its
// peers a source name (its remote address).
package budget

import (
	"context"
	"sync"
	"sync/atomic"
)

// Budget is a count of bytes held, by source, against two limits.
type Budget struct {
	limit, perSource int64

	mu       sync.Mutex
	used     int64
	bySource map[string]int64
	waiting  []*waiter // in arrival order

	waits atomic.Int64
}

type waiter struct {
	source  string
	n       int64
	granted chan struct{}
}

// New returns a budget of limit bytes in all and perSource bytes for one
// source (perSource <= 0 or above limit: limit).
func New(limit, perSource int64) *Budget {
	if perSource <= 0 || perSource > limit {
		perSource = limit
	}
	return &Budget{limit: limit, perSource: perSource, bySource: map[string]int64{}}
}

// Limit is the budget's limit in all.
func (b *Budget) Limit() int64 { return b.limit }

// PerSource is one source's limit.
func (b *Budget) PerSource() int64 { return b.perSource }

// Used is how many bytes are held now.
func (b *Budget) Used() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// Waits is how many Acquire calls had to wait for room.
func (b *Budget) Waits() int64 { return b.waits.Load() }

// fits reports whether source may be granted more now.
func (b *Budget) fits(source string) bool {
	return b.used < b.limit && b.bySource[source] < b.perSource
}

// Acquire waits until the budget has room for source and then counts n
// bytes for it; it returns ctx's error when ctx ends first (nothing is
// then counted). Release gives them back.
func (b *Budget) Acquire(ctx context.Context, source string, n int64) error {
	b.mu.Lock()
	// Waiters only wait while the budget is full or their own source is
	// at its limit, so one that fits now overtakes no one it should not.
	if n <= 0 || b.fits(source) {
		b.add(source, n)
		b.mu.Unlock()
		return nil
	}
	w := &waiter{source: source, n: n, granted: make(chan struct{})}
	b.waiting = append(b.waiting, w)
	b.mu.Unlock()
	b.waits.Add(1)
	select {
	case <-w.granted:
		return nil
	case <-ctx.Done():
		b.mu.Lock()
		defer b.mu.Unlock()
		select {
		case <-w.granted: // granted meanwhile: give it back
			b.release(source, n)
		default:
			b.remove(w)
		}
		return ctx.Err()
	}
}

// Take counts n bytes for source without waiting.
func (b *Budget) Take(source string, n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.add(source, n)
}

// TryTake counts n bytes for source if that keeps both the budget and the
// source within their limits, and reports whether it did; it never waits.
func (b *Budget) TryTake(source string, n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used+n > b.limit || b.bySource[source]+n > b.perSource {
		return false
	}
	b.add(source, n)
	return true
}

// Held is how many bytes source holds now.
func (b *Budget) Held(source string) int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.bySource[source]
}

// Release gives back n bytes of source and grants waiters that now fit,
// oldest first.
func (b *Budget) Release(source string, n int64) {
	if n <= 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.release(source, n)
}

func (b *Budget) add(source string, n int64) {
	if n <= 0 {
		return
	}
	b.used += n
	b.bySource[source] += n
}

func (b *Budget) release(source string, n int64) {
	b.used -= n
	if b.bySource[source] -= n; b.bySource[source] <= 0 {
		delete(b.bySource, source)
	}
	// A waiter whose source is at its limit stays; those behind it whose
	// sources have room go first.
	kept := b.waiting[:0]
	for _, w := range b.waiting {
		if b.fits(w.source) {
			b.add(w.source, w.n)
			close(w.granted)
			continue
		}
		kept = append(kept, w)
	}
	clear(b.waiting[len(kept):])
	b.waiting = kept
}

func (b *Budget) remove(w *waiter) {
	for i, x := range b.waiting {
		if x == w {
			b.waiting = append(b.waiting[:i], b.waiting[i+1:]...)
			return
		}
	}
}
