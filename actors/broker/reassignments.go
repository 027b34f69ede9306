package broker

import (
	"cmp"
	"slices"
	"strings"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/sluicemq/sluice/actors"
	"github.com/sluicemq/sluice/cluster"
	"github.com/sluicemq/sluice/messages"
)

// onListPartitionReassignments answers the moves in progress among the
// partitions asked for (all when none is) from this broker's metadata.
func (b *brokerActor) onListPartitionReassignments(ctx actor.Context, req *messages.ListPartitionReassignmentsRequest) {
	resp := &messages.ListPartitionReassignmentsResponse{}
	if b.meta == nil {
		resp.Error, resp.ErrorMessage = messages.ErrorCode_NOT_CONTROLLER, "the broker has not loaded the metadata yet; try again"
		actors.Respond(ctx, resp)
		return
	}
	asked := func(tp cluster.TopicPartition) bool {
		if len(req.Partitions) == 0 {
			return true
		}
		for _, t := range req.Partitions {
			if t.Topic == tp.Topic && (len(t.Partitions) == 0 || slices.Contains(t.Partitions, tp.Partition)) {
				return true
			}
		}
		return false
	}
	for tp, part := range b.meta.Partitions {
		st := part.State
		if len(st.AddingReplicas) == 0 && len(st.RemovingReplicas) == 0 || !asked(tp) {
			continue
		}
		resp.Reassignments = append(resp.Reassignments, &messages.OngoingReassignment{Topic: tp.Topic, Partition: tp.Partition,
			Replicas: st.Replicas, AddingReplicas: st.AddingReplicas, RemovingReplicas: st.RemovingReplicas})
	}
	slices.SortFunc(resp.Reassignments, func(x, y *messages.OngoingReassignment) int {
		return cmp.Or(strings.Compare(x.Topic, y.Topic), cmp.Compare(x.Partition, y.Partition))
	})
	actors.Respond(ctx, resp)
}
