package client

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sluicemq/sluice/messages"
)

// FindCoordinator returns the address of the broker coordinating group,
// waiting while the coordinator is being set up (the internal topic is
// created on a group's first use).
func (a *Admin) FindCoordinator(ctx context.Context, group string) (string, error) {
	backoff := 50 * time.Millisecond
	for {
		res, err := a.callAny(ctx, &messages.FindCoordinatorRequest{Group: group})
		if err != nil {
			return "", err
		}
		resp, ok := res.(*messages.FindCoordinatorResponse)
		if !ok {
			return "", fmt.Errorf("unexpected answer %T", res)
		}
		if resp.Error == messages.ErrorCode_NONE {
			return resp.Address, nil
		}
		if !resp.Error.Retriable() {
			return "", resp.Error.Err(resp.ErrorMessage)
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("%w (gave up: %v)", resp.Error.Err(resp.ErrorMessage), ctx.Err())
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, time.Second)
	}
}

// GroupListing is one group in ListGroups.
type GroupListing struct {
	Group string
	// State is the group's state: Empty, PreparingRebalance,
	// CompletingRebalance, Stable or Dead; a group of Kafka's consumer
	// protocol is Empty, Reconciling or Stable.
	State   string
	Members int32
	// Coordinator is the broker that coordinates the group.
	Coordinator int32
	// GroupType is "classic", or "consumer" for a group of Kafka's consumer
	// protocol (KIP-848).
	GroupType string
}

// ListGroups lists every group of the cluster, sorted by name, asking every
// broker for the groups it coordinates.
func (a *Admin) ListGroups(ctx context.Context) ([]GroupListing, error) {
	md, err := a.metadata(ctx)
	if err != nil {
		return nil, err
	}
	var out []GroupListing
	for _, b := range md.Brokers {
		res, err := request(a.node.system, b.Address, &messages.ListGroupsRequest{}, a.timeout(ctx))
		if err != nil {
			return nil, fmt.Errorf("broker %d: %w", b.Id, err)
		}
		if resp, ok := res.(*messages.ListGroupsResponse); ok {
			for _, g := range resp.Groups {
				out = append(out, GroupListing{Group: g.Group, State: g.State, Members: g.Members, Coordinator: g.Coordinator,
					GroupType: cmp.Or(g.GroupType, "classic")})
			}
		}
	}
	slices.SortFunc(out, func(x, y GroupListing) int { return strings.Compare(x.Group, y.Group) })
	return out, nil
}

// GroupPartition is one partition in a group description: its committed
// offset (-1: none), the partition's end (HW) and log end, the lag, and
// the member that owns it ("" when none).
type GroupPartition struct {
	Topic     string
	Partition int32
	Committed int64
	End       int64
	LogEnd    int64
	Lag       int64
	Owner     string
}

// GroupInfo describes a group.
type GroupInfo struct {
	*messages.DescribeGroupResponse
	Partitions []GroupPartition
}

// DeleteGroup deletes a group that has no members: its committed offsets
// and its metadata. ErrNonEmptyGroup while it has members,
// ErrGroupIDNotFound when there is nothing to delete.
func (a *Admin) DeleteGroup(ctx context.Context, group string) error {
	coord, err := a.FindCoordinator(ctx, group)
	if err != nil {
		return err
	}
	res, err := request(a.node.system, coord, &messages.DeleteGroupRequest{Group: group}, a.timeout(ctx))
	if err != nil {
		return err
	}
	resp, ok := res.(*messages.DeleteGroupResponse)
	if !ok {
		return fmt.Errorf("unexpected answer %T", res)
	}
	return resp.Error.Err(resp.ErrorMessage)
}

