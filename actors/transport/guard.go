package transport

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/asynkron/protoactor-go/remote"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/sluicemq/sluice/messages"
)

// protoSerializerID is protoactor's protobuf serializer, the only one we accept.
const protoSerializerID = 0

var invalidMessageName = string(proto.MessageName(&messages.InvalidMessage{}))

// guardStream wraps every incoming remote stream so that each received
// MessageBatch is checked before protoactor's endpoint reader sees it.
// protoactor indexes arrays and dereferences type lookups from the batch
// without checks; a bad envelope would panic the process.
func guardStream(logger *slog.Logger) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		return handler(srv, &guardedStream{ServerStream: ss, logger: logger})
	}
}

// guardUnary refuses the remote's unary diagnostics calls, which panic in
// this protoactor version.
func guardUnary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	return nil, status.Errorf(codes.Unimplemented, "%s is not served", info.FullMethod)
}

type guardedStream struct {
	grpc.ServerStream
	logger *slog.Logger
}

func (s *guardedStream) RecvMsg(m any) error {
	if err := s.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	rm, ok := m.(*remote.RemoteMessage)
	if !ok {
		return nil
	}
	batch := rm.GetMessageBatch()
	if batch == nil {
		return nil
	}
	replaced, err := SanitizeBatch(batch)
	if err != nil {
		s.logger.Warn("closing remote stream with a malformed message batch", "error", err)
		return status.Error(codes.InvalidArgument, err.Error())
	}
	if replaced > 0 {
		s.logger.Warn("replaced undecodable remote messages", "count", replaced)
	}
	return nil
}

// ErrMalformedBatch is returned for a batch whose structure cannot be
// repaired (targets or senders out of range).
var ErrMalformedBatch = errors.New("malformed message batch")

// SanitizeBatch checks every envelope of b in place. Envelopes whose message
// cannot be decoded are replaced by a messages.InvalidMessage addressed to the
// same target, so the target can answer with an error. It returns how many
// envelopes it replaced, or an error for a batch that cannot be delivered at all.
func SanitizeBatch(b *remote.MessageBatch) (replaced int, err error) {
	invalidID := int32(-1)
	for i, env := range b.Envelopes {
		if env == nil {
			return replaced, fmt.Errorf("%w: envelope %d is empty", ErrMalformedBatch, i)
		}
		if env.Target < 0 || int(env.Target) >= len(b.Targets) || b.Targets[env.Target] == nil {
			return replaced, fmt.Errorf("%w: envelope %d targets index %d of %d", ErrMalformedBatch, i, env.Target, len(b.Targets))
		}
		if env.Sender < 0 || int(env.Sender) > len(b.Senders) || (env.Sender > 0 && b.Senders[env.Sender-1] == nil) {
			return replaced, fmt.Errorf("%w: envelope %d has sender index %d of %d", ErrMalformedBatch, i, env.Sender, len(b.Senders))
		}
		typeName, reason := checkEnvelope(b, env)
		if reason == "" {
			continue
		}
		if invalidID < 0 {
			invalidID = int32(len(b.TypeNames))
			b.TypeNames = append(b.TypeNames, invalidMessageName)
		}
		data, _ := proto.Marshal(&messages.InvalidMessage{TypeName: typeName, Reason: reason})
		env.TypeId = invalidID
		env.SerializerId = protoSerializerID
		env.MessageData = data
		replaced++
	}
	return replaced, nil
}

// checkEnvelope returns the envelope's type name and, when it cannot be
// decoded safely, the reason.
func checkEnvelope(b *remote.MessageBatch, env *remote.MessageEnvelope) (string, string) {
	if env.TypeId < 0 || int(env.TypeId) >= len(b.TypeNames) {
		return "", fmt.Sprintf("type id %d out of range", env.TypeId)
	}
	name := b.TypeNames[env.TypeId]
	if env.SerializerId != protoSerializerID {
		return name, fmt.Sprintf("serializer %d is not accepted", env.SerializerId)
	}
	if _, err := protoregistry.GlobalTypes.FindMessageByName(protoreflect.FullName(name)); err != nil {
		return name, "unknown message type"
	}
	if err := checkWireFormat(env.MessageData); err != nil {
		return name, err.Error()
	}
	return name, ""
}

// checkWireFormat walks the top-level protobuf fields of data without
// allocating, so framing errors are caught before the endpoint reader
// decodes (and would drop the whole stream on) them.
func checkWireFormat(data []byte) error {
	for len(data) > 0 {
		_, _, n := protowire.ConsumeField(data)
		if n < 0 {
			return fmt.Errorf("bad protobuf framing: %v", protowire.ParseError(n))
		}
		data = data[n:]
	}
	return nil
}
