package coordinator

import (
	"google.golang.org/protobuf/proto"

	"github.com/sluicemq/sluice/messages"
)

// GroupOf returns the group a message is addressed to.
func GroupOf(msg any) (string, bool) {
	switch m := msg.(type) {
	case *messages.JoinGroupRequest:
		return m.Group, true
	case *messages.SyncGroupRequest:
		return m.Group, true
	case *messages.HeartbeatRequest:
		return m.Group, true
	case *messages.LeaveGroupRequest:
		return m.Group, true
	case *messages.OffsetCommitRequest:
		return m.Group, true
	case *messages.OffsetFetchRequest:
		return m.Group, true
	case *messages.DescribeGroupRequest:
		return m.Group, true
	case *messages.DeleteGroupRequest:
		return m.Group, true
	case *messages.DeleteOffsetsRequest:
		return m.Group, true
	case *messages.SubscribeRequest:
		return m.Group, true
	case *messages.UnsubscribeRequest:
		return m.Group, true
	case *messages.PushCredit:
		return m.Group, true
	case *messages.PushAck:
		return m.Group, true
	}
	return "", false
}

// GroupError builds the error answer of a group request (nil for
// PushCredit, which is never answered).
func GroupError(msg any, code messages.ErrorCode, text string) proto.Message {
	switch msg.(type) {
	case *messages.JoinGroupRequest:
		return &messages.JoinGroupResponse{Error: code, ErrorMessage: text}
	case *messages.SyncGroupRequest:
		return &messages.SyncGroupResponse{Error: code, ErrorMessage: text}
	case *messages.HeartbeatRequest:
		return &messages.HeartbeatResponse{Error: code, ErrorMessage: text}
	case *messages.LeaveGroupRequest:
		return &messages.LeaveGroupResponse{Error: code, ErrorMessage: text}
	case *messages.OffsetCommitRequest:
		return &messages.OffsetCommitResponse{Error: code, ErrorMessage: text}
	case *messages.OffsetFetchRequest:
		return &messages.OffsetFetchResponse{Error: code, ErrorMessage: text}
	case *messages.DescribeGroupRequest:
		return &messages.DescribeGroupResponse{Error: code, ErrorMessage: text}
	case *messages.DeleteGroupRequest:
		return &messages.DeleteGroupResponse{Error: code, ErrorMessage: text}
	case *messages.DeleteOffsetsRequest:
		return &messages.DeleteOffsetsResponse{Error: code, ErrorMessage: text}
	case *messages.SubscribeRequest:
		return &messages.SubscribeResponse{Error: code, ErrorMessage: text}
	case *messages.UnsubscribeRequest:
		return &messages.LeaveGroupResponse{Error: code, ErrorMessage: text}
	case *messages.PushAck: // answered only when sent as a request
		return &messages.OffsetCommitResponse{Error: code, ErrorMessage: text}
	}
	return nil
}
