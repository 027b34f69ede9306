package broker

import (
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/sluicemq/sluice/actors"
	"github.com/sluicemq/sluice/actors/coordinator"
	"github.com/sluicemq/sluice/cluster"
	"github.com/sluicemq/sluice/internal/reply"
	"github.com/sluicemq/sluice/messages"
)

// Consumer groups on the broker: each partition of __consumer_offsets this
// broker leads gets a group host actor, which loads the partition and runs a
// coordinator actor per group. The broker finds coordinators for clients and
// routes group requests to its hosts.

// groupHostRef is the broker's handle on one local group host.
type groupHostRef struct {
	pid      *actor.PID
	epoch    int32
	overview *atomic.Pointer[[]*messages.GroupOverview]
}

// offsetsTopic returns the __consumer_offsets record, or nil before it exists.
func (b *brokerActor) offsetsTopic() *messages.TopicRecord {
	if b.meta == nil {
		return nil
	}
	return b.meta.Topics[actors.OffsetsTopic]
}

// ensureOffsetsTopic asks the controller to create __consumer_offsets.
func (b *brokerActor) ensureOffsetsTopic(ctx actor.Context) {
	rf := min(b.cfg.OffsetsReplicationFactor, max(len(b.live), 1))
	req := &messages.CreateTopicsRequest{Topics: []*messages.TopicSpec{{Name: actors.OffsetsTopic,
		Partitions: int32(b.cfg.OffsetsPartitions), ReplicationFactor: int32(rf)}}}
	b.sendToController(ctx, req)
}

// groupLeader returns the state of the offsets partition a group lives in.
func (b *brokerActor) groupPartitionState(group string) (int32, *messages.PartitionState) {
	t := b.offsetsTopic()
	if t == nil {
		return -1, nil
	}
	p := actors.GroupPartition(group, t.Partitions)
	tp := cluster.TopicPartition{Topic: actors.OffsetsTopic, Partition: p}
	st := b.meta.Partitions[tp].State
	if r := b.replicas[tp]; r != nil && r.lastState != nil && newerState(r.lastState, st) {
		st = r.lastState
	}
	return p, st
}

func (b *brokerActor) onFindCoordinator(ctx actor.Context, req *messages.FindCoordinatorRequest) {
	resp := &messages.FindCoordinatorResponse{BrokerId: -1, Partition: -1}
	if req.Group == "" {
		resp.Error, resp.ErrorMessage = messages.ErrorCode_INVALID_REQUEST, "empty group id"
		actors.Respond(ctx, resp)
		return
	}
	p, st := b.groupPartitionState(req.Group)
	switch {
	case p < 0:
		b.ensureOffsetsTopic(ctx)
		resp.Error, resp.ErrorMessage = messages.ErrorCode_COORDINATOR_NOT_AVAILABLE, actors.OffsetsTopic+" is being created"
	case st == nil || st.Leader < 0:
		resp.Error, resp.ErrorMessage = messages.ErrorCode_COORDINATOR_NOT_AVAILABLE, fmt.Sprintf("%s-%d has no leader", actors.OffsetsTopic, p)
	default:
		br, ok := b.live[st.Leader]
		if !ok {
			resp.Error, resp.ErrorMessage = messages.ErrorCode_COORDINATOR_NOT_AVAILABLE, fmt.Sprintf("coordinator broker %d is not alive", st.Leader)
		} else {
			resp.BrokerId, resp.Address, resp.Partition = br.ID, br.Addr, p
		}
	}
	actors.Respond(ctx, resp)
}

// routeGroup forwards a group request to the local host of its partition,
// or answers NOT_COORDINATOR.
func (b *brokerActor) routeGroup(ctx actor.Context, group string) {
	p, _ := b.groupPartitionState(group)
	if h := b.groupHosts[p]; p >= 0 && h != nil {
		ctx.Forward(h.pid)
		return
	}
	if resp := coordinator.GroupError(ctx.Message(), messages.ErrorCode_NOT_COORDINATOR,
		fmt.Sprintf("broker %d does not coordinate group %q", b.cfg.ID, group)); resp != nil {
		actors.Respond(ctx, resp)
	}
}

