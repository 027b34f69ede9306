package throttle

import (
	"testing"
	"time"
)

func TestBucketKeepsToItsRate(t *testing.T) {
	var b Bucket
	t0 := time.Unix(1_700_000_000, 0)
	const rate = 1000
	if got := b.Available(rate, t0); got != rate {
		t.Fatalf("a new bucket offers %d, want a second's worth (%d)", got, rate)
	}
	b.Spend(1500) // a batch bigger than what was left
	if got := b.Available(rate, t0.Add(250*time.Millisecond)); got > 0 {
		t.Fatalf("%d available while 250 bytes in debt", got)
	}
	if got := b.Available(rate, t0.Add(time.Second)); got != 500 {
		t.Fatalf("after a second: %d, want 500", got)
	}
	// Idle for long: never more than a second's worth.
	if got := b.Available(rate, t0.Add(time.Hour)); got != rate {
		t.Fatalf("after an hour: %d, want %d", got, rate)
	}

	// Sent as fast as allowed for 10 s of simulated time: about the rate.
	var c Bucket
	sent := 0
	for ms := 0; ms < 10_000; ms += 7 {
		if n := c.Available(rate, t0.Add(time.Duration(ms)*time.Millisecond)); n > 0 {
			c.Spend(300) // sends a whole 300-byte batch whatever is left
			sent += 300
		}
	}
	if sent < 10*rate || sent > 11*rate+300 {
		t.Fatalf("sent %d bytes in 10 s at %d bytes/s", sent, rate)
	}
	if got := c.Available(0, t0); got != 0 {
		t.Fatalf("rate 0 offers %d", got)
	}
}
