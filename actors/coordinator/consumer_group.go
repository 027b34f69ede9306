package coordinator

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"slices"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/sluicemq/sluice/acl"
	"github.com/sluicemq/sluice/actors"
	"github.com/sluicemq/sluice/actors/consumergroup"
	"github.com/sluicemq/sluice/actors/groups"
	"github.com/sluicemq/sluice/messages"
	"github.com/sluicemq/sluice/transport"
)

// Groups of Kafka's consumer protocol (KIP-848), beside the classic
// groups of the same coordinator: a group id holds members of one
// protocol at a time, as in Kafka. A ConsumerGroupHeartbeat to a classic
// group with members is GROUP_ID_NOT_FOUND, a JoinGroup to a consumer
// group with members INCONSISTENT_GROUP_PROTOCOL; an empty group of either
// kind (committed offsets only) takes members of either.
//
// Every change of the group (members, epochs, targets, what each member
// holds) is written to the group's __consumer_offsets partition before
// the heartbeat that made it is answered, so a new coordinator goes on
// where the last one stopped: members keep their epochs and partitions.

// consumerMembers reports whether the group is a consumer-protocol group
// with members.
func (c *groupCoordinator) consumerMembers() bool {
	return c.cg != nil && c.cg.Len() > 0
}

func (c *groupCoordinator) consumerGroupConfig() consumergroup.Config {
	cfg := consumergroup.DefaultConfig()
	cfg.SessionTimeout = c.cfg.Broker.GroupConsumerSessionTimeout
	cfg.HeartbeatInterval = c.cfg.Broker.GroupConsumerHeartbeatInterval
	cfg.MaxSize = c.cfg.Broker.GroupMaxSize
	// Heartbeat v0 members are named by the coordinator, as v1 clients
	// name themselves: 16 random bytes, base64 for URLs.
	cfg.NewMemberID = func() string {
		var b [16]byte
		_, _ = rand.Read(b[:])
		return base64.RawURLEncoding.EncodeToString(b[:])
	}
	return cfg
}

// catalog is the broker's latest metadata as the consumer group sees it.
// A regular expression matches internal topics too, as in Kafka (a member
// asked for them by name in its expression).
func (c *groupCoordinator) catalog() consumergroup.Catalog {
	return consumergroup.Catalog{Partitions: c.partitionCounts, Topics: func() []string {
		snap := c.cfg.Meta.Load()
		if snap == nil {
			return nil
		}
		names := make([]string, 0, len(snap.Topics))
		for name := range snap.Topics {
			names = append(names, name)
		}
		return names
	}, Describable: c.describable, Version: func() uint64 {
		// Every change of the metadata (topics, partitions, ACLs) moves
		// its index.
		if snap := c.cfg.Meta.Load(); snap != nil {
			return snap.Index
		}
		return 0
	}}
}

// describable tells whether principal ("" when unchecked) may describe
// topic under the cluster's ACLs now: nothing is, before they are loaded.
func (c *groupCoordinator) describable(principal, topic string) bool {
	if principal == "" {
		return true
	}
	var authz *acl.Authorizer
	if c.cfg.Broker.ACLs != nil {
		authz = c.cfg.Broker.ACLs.Load()
	}
	return authz != nil && authz.Why(principal, messages.AclOperation_ACL_OPERATION_DESCRIBE,
		messages.AclResourceType_ACL_RESOURCE_TOPIC, topic) == ""
}

// topicIDs maps the ids of the latest metadata's topics to their names
// and back, made again only when the metadata changed.
func (c *groupCoordinator) topicIDs() (byID, byName map[string]string) {
	snap := c.cfg.Meta.Load()
	if snap != c.ids.of || c.ids.byID == nil {
		c.ids.of, c.ids.byID, c.ids.byName = snap, map[string]string{}, map[string]string{}
		if snap != nil {
			for name, t := range snap.Topics {
				c.ids.byID[t.TopicId], c.ids.byName[name] = name, t.TopicId
			}
		}
	}
	return c.ids.byID, c.ids.byName
}

