package transport

import (
	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/grpc/encoding"
	_ "google.golang.org/grpc/encoding/proto" // registers protoCodec
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// A message sent over a session is marshalled once, straight into the
// RemoteMessage that carries it: protoactor's way (marshal the message,
// then marshal the batch holding those bytes) copies a produce request's
// records twice, which was a fifth of a producing client's CPU.

// encodedMessage is a RemoteMessage already in its wire form; rawCodec
// sends it as it is.
type encodedMessage []byte

// encodeEnvelope returns the wire form of a RemoteMessage holding a batch
// of one envelope: msg for target, from sender (nil: none). It decodes to
// what protoactor's batch of the same envelope does.
func encodeEnvelope(msg proto.Message, target, sender *actor.PID) (encodedMessage, error) {
	typeName := string(proto.MessageName(msg))
	opts := proto.MarshalOptions{}
	msgSize := opts.Size(msg)
	envelope := 0
	if msgSize > 0 {
		envelope += protowire.SizeTag(2) + protowire.SizeBytes(msgSize)
	}
	if sender != nil {
		envelope += protowire.SizeTag(4) + protowire.SizeVarint(1)
	}
	batch := protowire.SizeTag(1) + protowire.SizeBytes(len(typeName)) +
		protowire.SizeTag(2) + protowire.SizeBytes(pidSize(target)) +
		protowire.SizeTag(3) + protowire.SizeBytes(envelope)
	if sender != nil {
		batch += protowire.SizeTag(4) + protowire.SizeBytes(pidSize(sender))
	}
	b := make([]byte, 0, protowire.SizeTag(1)+protowire.SizeBytes(batch))
	b = protowire.AppendTag(b, 1, protowire.BytesType) // RemoteMessage.message_batch
	b = protowire.AppendVarint(b, uint64(batch))
	b = protowire.AppendTag(b, 1, protowire.BytesType) // MessageBatch.type_names
	b = protowire.AppendString(b, typeName)
	b = protowire.AppendTag(b, 2, protowire.BytesType) // MessageBatch.targets
	b = appendPID(b, target)
	b = protowire.AppendTag(b, 3, protowire.BytesType) // MessageBatch.envelopes
	b = protowire.AppendVarint(b, uint64(envelope))
	// type_id, target and serializer_id are 0 (the first type, the first
	// target, protobuf) and so not written.
	if msgSize > 0 {
		b = protowire.AppendTag(b, 2, protowire.BytesType) // MessageEnvelope.message_data
		b = protowire.AppendVarint(b, uint64(msgSize))
		var err error
		if b, err = opts.MarshalAppend(b, msg); err != nil {
			return nil, err
		}
	}
	if sender != nil {
		b = protowire.AppendTag(b, 4, protowire.VarintType) // MessageEnvelope.sender: the first
		b = protowire.AppendVarint(b, 1)
		b = protowire.AppendTag(b, 4, protowire.BytesType) // MessageBatch.senders
		b = appendPID(b, sender)
	}
	return b, nil
}

// pidSize is the size of pid's encoding (actor.PID: Address, Id,
// request_id).
func pidSize(pid *actor.PID) int {
	n := 0
	if pid.Address != "" {
		n += protowire.SizeTag(1) + protowire.SizeBytes(len(pid.Address))
	}
	if pid.Id != "" {
		n += protowire.SizeTag(2) + protowire.SizeBytes(len(pid.Id))
	}
	if pid.RequestId != 0 {
		n += protowire.SizeTag(3) + protowire.SizeVarint(uint64(pid.RequestId))
	}
	return n
}

// appendPID appends pid's encoding, length first.
func appendPID(b []byte, pid *actor.PID) []byte {
	b = protowire.AppendVarint(b, uint64(pidSize(pid)))
	if pid.Address != "" {
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		b = protowire.AppendString(b, pid.Address)
	}
	if pid.Id != "" {
		b = protowire.AppendTag(b, 2, protowire.BytesType)
		b = protowire.AppendString(b, pid.Id)
	}
	if pid.RequestId != 0 {
		b = protowire.AppendTag(b, 3, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(pid.RequestId))
	}
	return b
}

// rawCodec is gRPC's protobuf codec, except that it sends an
// encodedMessage as it is.
type rawCodec struct{}

// protoCodec is gRPC's protobuf codec, which rawCodec hands the rest to.
var protoCodec = encoding.GetCodec("proto")

func (rawCodec) Marshal(v any) ([]byte, error) {
	if m, ok := v.(encodedMessage); ok {
		return m, nil
	}
	return protoCodec.Marshal(v)
}

func (rawCodec) Unmarshal(data []byte, v any) error { return protoCodec.Unmarshal(data, v) }

// Name is the protobuf codec's: the peer reads what this one writes as
// protobuf.
func (rawCodec) Name() string { return "proto" }
