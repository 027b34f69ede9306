package consumergroup

import (
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/sluicemq/sluice/actors/groups"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// topics is a catalog backed by a map the test changes.
type topics map[string]int32

func (ts topics) catalog() Catalog {
	return Catalog{Partitions: func(t string) int32 { return ts[t] },
		Topics: func() []string { return slices.Sorted(maps.Keys(ts)) }}
}

func testConfig() Config {
	c := DefaultConfig()
	c.RegexRefresh = time.Second
	return c
}

// client is a member as a well-behaved consumer runs it: it holds what
// the coordinator assigned, gives up what it is no longer assigned (at
// once, or when told to), and reports what it owns.
type client struct {
	id        string
	epoch     int32
	owned     set
	topics    []string
	regex     string
	principal string
	// slow: the client does not give up partitions until revoke() is
	// called (a long onPartitionsRevoked).
	slow    bool
	pending set
	// lost: an answer did not arrive, so the next heartbeat is full.
	lost bool
}

func newClient(id string, topics ...string) *client {
	return &client{id: id, owned: set{}, topics: topics}
}

// join sends the first heartbeat.
func (c *client) join(t *testing.T, g *Group, now time.Time, cat Catalog) Reply {
	t.Helper()
	c.epoch, c.owned = 0, set{}
	h := Heartbeat{MemberID: c.id, MemberEpoch: 0, RebalanceTimeout: time.Minute, OwnedSet: true, Principal: c.principal}
	if c.regex != "" {
		h.Regex, h.RegexSet = c.regex, true
	} else {
		h.Topics, h.TopicsSet = c.topics, true
	}
	return c.apply(t, g.Heartbeat(h, now, cat))
}

// beat reports what the client owns, as clients do after a change; after
// a lost answer it sends everything, and after being fenced it rejoins.
func (c *client) beat(t *testing.T, g *Group, now time.Time, cat Catalog) Reply {
	t.Helper()
	if c.epoch == 0 {
		return c.join(t, g, now, cat)
	}
	h := Heartbeat{MemberID: c.id, MemberEpoch: c.epoch, RebalanceTimeout: -1, Owned: c.owned.list(), OwnedSet: true, Principal: c.principal}
	if c.lost {
		h.RebalanceTimeout, h.Topics, h.TopicsSet, c.lost = time.Minute, c.topics, true, false
	}
	return c.apply(t, g.Heartbeat(h, now, cat))
}

// keepalive sends a heartbeat with nothing but the member and epoch.
func (c *client) keepalive(t *testing.T, g *Group, now time.Time, cat Catalog) Reply {
	t.Helper()
	return c.apply(t, g.Heartbeat(Heartbeat{MemberID: c.id, MemberEpoch: c.epoch, RebalanceTimeout: -1, Principal: c.principal}, now, cat))
}

func (c *client) apply(t *testing.T, r Reply) Reply {
	t.Helper()
	if r.Code != None {
		if r.Code == UnknownMemberID || r.Code == FencedMemberEpoch {
			c.owned, c.epoch, c.pending = set{}, 0, nil
		}
		return r
	}
	c.epoch = r.MemberEpoch
	if r.HasAssignment {
		next := setOf(r.Assignment)
		gone := c.owned.minus(next)
		for x := range next {
			c.owned[x] = struct{}{}
		}
		if c.slow {
			c.pending = gone
		} else {
			for x := range gone {
				delete(c.owned, x)
			}
		}
	}
	return r
}

// revoke gives up what a slow client was holding on to.
func (c *client) revoke() {
	for x := range c.pending {
		delete(c.owned, x)
	}
	c.pending = nil
}

func assignment(s ...any) []groups.TopicPartitions {
	var out []groups.TopicPartitions
	for i := 0; i < len(s); i += 2 {
		out = append(out, groups.TopicPartitions{Topic: s[i].(string), Partitions: s[i+1].([]int32)})
	}
	return out
}

// disjoint fails the test if two clients still in the group own the same
// partition.
func disjoint(t *testing.T, g *Group, cs ...*client) {
	t.Helper()
	by := map[tp]string{}
	for _, c := range cs {
		if !g.Has(c.id) {
			continue
		}
		for x := range c.owned {
			if other, ok := by[x]; ok {
				t.Fatalf("%s-%d owned by %s and %s", x.topic, x.p, other, c.id)
			}
			by[x] = c.id
		}
	}
}

// heldOnce fails the test if the coordinator has a partition held (assigned
// or being revoked) by two members.
func heldOnce(t *testing.T, g *Group) {
	t.Helper()
	held := map[tp]string{}
	for _, m := range g.Describe().Members {
		for x := range setOf(m.Assignment) {
			if other, ok := held[x]; ok {
				t.Fatalf("coordinator: %s-%d held by %s and %s", x.topic, x.p, other, m.MemberID)
			}
			held[x] = m.MemberID
		}
	}
}
