package groups

import (
	"fmt"
	"testing"
	"time"
)

// client is what a consumer knows of its own membership.
type client struct {
	clientID  string
	topics    []string
	assignors []string
	push      bool
	// instance is a static member's group instance id; fenced are the
	// member ids it had before it restarted.
	instance   string
	fenced     []string
	id         string
	generation int32
	assignment []TopicPartitions
	joining    bool    // a join is parked at the coordinator
	ticket     *ticket // that join's ReplyTo
	silent     bool    // stopped heartbeating (a hung process)
	gone       bool    // left for good
}

// ticket is the ReplyTo of one join request.
type ticket struct {
	c        *client
	answered bool
}

// sim is a coordinator actor in miniature: it carries out Outcomes (the
// stored snapshot stands for __consumer_offsets) and delivers join replies.
type sim struct {
	t       *testing.T
	cfg     Config
	g       *Group
	now     time.Time
	counts  counts
	stored  Snapshot
	clients []*client
	// owned[gen] is who owns each partition in a generation, from every
	// Stable observation and every join reply: never two owners.
	owned       map[int32]map[tp]string
	gen         int32
	incarnation int
}

func newSim(t *testing.T, cfg Config, c counts) *sim {
	return &sim{t: t, cfg: cfg, g: New(cfg), now: t0, counts: c, owned: map[int32]map[tp]string{}}
}

func (s *sim) apply(out Outcome) Outcome {
	s.t.Helper()
	if out.Rebalanced && !out.Persist {
		s.t.Fatalf("a new generation without Persist: %+v", out)
	}
	if out.Persist {
		s.stored = s.g.Snapshot()
	}
	for _, id := range out.Removed {
		for _, c := range s.clients {
			if c.id == id && c.push && !c.gone {
				s.t.Fatalf("push member %s removed without Leave: %+v", id, out)
			}
		}
	}
	for _, r := range out.Replies {
		tk := r.ReplyTo.(*ticket)
		if tk.answered {
			s.t.Fatalf("join of %s answered twice: %+v", tk.c.clientID, r)
		}
		tk.answered = true
		c := tk.c
		if tk != c.ticket {
			// A join the client has since replaced.
			if r.Code != RebalanceInProgress && r.Code != FencedInstanceID {
				s.t.Fatalf("superseded join answered %+v", r)
			}
			continue
		}
		c.joining, c.ticket = false, nil
		switch r.Code {
		case None:
			if r.Generation != s.g.Generation() || r.MemberID != c.id {
				s.t.Fatalf("reply %+v to %+v, group at generation %d", r, c, s.g.Generation())
			}
			c.generation, c.assignment = r.Generation, r.Assignment
			s.claim(r.Generation, c.owner(r.MemberID), r.Assignment)
		case UnknownMemberID:
			c.id, c.generation, c.assignment = "", 0, nil
		default:
			s.t.Fatalf("join answered %+v", r)
		}
	}
	s.check()
	return out
}

// owner names the owner of a member's partitions: its instance id for a
// static member, which keeps them across member ids, else the member id.
func (c *client) owner(id string) string {
	if c.instance != "" {
		return "instance " + c.instance
	}
	return id
}

// claim records that member id owns a in generation gen.
func (s *sim) claim(gen int32, id string, a []TopicPartitions) {
	s.t.Helper()
	if s.owned[gen] == nil {
		s.owned[gen] = map[tp]string{}
	}
	for _, x := range fromAssignment(a) {
		if was, ok := s.owned[gen][x]; ok && was != id {
			s.t.Fatalf("%v owned by %s and %s in generation %d", x, was, id, gen)
		}
		s.owned[gen][x] = id
	}
}

