package groups

import (
	"slices"
	"testing"
	"time"
)

// kafkaJoin is a relay member's JoinGroup with protocols (name, metadata).
func kafkaJoin(memberID, clientID string, protocols ...string) JoinRequest {
	req := JoinRequest{MemberID: memberID, ClientID: clientID, ProtocolType: "consumer",
		SessionTimeout: time.Second, RebalanceTimeout: 3 * time.Second, ReplyTo: clientID + "/" + memberID}
	for _, p := range protocols {
		req.Protocols = append(req.Protocols, Protocol{Name: p, Metadata: []byte(clientID + ":" + p)})
	}
	return req
}

// relayGroup has relay members a-1 and b-2 at generation 2, waiting for
// the leader's sync; it returns the JoinReplies of generation 2.
func relayGroup(t *testing.T) (*Group, map[string]JoinReply) {
	t.Helper()
	g := New(testConfig())
	c := counts{}
	g.Join(kafkaJoin("", "a", "cooperative-sticky", "range"), t0, c.fn())
	g.Join(kafkaJoin("", "b", "range", "cooperative-sticky"), t0, c.fn())
	out := g.Join(kafkaJoin("a-1", "a", "cooperative-sticky", "range"), t0, c.fn())
	if g.State() != CompletingRebalance || g.Generation() != 2 || len(out.Replies) != 2 || out.Persist {
		t.Fatalf("setup: state %v generation %d outcome %+v", g.State(), g.Generation(), out)
	}
	replies := map[string]JoinReply{}
	for _, r := range out.Replies {
		replies[r.MemberID] = r
	}
	return g, replies
}

// The leader gets every member's metadata for the protocol voted for;
// others' syncs wait for the leader's, which hands out its assignments.
func TestRelayGroupRelaysAssignments(t *testing.T) {
	g, replies := relayGroup(t)
	leader := replies["a-1"]
	want := []MemberMetadata{{"a-1", []byte("a:cooperative-sticky")}, {"b-2", []byte("b:cooperative-sticky")}}
	if leader.LeaderID != "a-1" || leader.Protocol != "cooperative-sticky" ||
		!slices.EqualFunc(leader.MemberMetadata, want, func(x, y MemberMetadata) bool {
			return x.MemberID == y.MemberID && string(x.Metadata) == string(y.Metadata)
		}) {
		t.Fatalf("leader's reply %+v", leader)
	}
	if follower := replies["b-2"]; follower.MemberMetadata != nil || follower.Protocol != "cooperative-sticky" {
		t.Fatalf("follower's reply %+v", follower)
	}
	if code := g.Heartbeat("b-2", 2, t0); code != None {
		t.Fatalf("heartbeat while completing: %v", code)
	}
	if out := g.SyncRelay("b-2", 2, nil, "b-sync", t0); len(out.SyncReplies) != 0 || out.Persist {
		t.Fatalf("the follower's sync was answered before the leader's: %+v", out)
	}
	out := g.SyncRelay("a-1", 2, map[string][]byte{"a-1": []byte("A"), "b-2": []byte("B")}, "a-sync", t0)
	if !out.Persist || g.State() != Stable || len(out.SyncReplies) != 2 {
		t.Fatalf("the leader's sync: %+v, state %v", out, g.State())
	}
	got := map[any]string{}
	for _, r := range out.SyncReplies {
		got[r.ReplyTo] = string(r.Assignment)
	}
	if got["a-sync"] != "A" || got["b-sync"] != "B" {
		t.Fatalf("sync answers %v", got)
	}
	// A later sync of the same generation gets the stored assignment.
	if out := g.SyncRelay("b-2", 2, nil, "again", t0); len(out.SyncReplies) != 1 || string(out.SyncReplies[0].Assignment) != "B" {
		t.Fatalf("sync in Stable: %+v", out)
	}
	// Persisted and restored, the assignments stay.
	r := Restore(testConfig(), g.Snapshot(), t0, counts{}.fn())
	if r.State() != Stable || r.ProtocolType() != "consumer" {
		t.Fatalf("restored: %v %q", r.State(), r.ProtocolType())
	}
	if out := r.SyncRelay("b-2", 2, nil, "x", t0); string(out.SyncReplies[0].Assignment) != "B" {
		t.Fatalf("restored sync: %+v", out)
	}
}

