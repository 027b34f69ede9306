package consumergroup

import (
	"maps"
	"slices"
	"time"

	"github.com/sluicemq/sluice/actors/groups"
)

// Snapshot is what a coordinator persists of a group, so that the next
// coordinator goes on where it stopped: members keep their epochs and
// partitions and are not fenced by a failover.
type Snapshot struct {
	Epoch, AssignmentEpoch int32
	Assignor               string
	Members                []MemberSnapshot // sorted by id
	// Counts are the subscribed topics' partition counts the target was
	// computed from.
	Counts map[string]int32
}

// MemberSnapshot is one member of a Snapshot.
type MemberSnapshot struct {
	MemberID, InstanceID, RackID, ClientID, ClientHost string
	Epoch, PreviousEpoch                               int32
	State                                              MemberState
	Topics                                             []string
	Regex, Assignor                                    string
	// Principal is who last heartbeated as the member: its regular
	// expression matches the topics that principal may describe.
	Principal                  string
	RebalanceTimeout           time.Duration
	Assigned, Revoking, Target []groups.TopicPartitions
	// Since gives, for each partition of Assigned in order, the epoch since
	// which the member has held it.
	Since   []int32
	Leaving bool
}

// Changes counts the changes to what a Snapshot holds: when it moved since
// the last write, the group is to be written again.
func (g *Group) Changes() uint64 { return g.changes }

// Snapshot returns the group's persistent state.
func (g *Group) Snapshot() Snapshot {
	s := Snapshot{Epoch: g.epoch, AssignmentEpoch: g.assignmentEpoch, Assignor: g.assignor, Counts: maps.Clone(g.counts)}
	for _, id := range g.MemberIDs() {
		m := g.members[id]
		ms := MemberSnapshot{MemberID: id, InstanceID: m.instanceID, RackID: m.rackID, ClientID: m.clientID,
			ClientHost: m.clientHost, Epoch: m.epoch, PreviousEpoch: m.previousEpoch, State: m.state,
			Topics: slices.Clone(m.topics), Regex: m.regex, Assignor: m.assignor, Principal: m.principal, RebalanceTimeout: m.rebalanceTimeout,
			Assigned: m.assigned.list(), Revoking: m.revoking.list(), Target: g.target[id].list(), Leaving: m.leaving}
		for _, tps := range ms.Assigned {
			for _, p := range tps.Partitions {
				ms.Since = append(ms.Since, m.since[tp{tps.Topic, p}])
			}
		}
		s.Members = append(s.Members, ms)
	}
	return s
}

// Restore rebuilds a group from its Snapshot. Members' sessions and
// revocation deadlines start again at now, as after any failover.
func Restore(cfg Config, s Snapshot, now time.Time, cat Catalog) *Group {
	g := New(cfg)
	g.epoch, g.assignmentEpoch, g.assignor = s.Epoch, s.AssignmentEpoch, s.Assignor
	if s.Counts != nil {
		g.counts = maps.Clone(s.Counts)
	}
	for _, ms := range s.Members {
		m := &member{id: ms.MemberID, instanceID: ms.InstanceID, rackID: ms.RackID, clientID: ms.ClientID,
			clientHost: ms.ClientHost, epoch: ms.Epoch, previousEpoch: ms.PreviousEpoch, state: ms.State,
			topics: slices.Clone(ms.Topics), regex: ms.Regex, assignor: ms.Assignor, principal: ms.Principal, rebalanceTimeout: ms.RebalanceTimeout,
			assigned: setOf(ms.Assigned), revoking: setOf(ms.Revoking), since: map[tp]int32{}, lastSeen: now, leaving: ms.Leaving}
		i := 0
		for _, tps := range ms.Assigned {
			for _, p := range tps.Partitions {
				if i < len(ms.Since) {
					m.since[tp{tps.Topic, p}] = ms.Since[i]
				}
				i++
			}
		}
		if m.state == UnrevokedPartitions {
			timeout := m.rebalanceTimeout
			if timeout <= 0 {
				timeout = cfg.SessionTimeout
			}
			m.revokeBy = now.Add(timeout)
		}
		g.members[m.id] = m
		g.target[m.id] = setOf(ms.Target)
		if m.instanceID != "" {
			g.statics[m.instanceID] = m.id
		}
		for x := range m.assigned {
			g.owner[x] = m.id
		}
		for x := range m.revoking {
			g.owner[x] = m.id
		}
		if k := m.regexKey(); m.regex != "" && g.regexes[k] == nil {
			if re, err := compile(m.regex); err == nil {
				g.regexes[k] = re
				g.matches[k] = matching(re, k.principal, cat)
			}
		}
	}
	g.regexAt = now
	return g
}