// DescribeGroup returns a group's state, members and assignment, and per
// partition of its topics the committed offset, end offset and lag.
func (a *Admin) DescribeGroup(ctx context.Context, group string) (*GroupInfo, error) {
	coord, err := a.FindCoordinator(ctx, group)
	if err != nil {
		return nil, err
	}
	res, err := request(a.node.system, coord, &messages.DescribeGroupRequest{Group: group}, a.timeout(ctx))
	if err != nil {
		return nil, err
	}
	desc, ok := res.(*messages.DescribeGroupResponse)
	if !ok {
		return nil, fmt.Errorf("unexpected answer %T", res)
	}
	if err := desc.Error.Err(desc.ErrorMessage); err != nil {
		return nil, err
	}
	res, err = request(a.node.system, coord, &messages.OffsetFetchRequest{Group: group}, a.timeout(ctx))
	if err != nil {
		return nil, err
	}
	fetched, ok := res.(*messages.OffsetFetchResponse)
	if !ok {
		return nil, fmt.Errorf("unexpected answer %T", res)
	}
	committed := map[topicPartition]int64{}
	topics := map[string]bool{}
	for _, o := range fetched.Offsets {
		committed[topicPartition{o.Topic, o.Partition}] = o.Offset
		topics[o.Topic] = true
	}
	owner := map[topicPartition]string{}
	for _, m := range desc.Members {
		for _, t := range m.Topics {
			topics[t] = true
		}
		for _, tps := range m.Assignment {
			for _, p := range tps.Partitions {
				owner[topicPartition{tps.Topic, p}] = m.MemberId
			}
		}
	}
	info := &GroupInfo{DescribeGroupResponse: desc}
	names := make([]string, 0, len(topics))
	for t := range topics {
		names = append(names, t)
	}
	slices.Sort(names)
	for _, t := range names {
		ti, err := a.DescribeTopic(ctx, t)
		if err != nil {
			continue
		}
		for _, p := range ti.Partitions {
			tp := topicPartition{t, p.Partition}
			c, ok := committed[tp]
			if !ok {
				c = -1
			}
			gp := GroupPartition{Topic: t, Partition: p.Partition, Committed: c, End: p.HighWatermark, LogEnd: p.LogEndOffset, Owner: owner[tp]}
			gp.Lag = gp.End - max(c, 0)
			if c < 0 {
				gp.Lag = gp.End - max(p.LogStartOffset, 0)
			}
			info.Partitions = append(info.Partitions, gp)
		}
	}
	return info, nil
}

// ResetOffsets commits new offsets for topic's partitions in group: to the
// start (AtStart), the end (AtEnd), the first record at or after a time
// (AtTimestamp), or an exact offset (AtOffset), which is moved into the
// partition's range, log start to end, as Kafka's reset-offsets tool does.
// The group must have no members (NON_EMPTY_GROUP otherwise), as with
// Kafka's tool.
func (a *Admin) ResetOffsets(ctx context.Context, group, topic string, to Offset) (map[int32]int64, error) {
	ti, err := a.DescribeTopic(ctx, topic)
	if err != nil {
		return nil, err
	}
	coord, err := a.FindCoordinator(ctx, group)
	if err != nil {
		return nil, err
	}
	req := &messages.OffsetCommitRequest{Group: group, Generation: -1}
	out := map[int32]int64{}
	for _, p := range ti.Partitions {
		off := to.at
		if off < 0 {
			if off, err = a.ListOffset(ctx, topic, p.Partition, to.listOffsetsTimestamp()); err != nil {
				return nil, err
			}
			if off < 0 { // no record at or after the timestamp
				off = p.HighWatermark
			}
		} else if p.HighWatermark >= 0 {
			// An offset outside the log would only be reset by the consumer.
			off = min(max(off, p.LogStartOffset), p.HighWatermark)
		}
		out[p.Partition] = off
		req.Offsets = append(req.Offsets, &messages.OffsetCommitEntry{Topic: topic, Partition: p.Partition, Offset: off})
	}
	res, err := request(a.node.system, coord, req, a.timeout(ctx))
	if err != nil {
		return nil, err
	}
	resp, ok := res.(*messages.OffsetCommitResponse)
	if !ok {
		return nil, fmt.Errorf("unexpected answer %T", res)
	}
	return out, resp.Error.Err(resp.ErrorMessage)
}

// DeleteOffsets deletes group's committed offsets of topic's partitions
// (all of them when none are named), as Kafka's OffsetDelete: the group
// starts those partitions over by its reset policy. A group with members
// keeps the offsets of the topics they consume: those partitions get
// ErrGroupSubscribedToTopic in the map, which holds one entry per
// partition (nil: deleted, or there was no commit). The error is for the
// request as a whole (ErrGroupIDNotFound, for example).
func (a *Admin) DeleteOffsets(ctx context.Context, group, topic string, partitions ...int32) (map[int32]error, error) {
	if len(partitions) == 0 {
		ti, err := a.DescribeTopic(ctx, topic)
		if err != nil {
			return nil, err
		}
		for _, p := range ti.Partitions {
			partitions = append(partitions, p.Partition)
		}
	}
	coord, err := a.FindCoordinator(ctx, group)
	if err != nil {
		return nil, err
	}
	req := &messages.DeleteOffsetsRequest{Group: group, Partitions: []*messages.TopicPartitions{{Topic: topic, Partitions: partitions}}}
	res, err := request(a.node.system, coord, req, a.timeout(ctx))
	if err != nil {
		return nil, err
	}
	resp, ok := res.(*messages.DeleteOffsetsResponse)
	if !ok {
		return nil, fmt.Errorf("unexpected answer %T", res)
	}
	if err := resp.Error.Err(resp.ErrorMessage); err != nil {
		return nil, err
	}
	out := map[int32]error{}
	for _, p := range resp.Partitions {
		out[p.Partition] = p.Error.Err("")
	}
	return out, nil
}
