package election

import (
	"slices"
	"testing"
	"time"
)

func TestReach(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	r := NewReach(3 * time.Second)
	r.Live([]int32{1, 2, 3}, t0)
	if !r.Majority(1, t0.Add(2*time.Second)) || len(r.Unreachable(1, t0.Add(2*time.Second))) != 0 {
		t.Fatal("brokers just seen count as reachable for a session timeout")
	}
	// 2 answers, 3 does not: 1 reaches 2 of 3.
	r.Answered(2, t0.Add(2*time.Second))
	at := t0.Add(4 * time.Second)
	if got := r.Unreachable(1, at); !slices.Equal(got, []int32{3}) || !r.Majority(1, at) {
		t.Fatalf("unreachable %v majority %v, want [3] and true", got, r.Majority(1, at))
	}
	// Neither answers any more: 1 alone of 3 gives up.
	at = t0.Add(6 * time.Second)
	if got := r.Unreachable(1, at); !slices.Equal(got, []int32{2, 3}) || r.Majority(1, at) {
		t.Fatalf("unreachable %v majority %v, want [2 3] and false", got, r.Majority(1, at))
	}
	// 3 leaves the live brokers: 1 reaches 1 of 2, half.
	r.Live([]int32{1, 2}, at)
	if !r.Majority(1, at) {
		t.Fatal("one of two brokers is half: it may lead")
	}
	// 3 comes back: a session timeout to answer.
	r.Live([]int32{1, 2, 3}, at)
	if got := r.Unreachable(1, at.Add(time.Second)); !slices.Equal(got, []int32{2}) {
		t.Fatalf("unreachable %v, want [2]", got)
	}
	// Renewed (a new controller): a full session for everyone.
	r.Renew(at.Add(5 * time.Second))
	if got := r.Unreachable(1, at.Add(7*time.Second)); len(got) != 0 {
		t.Fatalf("unreachable %v right after a renewal", got)
	}
	// A single broker always may lead.
	alone := NewReach(time.Second)
	alone.Live([]int32{7}, t0)
	if !alone.Majority(7, t0.Add(time.Hour)) {
		t.Fatal("a broker alone may not lead")
	}
}
