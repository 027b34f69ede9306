package consul

import (
	"context"
	"math/rand/v2"
	"time"
)

// backoff spaces the attempts of a retry loop that talks to Consul or to
// another broker: each failure doubles the pause, up to max, with jitter so
// that brokers retrying together spread out; a success starts over.
type backoff struct {
	min, max time.Duration
	next     time.Duration
}

func newBackoff(min, max time.Duration) *backoff { return &backoff{min: min, max: max} }

// wait sleeps before the next attempt; false when ctx ended first.
func (b *backoff) wait(ctx context.Context) bool {
	if b.next < b.min {
		b.next = b.min
	}
	d := b.next/2 + rand.N(b.next/2+1)
	b.next = min(2*b.next, b.max)
	return sleep(ctx, d)
}

// reset is called after a success.
func (b *backoff) reset() { b.next = 0 }
