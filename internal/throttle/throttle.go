// Package throttle is a token bucket of bytes that several goroutines
// share without waiting on it: a caller asks how much it may send now,
// sends at most that, and reports what it sent. Nobody sleeps in it; a
// caller with nothing available sends nothing and asks again later.
package throttle

import (
	"sync"
	"time"
)

// Bucket holds up to one second of its rate. The zero Bucket is ready to
// use; its rate is the one of the latest call to Available.
type Bucket struct {
	mu     sync.Mutex
	rate   float64 // bytes per second
	tokens float64 // may go below zero: a send bigger than what was left
	last   time.Time
}

// Available refills the bucket at rate bytes per second up to now and
// returns the bytes that may be sent at once (<= 0: none).
func (b *Bucket) Available(rate int64, now time.Time) int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	if rate <= 0 {
		return 0
	}
	if b.last.IsZero() {
		b.tokens, b.last = float64(rate), now
	}
	if elapsed := now.Sub(b.last).Seconds(); elapsed > 0 {
		b.tokens += elapsed * float64(rate)
		b.last = now
	}
	b.rate = float64(rate)
	b.tokens = min(b.tokens, b.rate)
	return int64(b.tokens)
}

// Spend takes n sent bytes out of the bucket. It may take more than was
// available (a whole batch): those who come next wait for the debt.
func (b *Bucket) Spend(n int) {
	b.mu.Lock()
	b.tokens -= float64(n)
	b.mu.Unlock()
}

// Take spends n bytes sent at rate (bytes per second) and returns how
// long the sender should wait before sending more: until the bucket is
// out of debt (0: it is not). Quotas use it to throttle a client after
// the fact, as Kafka does.
func (b *Bucket) Take(n int, rate int64, now time.Time) time.Duration {
	if rate <= 0 {
		return 0
	}
	b.Available(rate, now)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.tokens -= float64(n)
	if b.tokens >= 0 {
		return 0
	}
	return time.Duration(-b.tokens / b.rate * float64(time.Second))
}

// Idle is how long the bucket has not been used at now.
func (b *Bucket) Idle(now time.Time) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	return now.Sub(b.last)
}