// check asserts the invariants that hold after every step.
func (s *sim) check() {
	s.t.Helper()
	if s.g.Generation() < s.gen {
		s.t.Fatalf("generation went back from %d to %d", s.gen, s.g.Generation())
	}
	s.gen = s.g.Generation()
	owners(s.t, s.g)
	if s.g.State() == Stable {
		checkCovers(s.t, s.g, s.counts)
		for _, id := range s.g.MemberIDs() {
			m, _ := s.g.Member(id)
			owner := id
			if m.InstanceID != "" {
				owner = "instance " + m.InstanceID
			}
			s.claim(s.g.Generation(), owner, m.Assignment)
		}
		for _, c := range s.clients {
			if c.joining {
				s.t.Fatalf("Stable with the join of %+v parked", c)
			}
		}
	}
	if (s.g.State() == Empty) != (len(s.g.MemberIDs()) == 0) {
		s.t.Fatalf("state %v with members %v", s.g.State(), s.g.MemberIDs())
	}
	// A static member's ids from before its restarts are fenced.
	for _, c := range s.clients {
		for _, old := range c.fenced {
			_, code := s.g.Instance(old, c.instance)
			if commit := s.g.CommitCheck(old, c.generation); code == None || commit == None {
				s.t.Fatalf("%s, replaced by %+v, is not fenced: instance %v, commit %v, group %+v", old, c, code, commit, s.g.Describe())
			}
		}
	}
	// A client that is not a member, or that holds an old generation, can
	// neither heartbeat nor commit.
	for _, c := range s.clients {
		_, member := s.g.Member(c.id)
		if c.id != "" && (!member || c.generation != s.g.Generation()) {
			if code := s.g.CommitCheck(c.id, c.generation); code == None {
				s.t.Fatalf("stale %+v may commit at generation %d", c, s.g.Generation())
			}
		}
	}
}

func (s *sim) join(c *client) Outcome {
	s.t.Helper()
	req := JoinRequest{
		MemberID: c.id, ClientID: c.clientID, Topics: c.topics, Assignors: c.assignors,
		SessionTimeout: time.Second, RebalanceTimeout: 2 * time.Second, InstanceID: c.instance,
	}
	if c.push {
		req.Push = PushTarget{Address: "addr", ID: c.clientID}
	}
	tk := &ticket{c: c}
	req.ReplyTo = tk
	out := s.g.Join(req, s.now, s.counts.fn())
	switch out.Code {
	case None:
		c.id, c.joining, c.ticket = out.MemberID, true, tk
	case MemberIDRequired:
		c.id = out.MemberID
	case UnknownMemberID:
		c.id, c.generation, c.assignment = "", 0, nil
	case InconsistentGroupProtocol, FencedInstanceID:
		c.gone = true // a consumer gives up: it cannot be in this group
	}
	return s.apply(out)
}

// restart is a static member's process restarting: it rejoins under its
// instance id with no member id, which fences the one it had.
func (s *sim) restart(c *client) {
	s.t.Helper()
	if c.id != "" {
		c.fenced = append(c.fenced, c.id)
	}
	c.id, c.generation, c.assignment, c.joining, c.ticket = "", 0, nil, false, nil
	s.join(c)
}

// heartbeat is a client's heartbeat and its reaction to the answer.
func (s *sim) heartbeat(c *client) {
	s.t.Helper()
	if c.gone || c.silent || c.joining || c.push {
		return
	}
	if c.id == "" || c.generation == 0 {
		s.join(c)
		return
	}
	_, code := s.g.Instance(c.id, c.instance)
	if code == None {
		code = s.g.Heartbeat(c.id, c.generation, s.now)
	}
	switch code {
	case FencedInstanceID:
		c.gone = true
	case None:
		if _, ok := s.g.Member(c.id); !ok {
			s.t.Fatalf("heartbeat of non-member %+v accepted", c)
		}
	case RebalanceInProgress, IllegalGeneration:
		s.join(c)
	case UnknownMemberID:
		c.id, c.generation, c.assignment = "", 0, nil
		s.join(c)
	}
}

func (s *sim) tick(d time.Duration) Outcome {
	s.t.Helper()
	s.now = s.now.Add(d)
	return s.apply(s.g.Tick(s.now, s.counts.fn()))
}

// failover restores the group from what was persisted; parked joins die
// with the old coordinator and their clients retry.
func (s *sim) failover() {
	s.t.Helper()
	s.incarnation++
	inc := s.incarnation
	cfg := s.cfg
	// Unique per coordinator, as Config.NewMemberID advises.
	cfg.NewMemberID = func(client string, seq uint64) string { return fmt.Sprintf("%s-i%d-%d", client, inc, seq) }
	s.cfg = cfg
	s.g = Restore(cfg, s.stored, s.now, s.counts.fn())
	for _, c := range s.clients {
		c.joining, c.ticket = false, nil
	}
	s.check()
}
