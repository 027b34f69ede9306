package consumergroup

import (
	"reflect"
	"testing"
	"time"
)

// A group restored from its snapshot mid-rebalance goes on as if nothing
// happened: same description, members keep their epochs, the one revoking
// finishes, and no partition is held twice.
func TestRestoreGoesOn(t *testing.T) {
	ts := topics{"a": 4, "b": 2}
	cat := ts.catalog()
	g := New(testConfig())
	a, b := newClient("A", "a"), newClient("B", "a", "b")
	a.slow = true
	r := newClient("R")
	r.regex = "b"
	a.join(t, g, t0, cat)
	b.join(t, g, t0, cat)
	r.join(t, g, t0, cat)
	a.beat(t, g, t0, cat) // told to revoke, still holding
	if len(a.pending) == 0 {
		t.Fatal("A was not asked to revoke")
	}
	if c, _ := g.CommitCheck("A", a.epoch, nil); c != None {
		t.Fatalf("commit before: %s", c)
	}
	before := g.Describe()
	snap := g.Snapshot()
	now := t0.Add(time.Minute)
	g2 := Restore(testConfig(), snap, now, cat)
	if after := g2.Describe(); !reflect.DeepEqual(before, after) {
		t.Fatalf("restored:\n%+v\nwas:\n%+v", after, before)
	}
	if !reflect.DeepEqual(g2.Snapshot(), snap) {
		t.Fatalf("snapshot of the restored group differs")
	}
	// Sessions start again at the restore: nobody is removed at once.
	if out := g2.Tick(now, cat); len(out.Removed) != 0 || out.EpochBumped {
		t.Fatalf("tick after restore: %+v", out)
	}
	if r := b.keepalive(t, g2, now, cat); r.Code != None {
		t.Fatalf("B after restore: %+v", r)
	}
	a.revoke()
	settle(t, g2, now, cat, a, b, r)
	if len(a.owned)+len(b.owned)+len(r.owned) != 6 {
		t.Fatalf("owned %v %v %v", a.owned, b.owned, r.owned)
	}
}

// Changes moves with what a snapshot holds and not with keepalives.
func TestChangesCountsWhatIsPersisted(t *testing.T) {
	cat := topics{"a": 2}.catalog()
	g := New(testConfig())
	a := newClient("A", "a")
	a.join(t, g, t0, cat)
	n := g.Changes()
	if n == 0 {
		t.Fatal("a join changed nothing")
	}
	a.keepalive(t, g, t0.Add(time.Second), cat)
	a.beat(t, g, t0.Add(2*time.Second), cat)
	g.Tick(t0.Add(3*time.Second), cat)
	if g.Changes() != n {
		t.Fatalf("heartbeats without news changed %d times", g.Changes()-n)
	}
	b := newClient("B", "a")
	b.join(t, g, t0, cat)
	if g.Changes() == n {
		t.Fatal("a second member changed nothing")
	}
	n = g.Changes()
	a.beat(t, g, t0, cat) // told to revoke
	if g.Changes() == n {
		t.Fatal("a revocation changed nothing")
	}
}
