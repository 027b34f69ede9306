package controller

import (
	"fmt"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/sluicemq/sluice/actors"
	"github.com/sluicemq/sluice/actors/election"
	"github.com/sluicemq/sluice/cluster"
	"github.com/sluicemq/sluice/messages"
)

// onAlterPartitionReassignments starts, replaces or cancels the moves the
// request names (election.Reassign has the rules), answering a result for
// each partition. A move's later steps (its end once the target is in
// sync) ride on the leaders' ISR changes and on elections.
func (c *controllerActor) onAlterPartitionReassignments(ctx actor.Context, req *messages.AlterPartitionReassignmentsRequest) {
	sender := ctx.Sender()
	fail := func(code messages.ErrorCode, text string) {
		actors.SendTo(ctx, sender, &messages.AlterPartitionReassignmentsResponse{Error: code, ErrorMessage: text})
	}
	if code, text := c.canPlace(); code != messages.ErrorCode_NONE {
		fail(code, text)
		return
	}
	var results []*messages.PartitionError
	var updates []cluster.PartitionUpdate
	var changed []*messages.PartitionState
	var pending [][]int32
	seen := map[cluster.TopicPartition]bool{}
	for _, m := range req.Partitions {
		tp := cluster.TopicPartition{Topic: m.Topic, Partition: m.Partition}
		r := &messages.PartitionError{Topic: m.Topic, Partition: m.Partition}
		results = append(results, r)
		if seen[tp] {
			r.Error, r.ErrorMessage = messages.ErrorCode_INVALID_REQUEST, fmt.Sprintf("partition %s is named twice", tp)
			continue
		}
		seen[tp] = true
		st, code, why := c.planReassignment(tp, m.Replicas, req.KeepReplicationFactor, pending)
		if st != nil && len(m.Replicas) > 0 && (len(st.AddingReplicas) > 0 || len(st.RemovingReplicas) > 0) {
			st.ReassignmentThrottle = max(m.ThrottleBytesPerSec, 0)
		}
		if code != messages.ErrorCode_NONE {
			r.Error, r.ErrorMessage = code, why
			continue
		}
		if st == nil {
			continue // already so
		}
		pending = append(pending, st.AddingReplicas)
		updates = append(updates, cluster.PartitionUpdate{State: st, ExpectVersion: c.snap.Partitions[tp].Version})
		changed = append(changed, st)
		c.cfg.Logger.Info("partition reassignment", "partition", tp, "target", m.Replicas, "replicas", st.Replicas,
			"adding", st.AddingReplicas, "removing", st.RemovingReplicas, "leader", st.Leader, "throttle", st.ReassignmentThrottle)
	}
	if len(updates) == 0 {
		actors.SendTo(ctx, sender, &messages.AlterPartitionReassignmentsResponse{Results: results})
		return
	}
	c.commitStates(ctx, true, updates, changed, 0, func(ctx actor.Context, err error) {
		if err != nil {
			code := c.storeErrorCode(err, messages.ErrorCode_REQUEST_TIMED_OUT)
			for _, r := range results {
				if r.Error == messages.ErrorCode_NONE {
					r.Error, r.ErrorMessage = code, err.Error()
				}
			}
		}
		actors.SendTo(ctx, sender, &messages.AlterPartitionReassignmentsResponse{Results: results})
	})
}

// planReassignment is the state a move of tp to target (a cancel, when
// empty) writes: nil when there is nothing to write, or why it cannot be
// made. pending are the replicas other moves of the same request add;
// keepRF refuses a move to another number of replicas.
func (c *controllerActor) planReassignment(tp cluster.TopicPartition, target []int32, keepRF bool, pending [][]int32) (*messages.PartitionState, messages.ErrorCode, string) {
	part, ok := c.snap.Partitions[tp]
	topic := c.snap.Topics[tp.Topic]
	if !ok || topic == nil {
		return nil, messages.ErrorCode_UNKNOWN_TOPIC_OR_PARTITION, fmt.Sprintf("partition %s does not exist", tp)
	}
	p, live := toElection(part.State), c.liveFor(tp)
	if len(target) == 0 {
		if !p.Reassigning() {
			return nil, messages.ErrorCode_NO_REASSIGNMENT_IN_PROGRESS, fmt.Sprintf("partition %s is not moving", tp)
		}
		next, _, err := election.Cancel(p, live)
		if err != nil {
			return nil, messages.ErrorCode_INVALID_REPLICA_ASSIGNMENT, err.Error()
		}
		return fromElection(part.State, next), messages.ErrorCode_NONE, ""
	}
	if err := election.ValidateTarget(target, c.isLive); err != nil {
		return nil, messages.ErrorCode_INVALID_REPLICA_ASSIGNMENT, err.Error()
	}
	tc, _ := actors.ParseTopicConfig(c.topicDefaults(), topic.Configs)
	if original := p.Original(); keepRF && len(target) != len(original) {
		return nil, messages.ErrorCode_INVALID_REPLICATION_FACTOR, fmt.Sprintf(
			"%d replicas for %s, which has %d, and the request may not change the replication factor", len(target), tp, len(original))
	}
	if len(target) < tc.MinISR {
		// Its ISR could never reach min.insync.replicas: acks=all would
		// be refused for good.
		return nil, messages.ErrorCode_INVALID_REPLICATION_FACTOR, fmt.Sprintf(
			"%d replicas for %s, fewer than its min.insync.replicas %d", len(target), tp, tc.MinISR)
	}
	next, changed, err := election.Reassign(p, target, live)
	switch {
	case err != nil:
		return nil, messages.ErrorCode_INVALID_REPLICA_ASSIGNMENT, err.Error()
	case !changed:
		return nil, messages.ErrorCode_NONE, ""
	}
	if why := c.overPartitionLimit(tp.Topic, [][]int32{next.Adding}, pending); why != "" {
		return nil, messages.ErrorCode_INVALID_REPLICA_ASSIGNMENT, why
	}
	return fromElection(part.State, next), messages.ErrorCode_NONE, ""
}
