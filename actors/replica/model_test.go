package replica

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/sluicemq/sluice/messages"
)

// A randomized run of a leader's produce path against what must hold
// whatever the order of events: a request is answered once; with success
// only once its batch is durable and, with acks=all, below the HW; timed
// out only with acks=all, after its deadline and once on disk; and once
// everything is synced and replicated nothing waits.
func TestAcksModel(t *testing.T) {
	for seed := uint64(0); seed < 200; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		var a Acks[int]
		var (
			leo, durable, hw int64
			now              = t0
			written          = map[int]Written[int]{}
			answered         = map[int]bool{}
			lastNext         []int64 // the Next of every batch written, for retries
		)
		check := func(op string, out []Written[int]) {
			for _, w := range out {
				if answered[w.To] {
					t.Fatalf("seed %d %s: request %d answered twice", seed, op, w.To)
				}
				answered[w.To] = true
				switch w.Resp.Error {
				case messages.ErrorCode_NONE:
					if w.Next > durable {
						t.Fatalf("seed %d %s: request %d acknowledged at %d with the log durable to %d", seed, op, w.To, w.Next, durable)
					}
					if w.AcksAll && w.Next > hw {
						t.Fatalf("seed %d %s: acks=all request %d acknowledged at %d with the HW at %d", seed, op, w.To, w.Next, hw)
					}
				case messages.ErrorCode_REQUEST_TIMED_OUT:
					if !w.AcksAll || !now.After(w.Deadline) || w.Next > durable {
						t.Fatalf("seed %d %s: request %d timed out (acks=all %v, deadline %v, now %v, next %d, durable %d)",
							seed, op, w.To, w.AcksAll, w.Deadline, now, w.Next, durable)
					}
				case messages.ErrorCode_STORAGE_ERROR, messages.ErrorCode_NOT_LEADER:
				default:
					t.Fatalf("seed %d %s: request %d answered with %v", seed, op, w.To, w.Resp.Error)
				}
			}
		}
		for i := 0; i < 300; i++ {
			switch op := rng.IntN(10); {
			case op < 4: // a request written, or a retry of a written batch
				id := len(written)
				next := leo + 1 + rng.Int64N(5)
				if len(lastNext) > 0 && rng.IntN(4) == 0 {
					next = lastNext[rng.IntN(len(lastNext))]
				} else {
					leo = next
					lastNext = append(lastNext, next)
				}
				w := Written[int]{To: id, Resp: &messages.ProduceResponse{}, Next: next, AcksAll: rng.IntN(2) == 0,
					Deadline: now.Add(time.Duration(rng.IntN(1000)) * time.Millisecond)}
				written[id] = w
				check("add", a.Add(w))
			case op < 6: // an fsync ends, of everything written when it began
				durable = max(durable, durable+rng.Int64N(leo-durable+1))
				check("synced", a.Synced(durable))
			case op < 8: // followers catch up: the HW moves, never past the durable end
				hw = max(hw, hw+rng.Int64N(durable-hw+1))
				check("hw", a.HWAdvanced(hw))
			case op < 9:
				now = now.Add(time.Duration(rng.IntN(300)) * time.Millisecond)
				check("tick", a.Expired(now))
			default:
				if rng.IntN(8) == 0 { // an fsync fails: what waits for one cannot be acknowledged
					check("sync failed", a.SyncFailed("io"))
				}
			}
		}
		// Everything synced and replicated: nothing may still wait.
		durable, hw = leo, leo
		check("final sync", a.Synced(leo))
		check("final hw", a.HWAdvanced(leo))
		if a.Waiting() != 0 {
			t.Fatalf("seed %d: %d requests still wait with everything synced and replicated", seed, a.Waiting())
		}
		check("abandon", a.Abandon(messages.ErrorCode_NOT_LEADER, "done"))
		for id := range written {
			if !answered[id] {
				t.Fatalf("seed %d: request %d never answered", seed, id)
			}
		}
	}
}
