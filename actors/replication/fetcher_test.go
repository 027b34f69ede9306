package replication

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestFollowerStartsInsideItsLog(t *testing.T) {
	for _, c := range []struct {
		hw, want int64
	}{{-1, 10}, {5, 10}, {12, 12}, {30, 20}} {
		f := NewFollower(1, 3, c.hw, LogState{Start: 10, End: 20, LatestEpoch: 2})
		if got := f.HighWatermark(); got != c.want {
			t.Errorf("hw %d in [10, 20]: got %d, want %d", c.hw, got, c.want)
		}
	}
	f := NewFollower(1, 3, 0, LogState{})
	if f.Leader() != 1 || f.Epoch() != 3 || f.Truncated() {
		t.Fatalf("leader %d epoch %d truncated %v", f.Leader(), f.Epoch(), f.Truncated())
	}
}

func TestFollowerAsksEpochEndBeforeFetching(t *testing.T) {
	log := LogState{Start: 0, End: 8, LatestEpoch: 4}
	f := NewFollower(1, 5, 3, log)
	if s := f.Next(log); s.Kind != AskEpochEnd || s.Epoch != 4 {
		t.Fatalf("first step %+v, want AskEpochEnd of epoch 4", s)
	}
	// The leader has epoch 4 ending at 6: cut the two records after it.
	own := func(int32) (int32, int64, bool) { return 4, 8, true }
	tr := f.EpochAnswered(4, 6, own, log)
	if tr.TruncateTo != 6 || !tr.Done || !f.Truncated() {
		t.Fatalf("truncation %+v truncated=%v, want to 6 and done", tr, f.Truncated())
	}
	log.End = 6
	f.LogTruncated(log)
	if s := f.Next(log); s.Kind != Fetch || s.Offset != 6 {
		t.Fatalf("after truncation %+v, want Fetch from 6", s)
	}
}

func TestFollowerWithEmptyLogFetchesAtOnce(t *testing.T) {
	log := LogState{Start: 40, End: 40, LatestEpoch: -1}
	f := NewFollower(1, 5, 0, log)
	if s := f.Next(log); s.Kind != Fetch || s.Offset != 40 || !f.Truncated() {
		t.Fatalf("step %+v truncated=%v, want Fetch from 40", s, f.Truncated())
	}
}

func TestFollowerNeverTruncatesBelowItsLogStart(t *testing.T) {
	log := LogState{Start: 10, End: 15, LatestEpoch: 2}
	f := NewFollower(1, 5, 0, log)
	// The leader's epoch 2 ends at 7, below what this log still holds.
	own := func(int32) (int32, int64, bool) { return 2, 12, true }
	if tr := f.EpochAnswered(2, 7, own, log); tr.TruncateTo != 10 || !tr.Done {
		t.Fatalf("truncation %+v, want to the log start 10", tr)
	}
}

func TestFollowerBacksOffAndResets(t *testing.T) {
	log := LogState{End: 3, LatestEpoch: 1}
	f := NewFollower(1, 1, 0, log)
	var got []time.Duration
	for range 7 {
		s := f.Failed("leader unreachable")
		if s.Kind != Wait || s.Reason != "leader unreachable" {
			t.Fatalf("step %+v, want Wait", s)
		}
		got = append(got, s.Backoff)
	}
	ms := time.Millisecond
	want := []time.Duration{50 * ms, 100 * ms, 200 * ms, 400 * ms, 800 * ms, time.Second, time.Second}
	if !slices.Equal(got, want) {
		t.Fatalf("backoffs %v, want %v", got, want)
	}
	f.Synced(0, log)
	if s := f.Failed("again"); s.Backoff != 50*ms {
		t.Fatalf("backoff after a success %v, want 50ms", s.Backoff)
	}
	own := func(int32) (int32, int64, bool) { return 1, 3, true }
	f.EpochAnswered(1, 3, own, log)
	if s := f.Failed("again"); s.Backoff != 50*ms {
		t.Fatalf("backoff after an epoch answer %v, want 50ms", s.Backoff)
	}
}

