package client

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/eventstream"
	"github.com/asynkron/protoactor-go/remote"

	"github.com/sluicemq/sluice/messages"
)

// System returns the actor system this process's clients run on (started
// with opts' ListenAddr if it is not running yet). Actors spawned on it can
// be push subscribers: brokers push to them over the client's sessions
// (or, with Sessions(false), over connections they open to ListenAddr).
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
	admin  *Admin
	group  string
	topics []string
	pid    *actor.PID

	mu       sync.Mutex
	memberID string
	coord    string
	closed   bool
	// again is set while a subscription lost with its session is made anew.
	again bool
	lost  *eventstream.Subscription
	stop  context.CancelFunc
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
	memberID, coord, err := subscribe(ctx, admin, group, topics, pid)
	if err != nil {
		admin.Close()
		return nil, err
	}
	s := &Subscription{admin: admin, group: group, topics: topics, pid: pid, memberID: memberID, coord: coord}
	if system := admin.node.system; overSession(system, coord) {
		// The broker reaches the actor through the session to the
		// coordinator; when it breaks, the member goes with it, and the
		// subscriber joins again through a new one.
		s.lost = system.EventStream.Subscribe(func(evt any) {
			if e, ok := evt.(*remote.EndpointTerminatedEvent); ok {
				s.sessionLost(e.Address)
			}
		})
	}
	return s, nil
}

// sessionLost subscribes again, in the background, when the session to the
// coordinator at addr ended.
func (s *Subscription) sessionLost(addr string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.again || addr != s.coord {
		return
	}
	s.again = true
	ctx, cancel := context.WithCancel(context.Background())
	s.stop = cancel
	go s.subscribeAgain(ctx)
}

// subscribeAgain makes the subscriber a member again, retrying while the
// cluster elects a new coordinator, until it is or the subscription closes
// or the actor stops.
func (s *Subscription) subscribeAgain(ctx context.Context) {
	system := s.admin.node.system
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		if _, alive := system.ProcessRegistry.Get(s.pid); !alive {
			break
		}
		actx, cancel := context.WithTimeout(ctx, 30*time.Second)
		memberID, coord, err := subscribe(actx, s.admin, s.group, s.topics, s.pid)
		cancel()
		if err == nil {
			s.mu.Lock()
			s.memberID, s.coord, s.again = memberID, coord, false
			s.mu.Unlock()
			return
		}
		s.admin.cfg.logger.Warn("push subscriber lost its session and could not join its group again yet; retrying",
			"group", s.group, "error", err, "retry_in", backoff)
		select {
		case <-ctx.Done():
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
	s.mu.Lock()
	s.again = false
	s.mu.Unlock()
}

// subscribe sends the subscription to the group's coordinator, again
// (after finding it anew) while the coordinator is loading or has moved:
// neither answer means a member was added. It returns the member id and
// the coordinator's address.
func subscribe(ctx context.Context, admin *Admin, group string, topics []string, pid *actor.PID) (string, string, error) {
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
			return "", "", err
		}
		res, err := request(admin.node.system, coord, req, admin.timeout(ctx))
		if err != nil {
			return "", "", err
		}
		resp, ok := res.(*messages.SubscribeResponse)
		if !ok {
			return "", "", fmt.Errorf("unexpected answer %T", res)
		}
		switch resp.Error {
		case messages.ErrorCode_NONE:
			return resp.MemberId, coord, nil
		case messages.ErrorCode_COORDINATOR_NOT_AVAILABLE, messages.ErrorCode_NOT_COORDINATOR:
		default:
			return "", "", resp.Error.Err(resp.ErrorMessage)
		}
		select {
		case <-ctx.Done():
			return "", "", fmt.Errorf("%w (gave up: %v)", resp.Error.Err(resp.ErrorMessage), ctx.Err())
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, time.Second)
	}
}

// MemberID is the subscriber's member id in the group (a new one after a
// session to the coordinator broke and the subscriber joined again).
func (s *Subscription) MemberID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.memberID
}

// Close removes the subscriber from the group.
func (s *Subscription) Close(ctx context.Context) error {
	defer s.admin.Close()
	s.mu.Lock()
	s.closed = true
	if s.stop != nil {
		s.stop()
	}
	if s.lost != nil {
		s.admin.node.system.EventStream.Unsubscribe(s.lost)
	}
	memberID := s.memberID
	s.mu.Unlock()
	coord, err := s.admin.FindCoordinator(ctx, s.group)
	if err != nil {
		return err
	}
	res, err := request(s.admin.node.system, coord, &messages.UnsubscribeRequest{Group: s.group, MemberId: memberID}, s.admin.timeout(ctx))
	if err != nil {
		return err
	}
	if r, ok := res.(*messages.LeaveGroupResponse); ok {
		return r.Error.Err(r.ErrorMessage)
	}
	return nil
}