// A rebalance that starts while syncs wait answers them
// REBALANCE_IN_PROGRESS; a member that leaves gets UNKNOWN_MEMBER_ID.
func TestRelayParkedSyncsAnsweredOnRebalance(t *testing.T) {
	g, _ := relayGroup(t)
	g.SyncRelay("b-2", 2, nil, "b-sync", t0)
	out := g.Join(kafkaJoin("", "c", "range"), t0, counts{}.fn())
	if len(out.SyncReplies) != 1 || out.SyncReplies[0].ReplyTo != "b-sync" || out.SyncReplies[0].Code != RebalanceInProgress {
		t.Fatalf("a join while a sync waits: %+v", out)
	}
	if out := g.SyncRelay("a-1", 2, nil, "late", t0); out.SyncReplies[0].Code != RebalanceInProgress {
		t.Fatalf("sync while preparing: %+v", out)
	}

	g, _ = relayGroup(t)
	g.SyncRelay("b-2", 2, nil, "b-sync", t0)
	out = g.Leave("b-2", t0, counts{}.fn())
	if len(out.SyncReplies) != 1 || out.SyncReplies[0].Code != UnknownMemberID {
		t.Fatalf("leave with a parked sync: %+v", out)
	}
	// A member that does not sync is evicted after its session timeout.
	g, _ = relayGroup(t)
	g.Heartbeat("a-1", 2, t0.Add(900*time.Millisecond))
	out = g.Tick(t0.Add(1500*time.Millisecond), counts{}.fn())
	if !slices.Equal(out.Removed, []string{"b-2"}) || g.State() != PreparingRebalance {
		t.Fatalf("silent member: %+v, state %v", out, g.State())
	}
}

// A group holds one kind of member: a relay member cannot join a group the
// coordinator assigns, nor the other way round, nor without a common
// protocol; errors come before anything changes.
func TestRelayGroupKinds(t *testing.T) {
	g, _ := relayGroup(t)
	if out := g.Join(pull("", "sluice", "t"), t0, counts{"t": 2}.fn()); out.Code != InconsistentGroupProtocol {
		t.Errorf("a coordinator-assigned member joining a relay group: %v", out.Code)
	}
	if out := g.Join(kafkaJoin("", "x", "roundrobin"), t0, counts{}.fn()); out.Code != InconsistentGroupProtocol {
		t.Errorf("no protocol in common: %v", out.Code)
	}
	if out := g.Join(kafkaJoin("", "x"), t0, counts{}.fn()); out.Code != InconsistentGroupProtocol {
		t.Errorf("no protocol at all: %v", out.Code)
	}
	s, _ := stable(t)
	if out := s.Join(kafkaJoin("", "k", "range"), t0, counts{"t": 4}.fn()); out.Code != InconsistentGroupProtocol {
		t.Errorf("a relay member joining a coordinator-assigned group: %v", out.Code)
	}
	if out := s.SyncRelay("a-1", 2, nil, "x", t0); out.SyncReplies[0].Code != InconsistentGroupProtocol {
		t.Errorf("SyncRelay on a coordinator-assigned group: %+v", out)
	}
	// Once empty, a group takes either kind again.
	for _, id := range g.MemberIDs() {
		g.Leave(id, t0, counts{}.fn())
	}
	if out := g.Join(pull("", "sluice", "t"), t0, counts{"t": 2}.fn()); out.Code != None {
		t.Errorf("an emptied relay group refused a coordinator-assigned member: %v", out.Code)
	}
}

// A member that leaves while the group waits for its leader's sync is
// persisted gone, in a snapshot of a generation without assignments: a
// coordinator restored from it rebalances instead of handing the members
// empty assignments.
func TestRelayRestoreWithoutAssignmentsRebalances(t *testing.T) {
	g, _ := relayGroup(t)
	out := g.Leave("b-2", t0, counts{}.fn())
	if !out.Persist {
		t.Fatalf("leave: %+v", out)
	}
	r := Restore(testConfig(), g.Snapshot(), t0, counts{}.fn())
	if r.State() != PreparingRebalance {
		t.Fatalf("restored without assignments: %v", r.State())
	}
	if code := r.Heartbeat("a-1", r.Generation(), t0); code != RebalanceInProgress {
		t.Fatalf("heartbeat after the restore: %v", code)
	}
}