func TestFollowerFetchAnswers(t *testing.T) {
	log := LogState{Start: 5, End: 20, LatestEpoch: 3}
	truncated := func(hw int64) *Follower {
		f := NewFollower(1, 3, hw, log)
		f.truncated = true
		return f
	}
	cases := []struct {
		name       string
		ans        FetchAnswer
		want       FetchDecision
		hw         int64 // the follower's HW after the answer
		truncating bool  // the follower truncates again
	}{
		{"batches are appended", FetchAnswer{HasBatches: true, HighWatermark: 30},
			FetchDecision{Action: AppendBatches}, 12, false},
		{"no batches: the leader's HW, capped by the log", FetchAnswer{HighWatermark: 30},
			FetchDecision{Action: SendNext, Next: Step{Kind: Fetch, Offset: 20}}, 20, false},
		{"no batches: an older leader HW does not move it back", FetchAnswer{HighWatermark: 8},
			FetchDecision{Action: SendNext, Next: Step{Kind: Fetch, Offset: 20}}, 12, false},
		{"behind the leader's log start: reset there", FetchAnswer{Result: FetchOutOfRange, LogStart: 50},
			FetchDecision{Action: ResetLog, ResetTo: 50}, 12, false},
		{"past the leader's end: truncate again", FetchAnswer{Result: FetchOutOfRange, LogStart: 0},
			FetchDecision{Action: SendNext, Next: Step{Kind: AskEpochEnd, Epoch: 3}}, 12, true},
		{"refused: back off", FetchAnswer{Result: FetchFailed, Reason: "NOT_LEADER"},
			FetchDecision{Action: SendNext, Next: Step{Kind: Wait, Backoff: MinFollowerBackoff, Reason: "NOT_LEADER"}}, 12, false},
	}
	for _, c := range cases {
		f := truncated(12)
		got := f.FetchAnswered(c.ans, log)
		if got != c.want {
			t.Errorf("%s: decision %+v, want %+v", c.name, got, c.want)
		}
		if f.HighWatermark() != c.hw || f.Truncated() == c.truncating {
			t.Errorf("%s: hw %d truncated %v, want hw %d truncated %v", c.name, f.HighWatermark(), f.Truncated(), c.hw, !c.truncating)
		}
	}
}

func TestFollowerAfterResetAndRejectedAppend(t *testing.T) {
	f := NewFollower(1, 3, 4, LogState{End: 10, LatestEpoch: 2})
	f.truncated = true
	reset := LogState{Start: 50, End: 50, LatestEpoch: -1}
	if s := f.LogReset(reset); s.Kind != Fetch || s.Offset != 50 || f.HighWatermark() != 50 {
		t.Fatalf("after reset: %+v hw %d, want Fetch from 50 and hw 50", s, f.HighWatermark())
	}
	log := LogState{Start: 50, End: 60, LatestEpoch: 3}
	if s := f.AppendRejected("gap"); s.Kind != Wait || f.Truncated() {
		t.Fatalf("rejected append: %+v truncated=%v, want Wait and truncating again", s, f.Truncated())
	}
	if s := f.Next(log); s.Kind != AskEpochEnd || s.Epoch != 3 {
		t.Fatalf("after the pause: %+v, want AskEpochEnd of epoch 3", s)
	}
}

// modelLog is a replica log reduced to the leader epoch of each offset
// from start on.
type modelLog struct {
	start  int64
	epochs []int32
}

func (l *modelLog) end() int64 { return l.start + int64(len(l.epochs)) }

func (l *modelLog) state() LogState {
	st := LogState{Start: l.start, End: l.end(), LatestEpoch: -1}
	if len(l.epochs) > 0 {
		st.LatestEpoch = l.epochs[len(l.epochs)-1]
	}
	return st
}

func (l *modelLog) epochEnd(epoch int32) (int32, int64, bool) {
	found, end, ok := epochLog(l.epochs).end(epoch)
	return found, l.start + end, ok
}

func (l *modelLog) at(offset int64) int32 { return l.epochs[offset-l.start] }

// agrees reports whether f and l hold the same epoch at every offset both
// hold.
func agrees(f, l *modelLog) bool {
	for o := max(f.start, l.start); o < min(f.end(), l.end()); o++ {
		if f.at(o) != l.at(o) {
			return false
		}
	}
	return true
}

// Randomized model of the fetch loop: a follower whose log holds a prefix
// of an older leader's history runs Follower's decisions against a leader
// that keeps appending, moves its HW, deletes old records by retention and
// fails requests at random. The follower only ever appends to a log that
// agrees with the leader's, never truncates what the HW guarantees, keeps
// its HW within its log and below the leader's, and once the faults stop
// holds exactly the leader's log with the leader's HW.
func TestFollowerLoopRandomized(t *testing.T) {
	for seed := uint64(0); seed < 1500; seed++ {
		if err := runFollowerModel(seed); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
	}
}

