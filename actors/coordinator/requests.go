package coordinator

import (
	"reflect"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/proto"

	"github.com/sluicemq/sluice/actors"
	"github.com/sluicemq/sluice/messages"
)

// The requests of a group, one entry per message type: its error answer
// (when the broker or host refuses it, or the group is not coordinated
// here) and the coordinator's handler. Each names its group (GetGroup).

// groupRequest is one entry of the table.
type groupRequest struct {
	// fail builds the error answer (nil: never answered).
	fail  func(code messages.ErrorCode, text string) proto.Message
	serve func(c *groupCoordinator, ctx actor.Context, msg proto.Message)
}

// groupEntry builds the entry of requests of type M.
func groupEntry[M interface {
	proto.Message
	GetGroup() string
}](fail func(code messages.ErrorCode, text string) proto.Message, serve func(*groupCoordinator, actor.Context, M)) groupRequest {
	return groupRequest{fail: fail, serve: func(c *groupCoordinator, ctx actor.Context, m proto.Message) { serve(c, ctx, m.(M)) }}
}

var groupRequests = map[reflect.Type]groupRequest{
	reflect.TypeFor[*messages.JoinGroupRequest](): groupEntry(func(code messages.ErrorCode, text string) proto.Message {
		return &messages.JoinGroupResponse{Error: code, ErrorMessage: text}
	}, (*groupCoordinator).onJoin),
	reflect.TypeFor[*messages.SyncGroupRequest](): groupEntry(func(code messages.ErrorCode, text string) proto.Message {
		return &messages.SyncGroupResponse{Error: code, ErrorMessage: text}
	}, (*groupCoordinator).onSync),
	reflect.TypeFor[*messages.HeartbeatRequest](): groupEntry(func(code messages.ErrorCode, text string) proto.Message {
		return &messages.HeartbeatResponse{Error: code, ErrorMessage: text}
	}, (*groupCoordinator).onHeartbeat),
	reflect.TypeFor[*messages.LeaveGroupRequest](): groupEntry(leaveFail, (*groupCoordinator).onLeaveGroup),
	reflect.TypeFor[*messages.ConsumerGroupHeartbeatRequest](): groupEntry(func(code messages.ErrorCode, text string) proto.Message {
		return &messages.ConsumerGroupHeartbeatResponse{Error: code, ErrorMessage: text}
	}, (*groupCoordinator).onConsumerHeartbeat),
	reflect.TypeFor[*messages.OffsetCommitRequest](): groupEntry(commitFail, (*groupCoordinator).onCommit),
	reflect.TypeFor[*messages.OffsetFetchRequest](): groupEntry(func(code messages.ErrorCode, text string) proto.Message {
		return &messages.OffsetFetchResponse{Error: code, ErrorMessage: text}
	}, func(c *groupCoordinator, ctx actor.Context, m *messages.OffsetFetchRequest) {
		actors.Respond(ctx, c.onOffsetFetch(m))
	}),
	reflect.TypeFor[*messages.DescribeGroupRequest](): groupEntry(func(code messages.ErrorCode, text string) proto.Message {
		return &messages.DescribeGroupResponse{Error: code, ErrorMessage: text}
	}, func(c *groupCoordinator, ctx actor.Context, _ *messages.DescribeGroupRequest) {
		actors.Respond(ctx, c.describe())
	}),
	reflect.TypeFor[*messages.DeleteGroupRequest](): groupEntry(func(code messages.ErrorCode, text string) proto.Message {
		return &messages.DeleteGroupResponse{Error: code, ErrorMessage: text}
	}, func(c *groupCoordinator, ctx actor.Context, _ *messages.DeleteGroupRequest) { c.onDelete(ctx) }),
	reflect.TypeFor[*messages.DeleteOffsetsRequest](): groupEntry(func(code messages.ErrorCode, text string) proto.Message {
		return &messages.DeleteOffsetsResponse{Error: code, ErrorMessage: text}
	}, (*groupCoordinator).onDeleteOffsets),
	reflect.TypeFor[*messages.SubscribeRequest](): groupEntry(func(code messages.ErrorCode, text string) proto.Message {
		return &messages.SubscribeResponse{Error: code, ErrorMessage: text}
	}, (*groupCoordinator).onSubscribe),
	reflect.TypeFor[*messages.UnsubscribeRequest](): groupEntry(leaveFail, (*groupCoordinator).onUnsubscribe),
	// Credit is never answered; an ack only when sent as a request.
	reflect.TypeFor[*messages.PushCredit](): groupEntry(nil, (*groupCoordinator).onPushCredit),
	reflect.TypeFor[*messages.PushAck](): groupEntry(commitFail, func(c *groupCoordinator, ctx actor.Context, m *messages.PushAck) {
		c.onPushAck(ctx, m.MemberId, m, ctx.Sender())
	}),
}

func leaveFail(code messages.ErrorCode, text string) proto.Message {
	return &messages.LeaveGroupResponse{Error: code, ErrorMessage: text}
}

func commitFail(code messages.ErrorCode, text string) proto.Message {
	return &messages.OffsetCommitResponse{Error: code, ErrorMessage: text}
}

// GroupOf returns the group a message is addressed to.
func GroupOf(msg any) (string, bool) {
	if _, ok := groupRequests[reflect.TypeOf(msg)]; !ok {
		return "", false
	}
	return msg.(interface{ GetGroup() string }).GetGroup(), true
}

// GroupError builds the error answer of a group request (nil for
// PushCredit, which is never answered).
func GroupError(msg any, code messages.ErrorCode, text string) proto.Message {
	r, ok := groupRequests[reflect.TypeOf(msg)]
	if !ok || r.fail == nil {
		return nil
	}
	return r.fail(code, text)
}
