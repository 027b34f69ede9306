package controller

import (
	"slices"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

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
	c.commitStates(ctx, updates, changed, len(changed), func(_ actor.Context, err error) {
		c.cfg.Logger.Warn("controller could not commit preferred leaders; the next check tries again", "error", err)
	})
}
