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

// Take throttles a sender for the time its debt takes to pay off; a
// sender that waits as told sends at the rate.
func TestTakeThrottlesToTheRate(t *testing.T) {
	var b Bucket
	t0 := time.Unix(1_700_000_000, 0)
	if d := b.Take(500, 1000, t0); d != 0 {
		t.Fatalf("within the first second's worth: throttled %v", d)
	}
	if d := b.Take(1500, 1000, t0); d != time.Second {
		t.Fatalf("1000 bytes in debt at 1000/s: throttled %v, want 1s", d)
	}
	// A sender that always waits as told, for 60 s of simulated time.
	var c Bucket
	now, sent := t0, 0
	for now.Before(t0.Add(60 * time.Second)) {
		sent += 4000
		now = now.Add(c.Take(4000, 1000, now) + time.Millisecond)
	}
	if rate := float64(sent) / 60; rate < 950 || rate > 1150 {
		t.Fatalf("%.0f bytes/s at a quota of 1000", rate)
	}
	if d := c.Take(100, 0, now); d != 0 {
		t.Fatalf("rate 0 throttles %v", d)
	}
}
