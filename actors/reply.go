package actors

import (
	"fmt"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/proto"

	"github.com/sluicemq/sluice/messages"
)

// Respond answers the current message's sender, if it has one.
func Respond(ctx actor.Context, msg any) { SendTo(ctx, ctx.Sender(), msg) }

// SendTo sends msg to pid unless pid is nil.
func SendTo(ctx actor.Context, pid *actor.PID, msg any) {
	if pid != nil {
		ctx.Send(pid, msg)
	}
}

// Unhandled answers the current message of an actor that has no case for
// it: an envelope the transport guard replaced, or any other protobuf
// message, gets UNKNOWN_MESSAGE_TYPE; protoactor's own lifecycle messages
// are ignored.
func Unhandled(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *messages.InvalidMessage:
		code := msg.Error
		if code == messages.ErrorCode_NONE {
			code = messages.ErrorCode_UNKNOWN_MESSAGE_TYPE
		}
		Respond(ctx, &messages.ErrorResponse{Error: code, Message: fmt.Sprintf("%s: %s", msg.TypeName, msg.Reason)})
	case actor.SystemMessage, actor.AutoReceiveMessage:
	case proto.Message:
		Respond(ctx, unknownMessage(msg))
	}
}

// unknownMessage is the answer to a message an actor does not handle.
func unknownMessage(msg any) *messages.ErrorResponse {
	name := fmt.Sprintf("%T", msg)
	if m, ok := msg.(proto.Message); ok {
		name = string(proto.MessageName(m))
	}
	return &messages.ErrorResponse{Error: messages.ErrorCode_UNKNOWN_MESSAGE_TYPE, Message: "this actor does not handle " + name}
}
