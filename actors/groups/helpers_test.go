package groups

import (
	"slices"
	"testing"
	"time"
)

var t0 = time.Unix(1_700_000_000, 0)

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

// testConfig accepts short session timeouts and has no initial delay, so
// that a join completes as soon as everyone is in.
func testConfig() Config {
	c := DefaultConfig()
	c.MinSessionTimeout = ms(100)
	c.MaxSessionTimeout = time.Minute
	c.InitialRebalanceDelay = 0
	return c
}

type counts map[string]int32

func (c counts) fn() PartitionCounts { return func(t string) int32 { return c[t] } }

// pull is a JoinGroup: 1 s session timeout, 3 s rebalance timeout, range.
func pull(memberID, clientID string, topics ...string) JoinRequest {
	return JoinRequest{
		MemberID: memberID, ClientID: clientID, Topics: topics, Assignors: []string{"range"},
		SessionTimeout: time.Second, RebalanceTimeout: 3 * time.Second, ReplyTo: clientID + "/" + memberID,
	}
}

func pushReq(clientID string, topics ...string) JoinRequest {
	return JoinRequest{ClientID: clientID, Topics: topics, Push: PushTarget{Address: "127.0.0.1:9", ID: clientID}, ReplyTo: clientID}
}

// owners maps every owned partition to its member, failing on a partition
// owned twice.
func owners(t *testing.T, g *Group) map[tp]string {
	t.Helper()
	out := map[tp]string{}
	for _, id := range g.MemberIDs() {
		m, _ := g.Member(id)
		for _, x := range fromAssignment(m.Assignment) {
			if other, dup := out[x]; dup {
				t.Fatalf("%v owned by %s and %s in generation %d", x, other, id, g.Generation())
			}
			out[x] = id
		}
	}
	return out
}

// checkCovers: every partition of every subscribed topic is owned exactly
// once, by a member subscribing to it.
func checkCovers(t *testing.T, g *Group, c counts) {
	t.Helper()
	own := owners(t, g)
	want := 0
	subscribed := map[string]bool{}
	for _, id := range g.MemberIDs() {
		m, _ := g.Member(id)
		for _, topic := range m.Topics {
			subscribed[topic] = true
		}
		for _, x := range fromAssignment(m.Assignment) {
			if !slices.Contains(m.Topics, x.topic) || x.p >= c[x.topic] {
				t.Fatalf("%s owns %v: not subscribed or no such partition", id, x)
			}
		}
	}
	for topic := range subscribed {
		want += int(max(c[topic], 0))
	}
	if len(own) != want {
		t.Fatalf("%d partitions owned, %d to own: %v", len(own), want, own)
	}
}

func replyFor(t *testing.T, out Outcome, memberID string) JoinReply {
	t.Helper()
	for _, r := range out.Replies {
		if r.MemberID == memberID {
			return r
		}
	}
	t.Fatalf("no reply for %s in %+v", memberID, out)
	return JoinReply{}
}

func countOf(a []TopicPartitions) int { return len(fromAssignment(a)) }
