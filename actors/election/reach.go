package election

import (
	"slices"
	"time"
)

// Reach is what a broker knows of the other live brokers' answers to its
// pings: a broker it has not heard from for the session timeout is
// unreachable. A controller whose broker reaches fewer than half of the
// live brokers gives up its lock (the brokers it cannot reach elect one
// they can), and the controller takes the brokers it cannot reach out of
// leadership and the ISRs, as Kafka's controller fences brokers whose
// heartbeats stop (broker.session.timeout.ms).
type Reach struct {
	timeout time.Duration
	// heard is when each peer last answered, or was first seen live.
	heard map[int32]time.Time
}

// NewReach tracks peers with the given session timeout.
func NewReach(timeout time.Duration) *Reach {
	return &Reach{timeout: timeout, heard: map[int32]time.Time{}}
}

// Live sets the live brokers at now: a new one counts as heard from now
// (it gets a session timeout to answer), a gone one is forgotten.
func (r *Reach) Live(ids []int32, now time.Time) {
	for id := range r.heard {
		if !slices.Contains(ids, id) {
			delete(r.heard, id)
		}
	}
	for _, id := range ids {
		if _, ok := r.heard[id]; !ok {
			r.heard[id] = now
		}
	}
}

// Renew counts every live broker as heard from at now: a broker that
// becomes the controller gives each one a full session before fencing it,
// as a new Kafka controller does, so a takeover under load does not fence
// brokers on answers its broker missed before.
func (r *Reach) Renew(now time.Time) {
	for id := range r.heard {
		r.heard[id] = now
	}
}

// Answered records an answer from live broker id at now.
func (r *Reach) Answered(id int32, now time.Time) {
	if last, ok := r.heard[id]; ok && now.After(last) {
		r.heard[id] = now
	}
}

// Unreachable lists the live brokers other than self not heard from for
// longer than the session timeout at now, in id order.
func (r *Reach) Unreachable(self int32, now time.Time) []int32 {
	var out []int32
	for id, last := range r.heard {
		if id != self && now.Sub(last) > r.timeout {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// Majority reports whether self reaches at least half of the live brokers,
// itself counted: a controller may go on (or start) only then. Half, not
// more: of two brokers cut apart each may lead, and the lock picks one.
func (r *Reach) Majority(self int32, now time.Time) bool {
	live := len(r.heard)
	if _, ok := r.heard[self]; !ok {
		live++
	}
	return 2*(live-len(r.Unreachable(self, now))) >= live
}
