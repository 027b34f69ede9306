package groups

import (
	"slices"
	"testing"
)

// staticJoin is kafkaJoin with a group instance id.
func staticJoin(memberID, instanceID string, protocols ...string) JoinRequest {
	req := kafkaJoin(memberID, instanceID, protocols...)
	req.InstanceID = instanceID
	req.RequireMemberID = true
	return req
}

// staticGroup has static relay members of instances "a" (the leader, a-1)
// and "b" (b-2), Stable at generation 1 with assignments A and B.
func staticGroup(t *testing.T) *Group {
	t.Helper()
	g := New(testConfig())
	c := counts{}.fn()
	// Static members need no MEMBER_ID_REQUIRED round, even when asked for.
	if out := g.Join(staticJoin("", "a", "range"), t0, c); out.Code != None || out.MemberID != "a-1" {
		t.Fatalf("first static join: %+v", out)
	}
	out := g.Join(staticJoin("", "b", "range"), t0, c)
	if g.State() != PreparingRebalance || out.Code != None {
		t.Fatalf("second static join: %+v, state %v", out, g.State())
	}
	out = g.Join(staticJoin("a-1", "a", "range"), t0, c)
	if g.State() != CompletingRebalance || len(out.Replies) != 2 {
		t.Fatalf("setup: %+v, state %v", out, g.State())
	}
	g.SyncRelay("a-1", g.Generation(), map[string][]byte{"a-1": []byte("A"), "b-2": []byte("B")}, "a-sync", t0)
	if g.State() != Stable {
		t.Fatalf("setup: state %v", g.State())
	}
	return g
}

// A static member that restarts rejoins with an empty member id: it takes
// over its old member and assignment at once, the group does not
// rebalance, and the old member id is fenced.
func TestStaticMemberRejoinsWithoutRebalance(t *testing.T) {
	g := staticGroup(t)
	gen := g.Generation()
	out := g.Join(staticJoin("", "a", "range"), t0.Add(ms(500)), counts{}.fn())
	if out.Code != None || !out.Persist || len(out.Replies) != 1 || out.Rebalanced {
		t.Fatalf("rejoin: %+v", out)
	}
	r := out.Replies[0]
	if r.MemberID == "a-1" || r.MemberID != out.MemberID || r.Generation != gen || r.Protocol != "range" || r.ReplyTo != "a/" {
		t.Fatalf("rejoin reply: %+v", r)
	}
	// The leader's new id is not told it leads: it must not assign again.
	if r.LeaderID != "a-1" || r.MemberMetadata != nil {
		t.Fatalf("rejoin reply names leader %q with metadata %v", r.LeaderID, r.MemberMetadata)
	}
	if g.State() != Stable || g.Generation() != gen || g.Describe().Leader != r.MemberID {
		t.Fatalf("after the rejoin: %v generation %d leader %q", g.State(), g.Generation(), g.Describe().Leader)
	}
	if sync := g.SyncRelay(r.MemberID, gen, nil, "s", t0); string(sync.SyncReplies[0].Assignment) != "A" {
		t.Fatalf("the new member id's assignment: %+v", sync)
	}
	if _, code := g.Instance("a-1", "a"); code != FencedInstanceID {
		t.Errorf("the old member id with its instance id: %v", code)
	}
	if out := g.Join(staticJoin("a-1", "a", "range"), t0, counts{}.fn()); out.Code != FencedInstanceID {
		t.Errorf("a join of the old member id: %v", out.Code)
	}
	if _, code := g.Instance(r.MemberID, "a"); code != None {
		t.Errorf("the new member id: %v", code)
	}
	if _, code := g.Instance("b-2", "nobody"); code != UnknownMemberID {
		t.Errorf("an unknown instance id: %v", code)
	}
	if out := g.Join(staticJoin("x-9", "nobody", "range"), t0, counts{}.fn()); out.Code != UnknownMemberID {
		t.Errorf("a member id under an unknown instance id: %v", out.Code)
	}
	// Persisted and restored, the instance keeps its member.
	s := Restore(testConfig(), g.Snapshot(), t0, counts{}.fn())
	if id, code := s.Instance("", "a"); code != None || id != r.MemberID {
		t.Errorf("restored instance a: %q %v", id, code)
	}
	// LeaveGroup by instance id alone removes the member and rebalances.
	id, code := s.Instance("", "b")
	if code != None || id != "b-2" {
		t.Fatalf("instance b: %q %v", id, code)
	}
	if out := s.Leave(id, t0, counts{}.fn()); out.Code != None || !slices.Equal(out.Removed, []string{"b-2"}) || s.State() != PreparingRebalance {
		t.Fatalf("leave by instance: %+v, state %v", out, s.State())
	}
	if _, code := s.Instance("", "b"); code != UnknownMemberID {
		t.Errorf("instance b after it left: %v", code)
	}
}