func runFollowerModel(seed uint64) error {
	rng := rand.New(rand.NewPCG(seed, 29))
	// Leader histories: each leader keeps a prefix of the last one's log.
	var history []epochLog
	cur := epochLog{}
	epochs := int32(2 + rng.IntN(5))
	for epoch := range epochs {
		if len(cur) > 0 {
			cur = slices.Clone(cur[:rng.IntN(len(cur)+1)])
		}
		for n := rng.IntN(6); n > 0; n-- {
			cur = append(cur, epoch)
		}
		history = append(history, slices.Clone(cur))
	}
	leader := &modelLog{epochs: slices.Clone(cur)}
	src := history[rng.IntN(len(history))]
	follower := &modelLog{epochs: slices.Clone(src[:rng.IntN(len(src)+1)])}
	common := int64(0)
	for common < follower.end() && common < leader.end() && follower.at(common) == leader.at(common) {
		common++
	}
	leaderHW := common + int64(rng.IntN(int(leader.end()-common)+1))
	hw := int64(rng.IntN(int(common) + 1))
	f := NewFollower(0, epochs-1, hw, follower.state())
	faults := true
	step := f.Next(follower.state())
	for i := 0; ; i++ {
		if i == 300 {
			faults = false
		}
		if i > 600 {
			return fmt.Errorf("no convergence: follower %+v, leader %+v, step %+v", follower, leader, step)
		}
		if !faults && step.Kind == Fetch && follower.end() == leader.end() && f.HighWatermark() == leaderHW {
			// The follower may still hold records the leader's retention
			// deleted; every offset both hold must match.
			if !agrees(follower, leader) {
				return fmt.Errorf("converged to %+v, leader %+v", follower, leader)
			}
			return nil
		}
		// The leader moves on.
		if faults && rng.IntN(4) == 0 {
			for n := rng.IntN(3); n > 0; n-- {
				leader.epochs = append(leader.epochs, epochs-1)
			}
		}
		if rng.IntN(3) == 0 {
			leaderHW += int64(rng.IntN(int(leader.end()-leaderHW) + 1))
		}
		if faults && rng.IntN(30) == 0 && leaderHW > leader.start {
			cut := leader.start + int64(rng.IntN(int(leaderHW-leader.start)+1))
			leader.epochs, leader.start = leader.epochs[cut-leader.start:], cut
		}
		prevHW := f.HighWatermark()
		failed := faults && rng.IntN(5) == 0
		switch step.Kind {
		case Wait:
			if step.Backoff < MinFollowerBackoff || step.Backoff > MaxFollowerBackoff {
				return fmt.Errorf("backoff %v", step.Backoff)
			}
			step = f.Next(follower.state())
		case AskEpochEnd:
			if failed {
				step = f.Failed("timeout")
				break
			}
			if step.Epoch != follower.state().LatestEpoch {
				return fmt.Errorf("asked for epoch %d, latest is %d", step.Epoch, follower.state().LatestEpoch)
			}
			le, lend, ok := leader.epochEnd(step.Epoch)
			if !ok {
				le, lend = -1, -1
			}
			tr := f.EpochAnswered(le, lend, follower.epochEnd, follower.state())
			if tr.TruncateTo < follower.start {
				return fmt.Errorf("truncation to %d below the log start %d", tr.TruncateTo, follower.start)
			}
			if tr.TruncateTo < follower.end() {
				if tr.TruncateTo < prevHW {
					return fmt.Errorf("truncation to %d below the HW %d", tr.TruncateTo, prevHW)
				}
				follower.epochs = follower.epochs[:tr.TruncateTo-follower.start]
				f.LogTruncated(follower.state())
			}
			step = f.Next(follower.state())
		case Fetch:
			if step.Offset != follower.end() {
				return fmt.Errorf("fetch from %d, log ends at %d", step.Offset, follower.end())
			}
			var ans FetchAnswer
			var batch []int32
			switch {
			case failed:
				ans = FetchAnswer{Result: FetchFailed, Reason: "timeout"}
			case step.Offset < leader.start || step.Offset > leader.end():
				ans = FetchAnswer{Result: FetchOutOfRange, LogStart: leader.start, HighWatermark: leaderHW}
			default:
				n := min(int64(1+rng.IntN(4)), leader.end()-step.Offset)
				batch = leader.epochs[step.Offset-leader.start : step.Offset-leader.start+n]
				ans = FetchAnswer{HasBatches: n > 0, HighWatermark: leaderHW, LogStart: leader.start}
			}
			d := f.FetchAnswered(ans, follower.state())
			switch d.Action {
			case AppendBatches:
				if !agrees(follower, leader) {
					return fmt.Errorf("appending to %+v, which diverges from the leader's %+v", follower, leader)
				}
				if faults && rng.IntN(10) == 0 {
					step = f.AppendRejected("gap")
					break
				}
				follower.epochs = append(follower.epochs, batch...)
				step = f.Synced(ans.HighWatermark, follower.state())
			case ResetLog:
				if d.ResetTo <= follower.end() {
					return fmt.Errorf("reset to %d, log ends at %d", d.ResetTo, follower.end())
				}
				follower.start, follower.epochs = d.ResetTo, nil
				step = f.LogReset(follower.state())
			case SendNext:
				step = d.Next
			}
		}
		hw := f.HighWatermark()
		if hw < prevHW || hw > follower.end() || hw < follower.start || hw > leaderHW {
			return fmt.Errorf("hw %d (was %d) outside [%d, %d] or above the leader's %d", hw, prevHW, follower.start, follower.end(), leaderHW)
		}
	}
}