func (c *groupCoordinator) onConsumerHeartbeat(ctx actor.Context, req *messages.ConsumerGroupHeartbeatRequest) {
	sender := ctx.Sender()
	answer := func(resp *messages.ConsumerGroupHeartbeatResponse) { actors.SendTo(ctx, sender, resp) }
	if n := c.g.Len(); n > 0 {
		answer(&messages.ConsumerGroupHeartbeatResponse{Error: messages.ErrorCode_GROUP_ID_NOT_FOUND,
			ErrorMessage: fmt.Sprintf("group %q is a classic group with %d members, not a consumer group", c.cfg.Group, n)})
		return
	}
	if c.cg == nil {
		c.cg = consumergroup.New(c.consumerGroupConfig())
	}
	byID, byName := c.topicIDs()
	h := consumergroup.Heartbeat{MemberID: req.MemberId, MemberEpoch: req.MemberEpoch, InstanceID: req.InstanceId,
		RackID: req.RackId, RebalanceTimeout: time.Duration(req.RebalanceTimeoutMs) * time.Millisecond,
		Topics: req.Topics, TopicsSet: req.TopicsSet, Regex: req.Regex, RegexSet: req.RegexSet, Assignor: req.Assignor,
		OwnedSet: req.OwnedSet, ClientID: req.ClientId, ClientHost: req.ClientHost,
		Principal: transport.CheckedPrincipal(transport.Principal(ctx), c.cfg.Broker.Secure, c.cfg.Broker.SuperUsers)}
	if req.RebalanceTimeoutMs < 0 {
		h.RebalanceTimeout = -1
	}
	for _, o := range req.Owned {
		if name, ok := byID[o.TopicId]; ok { // a deleted topic's partitions are gone
			h.Owned = append(h.Owned, groups.TopicPartitions{Topic: name, Partitions: o.Partitions})
		}
	}
	// What a member subscribes with counts in the broker's group metadata
	// budget, in place of what it subscribed with before: the names, and
	// what its regular expression compiles to and matches (measured only
	// when the subscription comes, not at every heartbeat).
	subscribing := req.MemberEpoch == 0 || req.TopicsSet || req.RegexSet
	var size int64
	if subscribing {
		topics, regex := c.cg.Subscription(req.MemberId)
		if req.TopicsSet {
			topics = req.Topics
		}
		if req.RegexSet {
			regex = req.Regex
		}
		size = int64(len(regex)+len(req.ClientId)+len(req.InstanceId)+len(req.RackId)) + memberOverheadBytes +
			consumergroup.RegexBytes(regex, h.Principal, c.catalog())
		for _, t := range topics {
			size += int64(len(t))
		}
	}
	principal := transport.Principal(ctx)
	undo, ok := c.recharge(req.MemberId, principal, size, subscribing)
	if !ok {
		answer(&messages.ConsumerGroupHeartbeatResponse{Error: messages.ErrorCode_GROUP_MAX_SIZE_REACHED, MemberId: req.MemberId,
			ErrorMessage: c.overBudget(principal, size)})
		return
	}
	epoch := c.cg.Epoch()
	r := c.cg.Heartbeat(h, time.Now(), c.catalog())
	if r.Code != consumergroup.None {
		undo()
	} else if r.MemberID != req.MemberId { // named by the coordinator (v0)
		c.charges[r.MemberID] = c.charges[req.MemberId]
		delete(c.charges, req.MemberId)
	}
	resp := &messages.ConsumerGroupHeartbeatResponse{Error: consumerCode(r.Code), ErrorMessage: r.Message, MemberId: r.MemberID,
		MemberEpoch: r.MemberEpoch, HeartbeatIntervalMs: int32(r.HeartbeatInterval.Milliseconds()), HasAssignment: r.HasAssignment}
	for _, a := range r.Assignment {
		if id, ok := byName[a.Topic]; ok {
			resp.Assignment = append(resp.Assignment, &messages.TopicIdPartitions{TopicId: id, Partitions: slices.Clone(a.Partitions)})
		}
	}
	c.persistConsumers(ctx, func(err error) {
		if err != nil {
			resp = &messages.ConsumerGroupHeartbeatResponse{Error: messages.ErrorCode_COORDINATOR_NOT_AVAILABLE,
				ErrorMessage: "the group's change was not persisted: " + err.Error(), MemberId: req.MemberId, MemberEpoch: req.MemberEpoch}
		}
		answer(resp)
	})
	// Members reach their targets without a new epoch: the listing's state
	// (Reconciling, Stable) follows them.
	if c.cg.Epoch() != epoch || req.MemberEpoch < 0 || c.cg.State() != c.listedState {
		c.releaseCharges(true)
		c.reportOverview(ctx)
	}
}

// persistConsumers writes the group if it changed since its last write,
// then calls done (at once when nothing changed).
func (c *groupCoordinator) persistConsumers(ctx actor.Context, done func(error)) {
	if c.cg.Changes() == c.cgWritten {
		done(nil)
		return
	}
	c.cgWritten = c.cg.Changes()
	rec := groupRecord{Key: &messages.GroupRecordKey{Group: c.cfg.Group}, ConsumerGroup: true, Consumer: toWireConsumerGroup(c.cg.Snapshot())}
	c.write(ctx, []groupRecord{rec}, func(err error) {
		if err != nil {
			c.cgWritten = 0 // the next change writes the whole group again
		}
		done(err)
	})
}

// onConsumerTick removes silent members and follows the topics.
func (c *groupCoordinator) onConsumerTick(ctx actor.Context) {
	if c.cg == nil {
		return
	}
	out := c.cg.Tick(time.Now(), c.catalog())
	for _, id := range out.Removed {
		c.cfg.Broker.Logger.Info("consumer group member removed: no heartbeat within the session timeout or no revocation within the rebalance timeout",
			"group", c.cfg.Group, "member", id)
	}
	if len(out.Removed) > 0 || out.EpochBumped {
		c.releaseCharges(true)
		c.reportOverview(ctx)
	}
	c.persistConsumers(ctx, func(error) {})
}

// describeConsumers is describe() for a consumer-protocol group.
func (c *groupCoordinator) describeConsumers() *messages.DescribeGroupResponse {
	d := c.cg.Describe()
	resp := &messages.DescribeGroupResponse{Group: c.cfg.Group, State: d.State, Generation: d.Epoch, Assignor: d.Assignor,
		Coordinator: c.cfg.Broker.ID, ProtocolType: consumerProtocol, GroupType: "consumer", AssignmentEpoch: d.AssignmentEpoch}
	for _, m := range d.Members {
		resp.Members = append(resp.Members, &messages.MemberDescription{MemberId: m.MemberID, ClientId: m.ClientID,
			Topics: m.Topics, Assignment: toWireAssignment(m.Assignment), InstanceId: m.InstanceID, MemberEpoch: m.MemberEpoch,
			Target: toWireAssignment(m.Target), Regex: m.Regex, RackId: m.RackID, ClientHost: m.ClientHost, MemberState: m.State.String()})
	}
	return resp
}
