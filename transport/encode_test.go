package transport

import (
	"testing"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"
	"google.golang.org/protobuf/proto"

	"github.com/sluicemq/sluice/messages"
)

// An envelope encoded in one pass decodes to the batch protoactor would
// have sent, with and without a sender and for an empty message.
func TestEncodeEnvelopeDecodesAsProtoactorsBatch(t *testing.T) {
	target := actor.NewPID("127.0.0.1:9470", BrokerActorName)
	for _, c := range []struct {
		msg    proto.Message
		sender *actor.PID
	}{
		{&messages.ProduceRequest{Topic: "t", Partition: 3, Acks: -1, Records: make([]byte, 70_000), TimeoutMs: 30_000}, actor.NewPID(sessionAddress, "7")},
		{&messages.ProduceRequest{Topic: "t", Records: []byte("r")}, nil},
		{&messages.MetadataRequest{}, actor.NewPID(sessionAddress, "zz")},
		{&messages.MetadataRequest{}, nil},
		{&messages.FetchResponse{Topic: "t", Batches: [][]byte{[]byte("b")}}, &actor.PID{Address: "127.0.0.1:9470", Id: "pusher$1", RequestId: 9}},
	} {
		data, typeName, err := remote.Serialize(c.msg, protoSerializerID)
		if err != nil {
			t.Fatal(err)
		}
		want := &remote.RemoteMessage{MessageType: &remote.RemoteMessage_MessageBatch{MessageBatch: &remote.MessageBatch{
			TypeNames: []string{typeName}, Targets: []*actor.PID{target},
			Envelopes: []*remote.MessageEnvelope{{MessageData: data, SerializerId: protoSerializerID}}}}}
		if c.sender != nil {
			want.GetMessageBatch().Senders = []*actor.PID{c.sender}
			want.GetMessageBatch().Envelopes[0].Sender = 1
		}
		encoded, err := encodeEnvelope(c.msg, target, c.sender)
		if err != nil {
			t.Fatal(err)
		}
		got := &remote.RemoteMessage{}
		if err := proto.Unmarshal(encoded, got); err != nil {
			t.Fatalf("%T: %v", c.msg, err)
		}
		if !proto.Equal(got, want) {
			t.Fatalf("%T decodes to %v, want %v", c.msg, got, want)
		}
		if wantBytes, _ := (proto.MarshalOptions{Deterministic: true}).Marshal(want); len(wantBytes) != len(encoded) {
			t.Fatalf("%T: %d bytes, protobuf writes %d", c.msg, len(encoded), len(wantBytes))
		}
	}
}