// syncGroupHost starts or stops the group host of an offsets partition as
// this broker gains or loses its leadership.
func (b *brokerActor) syncGroupHost(ctx actor.Context, tp cluster.TopicPartition, st *messages.PartitionState) {
	h := b.groupHosts[tp.Partition]
	leading := st != nil && st.Leader == b.cfg.ID
	switch {
	case leading && h != nil && h.epoch == st.LeaderEpoch:
	case leading:
		if h != nil {
			ctx.Stop(h.pid)
			delete(b.groupHosts, tp.Partition)
		}
		ref := &groupHostRef{epoch: st.LeaderEpoch, overview: &atomic.Pointer[[]*messages.GroupOverview]{}}
		props := coordinator.HostProps(coordinator.HostConfig{Partition: tp.Partition, Broker: b.cfg,
			BrokerPID: ctx.Self(), Meta: &b.shared.published, Overview: ref.overview})
		pid, err := ctx.SpawnNamed(props, fmt.Sprintf("groups-%d-%d", tp.Partition, st.LeaderEpoch))
		if err != nil {
			b.cfg.Logger.Error("cannot start group host", "partition", tp, "error", err)
			return
		}
		ref.pid = pid
		b.groupHosts[tp.Partition] = ref
	case h != nil:
		ctx.Stop(h.pid)
		delete(b.groupHosts, tp.Partition)
	}
}

// onListGroups lists the groups this broker coordinates.
func (b *brokerActor) onListGroups(ctx actor.Context) {
	resp := &messages.ListGroupsResponse{}
	for _, h := range b.groupHosts {
		if list := h.overview.Load(); list != nil {
			for _, g := range *list {
				// Only the groups the principal may describe, as Kafka.
				if b.may(ctx, onGroup(opDescribe, g.Group)) == "" {
					resp.Groups = append(resp.Groups, g)
				}
			}
		}
	}
	slices.SortFunc(resp.Groups, func(x, y *messages.GroupOverview) int {
		if x.Group < y.Group {
			return -1
		}
		if x.Group > y.Group {
			return 1
		}
		return 0
	})
	actors.Respond(ctx, resp)
}

// groupRequestTimeout bounds the broker's own wait for a coordinator it
// asks on a client's behalf.
const groupRequestTimeout = 10 * time.Second

// fetchOffsetsVisible asks the group's coordinator for its committed
// offsets on behalf of a principal subject to ACLs, and answers only those
// of topics the principal may describe, as Kafka does: a topic it names
// and may not describe gets TOPIC_AUTHORIZATION_FAILED, and when it names
// none (every committed partition) such topics are left out.
func (b *brokerActor) fetchOffsetsVisible(ctx actor.Context, group string, req *messages.OffsetFetchRequest) {
	p, _ := b.groupPartitionState(group)
	h := b.groupHosts[p]
	if p < 0 || h == nil {
		b.routeGroup(ctx, group) // answers NOT_COORDINATOR
		return
	}
	principal, authz, sender := b.checked(ctx), b.authz.acl, ctx.Sender()
	visible := func(topic string) bool {
		return authz.Why(principal, opDescribe, messages.AclResourceType_ACL_RESOURCE_TOPIC, topic) == ""
	}
	reply.Ask(ctx, h.pid, req, groupRequestTimeout, func(res any, err error) {
		resp, ok := res.(*messages.OffsetFetchResponse)
		if err != nil || !ok {
			actors.SendTo(ctx, sender, &messages.OffsetFetchResponse{Error: messages.ErrorCode_COORDINATOR_NOT_AVAILABLE,
				ErrorMessage: fmt.Sprintf("the coordinator of group %q did not answer: %v", group, err)})
			return
		}
		kept := resp.Offsets[:0]
		for _, e := range resp.Offsets {
			switch {
			case visible(e.Topic):
				kept = append(kept, e)
			case len(req.Partitions) > 0:
				kept = append(kept, &messages.OffsetCommitEntry{Topic: e.Topic, Partition: e.Partition, Offset: -1,
					Error: messages.ErrorCode_TOPIC_AUTHORIZATION_FAILED})
			}
		}
		resp.Offsets = kept
		actors.SendTo(ctx, sender, resp)
	})
}
