package replica

import (
	"testing"
	"time"

	"github.com/sluicemq/sluice/messages"
)

var t0 = time.Unix(1_700_000_000, 0)

func written(id int, next int64, acksAll bool) Written[int] {
	return Written[int]{To: id, Resp: &messages.ProduceResponse{BaseOffset: next - 1}, Next: next, AcksAll: acksAll,
		Deadline: t0.Add(time.Second)}
}

// ids lists who the answers go to, in order.
func ids(ws []Written[int]) []int {
	out := []int{}
	for _, w := range ws {
		out = append(out, w.To)
	}
	return out
}

func sameIDs(t *testing.T, step string, got []Written[int], want ...int) {
	t.Helper()
	g := ids(got)
	if len(g) != len(want) {
		t.Fatalf("%s: answered %v, want %v", step, g, want)
	}
	for i := range g {
		if g[i] != want[i] {
			t.Fatalf("%s: answered %v, want %v", step, g, want)
		}
	}
}

func TestAcks(t *testing.T) {
	type step struct {
		name   string
		do     func(a *Acks[int]) []Written[int]
		want   []int
		failed messages.ErrorCode // the code every answer of the step has
	}
	add := func(id int, next int64, all bool) func(a *Acks[int]) []Written[int] {
		return func(a *Acks[int]) []Written[int] { return a.Add(written(id, next, all)) }
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"acks=1 waits for its fsync only", []step{
			{"write 1", add(1, 10, false), nil, 0},
			{"write 2", add(2, 20, false), nil, 0},
			{"sync to 15", func(a *Acks[int]) []Written[int] { return a.Synced(15) }, []int{1}, 0},
			{"hw moves, nothing for acks=1", func(a *Acks[int]) []Written[int] { return a.HWAdvanced(15) }, nil, 0},
			{"sync to 20", func(a *Acks[int]) []Written[int] { return a.Synced(20) }, []int{2}, 0},
		}},
		{"acks=all waits for the fsync and then the HW", []step{
			{"write", add(1, 10, true), nil, 0},
			{"HW ahead of the fsync is not enough", func(a *Acks[int]) []Written[int] { return a.HWAdvanced(10) }, nil, 0},
			{"sync", func(a *Acks[int]) []Written[int] { return a.Synced(10) }, []int{1}, 0},
		}},
		{"acks=all after the sync, before the HW", []step{
			{"write", add(1, 10, true), nil, 0},
			{"sync", func(a *Acks[int]) []Written[int] { return a.Synced(10) }, nil, 0},
			{"hw short of it", func(a *Acks[int]) []Written[int] { return a.HWAdvanced(9) }, nil, 0},
			{"hw reaches it", func(a *Acks[int]) []Written[int] { return a.HWAdvanced(10) }, []int{1}, 0},
		}},
		{"a retry of a durable batch passes at once", []step{
			{"write", add(1, 10, false), nil, 0},
			{"sync", func(a *Acks[int]) []Written[int] { return a.Synced(10) }, []int{1}, 0},
			{"duplicate", add(2, 10, false), []int{2}, 0},
		}},
		{"an older sync's report changes nothing", []step{
			{"write", add(1, 10, false), nil, 0},
			{"sync", func(a *Acks[int]) []Written[int] { return a.Synced(5) }, nil, 0},
			{"write", add(2, 4, false), []int{2}, 0},
			{"stale", func(a *Acks[int]) []Written[int] { return a.Synced(3) }, nil, 0},
		}},
		{"acks=all times out only once on disk", []step{
			{"write", add(1, 10, true), nil, 0},
			{"late tick, not synced", func(a *Acks[int]) []Written[int] { return a.Expired(t0.Add(time.Hour)) }, nil, 0},
			{"sync", func(a *Acks[int]) []Written[int] { return a.Synced(10) }, nil, 0},
			{"tick before the deadline", func(a *Acks[int]) []Written[int] { return a.Expired(t0) }, nil, 0},
			{"tick after", func(a *Acks[int]) []Written[int] { return a.Expired(t0.Add(2 * time.Second)) }, []int{1},
				messages.ErrorCode_REQUEST_TIMED_OUT},
			{"the HW comes too late", func(a *Acks[int]) []Written[int] { return a.HWAdvanced(10) }, nil, 0},
		}},
		{"a failed fsync fails what waits for it", []step{
			{"write 1", add(1, 10, true), nil, 0},
			{"sync", func(a *Acks[int]) []Written[int] { return a.Synced(10) }, nil, 0},
			{"write 2", add(2, 20, false), nil, 0},
			{"fsync fails", func(a *Acks[int]) []Written[int] { return a.SyncFailed("io") }, []int{2}, messages.ErrorCode_STORAGE_ERROR},
			{"step down", func(a *Acks[int]) []Written[int] { return a.Abandon(messages.ErrorCode_NOT_LEADER, "moved") }, []int{1},
				messages.ErrorCode_NOT_LEADER},
		}},
		{"stepping down forgets the HW", []step{
			{"write", add(1, 10, true), nil, 0},
			{"sync and hw", func(a *Acks[int]) []Written[int] { return append(a.Synced(5), a.HWAdvanced(5)...) }, nil, 0},
			{"step down", func(a *Acks[int]) []Written[int] { return a.Abandon(messages.ErrorCode_NOT_LEADER, "moved") }, []int{1},
				messages.ErrorCode_NOT_LEADER},
			{"new leadership, new write", add(2, 5, true), nil, 0},
			{"its HW", func(a *Acks[int]) []Written[int] { return a.HWAdvanced(5) }, []int{2}, 0},
		}},
		{"truncation makes the rest unsynced", []step{
			{"sync", func(a *Acks[int]) []Written[int] { return a.Synced(10) }, nil, 0},
			{"truncate", func(a *Acks[int]) []Written[int] { a.Truncated(4); return nil }, nil, 0},
			{"write past it", add(1, 6, false), nil, 0},
			{"sync", func(a *Acks[int]) []Written[int] { return a.Synced(6) }, []int{1}, 0},
			{"reset", func(a *Acks[int]) []Written[int] { a.Reset(100); return nil }, nil, 0},
			{"write after it", add(2, 101, false), nil, 0},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var a Acks[int]
			for _, s := range tc.steps {
				got := s.do(&a)
				sameIDs(t, s.name, got, s.want...)
				for _, w := range got {
					if w.Resp.Error != s.failed {
						t.Fatalf("%s: %d answered with %v, want %v", s.name, w.To, w.Resp.Error, s.failed)
					}
					if s.failed != messages.ErrorCode_NONE && w.Resp.BaseOffset != -1 {
						t.Fatalf("%s: a failed answer names offset %d", s.name, w.Resp.BaseOffset)
					}
				}
			}
		})
	}
}

func TestAcksCounts(t *testing.T) {
	var a Acks[int]
	a.Add(written(1, 10, true))
	a.Add(written(2, 10, false))
	if a.Waiting() != 2 || a.Replicating() != 0 {
		t.Fatalf("waiting %d replicating %d, want 2 and 0", a.Waiting(), a.Replicating())
	}
	a.Synced(10)
	if a.Waiting() != 1 || a.Replicating() != 1 || a.Durable() != 10 {
		t.Fatalf("waiting %d replicating %d durable %d, want 1, 1, 10", a.Waiting(), a.Replicating(), a.Durable())
	}
}
