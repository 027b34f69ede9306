package client

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/sluicemq/sluice/messages"
)

// System returns the actor system this process's clients run on (started
// with opts' ListenAddr if it is not running yet). Actors spawned on it are
// reachable by brokers, so they can be push subscribers.
func System(opts ...Opt) (*actor.ActorSystem, error) {
	cfg := configOf(opts)
	n, err := acquireNode(&cfg)
	if err != nil {
		return nil, err
	}
	return n.system, nil
}

// Subscription is a push subscriber's membership in a group.
type Subscription struct {
	admin    *Admin
	group    string
	memberID string
	coord    string
}

// SubscribeCredit is the number of records the broker may push to the actor
// before it grants more with PushCredit. Default 100.
func SubscribeCredit(n int) SubscribeOpt { return subscribeOpt(func(c *config) { c.pushCredit = n }) }

// Subscribe makes the actor pid a member of group for topics: the broker
// coordinating the group fetches the member's partitions and sends pid
// *messages.PushAssignment and *messages.PushRecords, never more records
// than the credit granted. The actor answers each PushRecords (ctx.Respond)
// with *messages.PushCredit as it processes records and *messages.PushAck
// to commit; when the actor stops, the broker removes it from the group.
// Each PushAck carries the Generation of the PushRecords it acknowledges;
// an ack for a partition the member has not owned without a break since
// then is refused with ILLEGAL_GENERATION (send it with ctx.Request to get
// the OffsetCommitResponse).
//
// ConsumeResetOffset(AtEnd()) starts partitions without a commit at the
// end, AtStart() (the default) at the start; NoResetOffset() is refused
// with ErrInvalidConfig, as a push member has no poll to report a
// partition without a commit to.
func Subscribe(ctx context.Context, broker, group string, topics []string, pid *actor.PID, opts ...SubscribeOpt) (*Subscription, error) {
	if pid == nil || pid.Address == "" || pid.Address == "nonhost" {
		return nil, errors.New("subscribe: the actor must run on an actor system with remote started (see client.System)")
	}
	admin, err := newAdmin(broker, configOf(opts))
	if err != nil {
		return nil, err
	}
	sub, err := subscribe(ctx, admin, group, topics, pid)
	if err != nil {
		admin.Close()
		return nil, err
	}
	return sub, nil
}

// subscribe sends the subscription to the group's coordinator, again
// (after finding it anew) while the coordinator is loading or has moved:
// neither answer means a member was added.
func subscribe(ctx context.Context, admin *Admin, group string, topics []string, pid *actor.PID) (*Subscription, error) {
	reset := "earliest"
	switch admin.cfg.resetOffset.at {
	case -1:
		reset = "latest"
	case noReset:
		reset = "none" // the broker refuses it with INVALID_CONFIG
	}
	req := &messages.SubscribeRequest{Group: group, Topics: topics, TargetAddress: pid.Address, TargetId: pid.Id,
		InitialCredit: int32(admin.cfg.pushCredit), ClientId: admin.cfg.group.clientID, AutoOffsetReset: reset,
		Assignors: admin.cfg.group.assignors}
	backoff := 50 * time.Millisecond
	for {
		coord, err := admin.FindCoordinator(ctx, group)
		if err != nil {
			return nil, err
		}
		res, err := request(admin.node.system, coord, req, admin.timeout(ctx))
		if err != nil {
			return nil, err
		}
		resp, ok := res.(*messages.SubscribeResponse)
		if !ok {
			return nil, fmt.Errorf("unexpected answer %T", res)
		}
		switch resp.Error {
		case messages.ErrorCode_NONE:
			return &Subscription{admin: admin, group: group, memberID: resp.MemberId, coord: coord}, nil
		case messages.ErrorCode_COORDINATOR_NOT_AVAILABLE, messages.ErrorCode_NOT_COORDINATOR:
		default:
			return nil, resp.Error.Err(resp.ErrorMessage)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w (gave up: %v)", resp.Error.Err(resp.ErrorMessage), ctx.Err())
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, time.Second)
	}
}

// MemberID is the subscriber's member id in the group.
func (s *Subscription) MemberID() string { return s.memberID }

// Close removes the subscriber from the group.
func (s *Subscription) Close(ctx context.Context) error {
	defer s.admin.Close()
	coord, err := s.admin.FindCoordinator(ctx, s.group)
	if err != nil {
		return err
	}
	res, err := request(s.admin.node.system, coord, &messages.UnsubscribeRequest{Group: s.group, MemberId: s.memberID}, s.admin.timeout(ctx))
	if err != nil {
		return err
	}
	if r, ok := res.(*messages.LeaveGroupResponse); ok {
		return r.Error.Err(r.ErrorMessage)
	}
	return nil
}
