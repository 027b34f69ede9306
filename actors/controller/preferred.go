package controller

import (
	"cmp"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/sluicemq/sluice/actors"
	"github.com/sluicemq/sluice/actors/election"
	"github.com/sluicemq/sluice/cluster"
	"github.com/sluicemq/sluice/messages"
)

// Leader balancing: after a broker restarts, the partitions it led are
// led by others, and without help the leaders pile up on the brokers that
// stayed up. Every LeaderImbalanceCheckInterval the controller gives
// leadership back to the preferred replicas of the brokers that lead too
// few of theirs, as Kafka's auto.leader.rebalance.enable does.

// checkImbalance asks the controller to balance leaders. gen names the
// controller run that scheduled it: a controller started again under the
// same name keeps its own schedule and ignores an older one's.
type checkImbalance struct{ gen uint64 }

var imbalanceGen atomic.Uint64

// scheduleImbalanceCheck starts this run's schedule (when balancing is on).
func (c *controllerActor) scheduleImbalanceCheck(ctx actor.Context) {
	if !c.cfg.AutoLeaderRebalance {
		return
	}
	if c.imbalanceGen == 0 {
		c.imbalanceGen = imbalanceGen.Add(1)
	}
	self, root, gen := ctx.Self(), ctx.ActorSystem().Root, c.imbalanceGen
	time.AfterFunc(c.cfg.LeaderImbalanceCheckInterval, func() { root.Send(self, checkImbalance{gen: gen}) })
}

func (c *controllerActor) onCheckImbalance(ctx actor.Context, msg checkImbalance) {
	if msg.gen != c.imbalanceGen {
		return
	}
	c.scheduleImbalanceCheck(ctx)
	c.balanceLeaders(ctx)
}

// balanceLeaders elects the preferred replica of every partition whose
// preferred broker is imbalanced and can lead it. A controller busy with
// a write, or without the membership yet, tries at the next check.
func (c *controllerActor) balanceLeaders(ctx actor.Context) {
	if !c.liveKnown || c.busy || c.snap == nil || c.trusted() != "" {
		return
	}
	parts := make([]election.Partition, 0, len(c.snap.Partitions))
	for _, part := range c.snap.Partitions {
		parts = append(parts, toElection(part.State))
	}
	imbalanced := election.Imbalanced(parts, c.isLive, c.cfg.LeaderImbalanceRatio)
	if len(imbalanced) == 0 {
		return
	}
	var updates []cluster.PartitionUpdate
	var changed []*messages.PartitionState
	for tp, part := range c.snap.Partitions {
		st := part.State
		if len(st.Replicas) == 0 || !slices.Contains(imbalanced, st.Replicas[0]) {
			continue
		}
		next, outcome := election.Preferred(toElection(st), c.liveFor(tp))
		if outcome != election.PreferredElected {
			continue
		}
		ns := fromElection(st, next)
		updates = append(updates, cluster.PartitionUpdate{State: ns, ExpectVersion: part.Version})
		changed = append(changed, ns)
		c.cfg.Logger.Info("preferred leader elected", "partition", tp, "leader", ns.Leader,
			"leader_epoch", ns.LeaderEpoch, "was_leader", st.Leader)
	}
	if len(updates) == 0 {
		return
	}
	c.commitStates(ctx, false, updates, changed, len(changed), func(_ actor.Context, err error) {
		if err != nil {
			c.cfg.Logger.Warn("controller could not commit preferred leaders; the next check tries again", "error", err)
		}
	})
}

// onElectLeaders gives the partitions asked for (every partition when
// none is named; every partition of a topic named without any) to their
// preferred replicas, answering a result for each.
func (c *controllerActor) onElectLeaders(ctx actor.Context, req *messages.ElectLeadersRequest) {
	sender := ctx.Sender()
	fail := func(code messages.ErrorCode, text string) {
		actors.SendTo(ctx, sender, &messages.ElectLeadersResponse{Error: code, ErrorMessage: text})
	}
	if code, text := c.canPlace(); code != messages.ErrorCode_NONE {
		fail(code, text)
		return
	}
	var results []*messages.PartitionError
	var updates []cluster.PartitionUpdate
	var changed []*messages.PartitionState
	for _, tp := range c.electionTargets(req.Partitions) {
		r := &messages.PartitionError{Topic: tp.Topic, Partition: tp.Partition}
		results = append(results, r)
		part, ok := c.snap.Partitions[tp]
		if !ok {
			r.Error = messages.ErrorCode_UNKNOWN_TOPIC_OR_PARTITION
			continue
		}
		next, outcome := election.Preferred(toElection(part.State), c.liveFor(tp))
		switch outcome {
		case election.PreferredAlreadyLeads:
			r.Error = messages.ErrorCode_ELECTION_NOT_NEEDED
		case election.PreferredNotAvailable:
			r.Error = messages.ErrorCode_PREFERRED_LEADER_NOT_AVAILABLE
		case election.PreferredElected:
			st := fromElection(part.State, next)
			updates = append(updates, cluster.PartitionUpdate{State: st, ExpectVersion: part.Version})
			changed = append(changed, st)
			c.cfg.Logger.Info("preferred leader elected on request", "partition", tp, "leader", st.Leader,
				"leader_epoch", st.LeaderEpoch, "was_leader", part.State.Leader)
		}
	}
	if len(updates) == 0 {
		actors.SendTo(ctx, sender, &messages.ElectLeadersResponse{Results: results})
		return
	}
	c.commitStates(ctx, true, updates, changed, len(changed), func(ctx actor.Context, err error) {
		if err != nil {
			code := c.storeErrorCode(err, messages.ErrorCode_REQUEST_TIMED_OUT)
			for _, r := range results {
				if r.Error == messages.ErrorCode_NONE {
					r.Error = code
				}
			}
		}
		actors.SendTo(ctx, sender, &messages.ElectLeadersResponse{Results: results})
	})
}

// electionTargets lists the partitions an ElectLeaders request names, in
// order and each once: all of the metadata's when it names none, all of a
// topic's when it names a topic without partitions (none, for a topic
// that does not exist: it is answered as unknown).
func (c *controllerActor) electionTargets(asked []*messages.TopicPartitions) []cluster.TopicPartition {
	var out []cluster.TopicPartition
	seen := map[cluster.TopicPartition]bool{}
	add := func(tp cluster.TopicPartition) {
		if !seen[tp] {
			seen[tp] = true
			out = append(out, tp)
		}
	}
	byTopic := func(topic string) []cluster.TopicPartition {
		var tps []cluster.TopicPartition
		for tp := range c.snap.Partitions {
			if topic == "" || tp.Topic == topic {
				tps = append(tps, tp)
			}
		}
		slices.SortFunc(tps, func(a, b cluster.TopicPartition) int {
			return cmp.Or(strings.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
		})
		if len(tps) == 0 && topic != "" {
			tps = append(tps, cluster.TopicPartition{Topic: topic, Partition: -1})
		}
		return tps
	}
	if len(asked) == 0 {
		return byTopic("")
	}
	for _, t := range asked {
		if len(t.Partitions) == 0 {
			for _, tp := range byTopic(t.Topic) {
				add(tp)
			}
			continue
		}
		for _, p := range t.Partitions {
			add(cluster.TopicPartition{Topic: t.Topic, Partition: p})
		}
	}
	return out
}