// A rejoin that changes the protocol the group would vote for, or that
// comes while the leader's sync is awaited, rebalances; a sync parked under
// the old member id is answered FENCED_INSTANCE_ID.
func TestStaticMemberRejoinThatRebalances(t *testing.T) {
	g := staticGroup(t)
	gen := g.Generation()
	out := g.Join(staticJoin("", "a", "roundrobin", "range"), t0, counts{}.fn())
	if out.Code != None || g.State() != Stable {
		t.Fatalf("a rejoin preferring another protocol that b lacks keeps the vote: %+v %v", out, g.State())
	}
	out = g.Join(staticJoin("", "b", "roundrobin", "range"), t0, counts{}.fn())
	if out.Code != None || len(out.Replies) != 0 || g.State() != PreparingRebalance {
		t.Fatalf("a rejoin that turns the vote: %+v %v", out, g.State())
	}
	if g.Generation() != gen {
		t.Fatalf("generation moved before the rebalance completed: %d", g.Generation())
	}

	g = staticGroup(t)
	g.Join(kafkaJoin("b-2", "b", "range"), t0, counts{}.fn()) // b rejoins: a rebalance
	a, _ := g.Instance("", "a")
	out = g.Join(staticJoin(a, "a", "range"), t0, counts{}.fn())
	if g.State() != CompletingRebalance || len(out.Replies) != 2 {
		t.Fatalf("setup: %+v, state %v", out, g.State())
	}
	g.SyncRelay("b-2", g.Generation(), nil, "b-sync", t0)
	out = g.Join(staticJoin("", "b", "range"), t0, counts{}.fn())
	if g.State() != PreparingRebalance {
		t.Fatalf("a static rejoin while completing: state %v", g.State())
	}
	if len(out.SyncReplies) != 1 || out.SyncReplies[0].ReplyTo != "b-sync" || out.SyncReplies[0].Code != FencedInstanceID {
		t.Fatalf("the old member id's parked sync: %+v", out.SyncReplies)
	}
}

// A static member silent past its session timeout is evicted like any
// other; its instance id is then free and a join under it is a new member.
func TestStaticMemberSessionTimeout(t *testing.T) {
	g := staticGroup(t)
	g.Heartbeat("b-2", g.Generation(), t0.Add(ms(900)))
	out := g.Tick(t0.Add(ms(1500)), counts{}.fn())
	if !slices.Equal(out.Removed, []string{"a-1"}) {
		t.Fatalf("eviction: %+v", out)
	}
	if _, code := g.Instance("", "a"); code != UnknownMemberID {
		t.Fatalf("instance a after its eviction: %v", code)
	}
	out = g.Join(staticJoin("", "a", "range"), t0.Add(ms(1500)), counts{}.fn())
	if out.Code != None || out.MemberID == "a-1" || len(out.Replies) != 0 {
		t.Fatalf("a join under the freed instance id: %+v", out)
	}
}

// Coordinator-assigned members may be static too: the rejoin keeps the
// assignment the coordinator computed.
func TestStaticMemberOfACoordinatorAssignedGroup(t *testing.T) {
	g := New(testConfig())
	c := counts{"t": 4}.fn()
	join := func(id, inst string) Outcome {
		req := pull(id, inst, "t")
		req.InstanceID = inst
		return g.Join(req, t0, c)
	}
	join("", "p")
	join("", "q")
	join("p-1", "p")
	if g.State() != Stable {
		t.Fatalf("setup: %v", g.State())
	}
	before, _ := g.Member("q-2")
	out := join("", "q")
	if len(out.Replies) != 1 || out.Replies[0].Protocol != "" || !equalAssignment(out.Replies[0].Assignment, before.Assignment) || g.State() != Stable {
		t.Fatalf("rejoin: %+v, state %v", out, g.State())
	}
}
