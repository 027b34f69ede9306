package transport

import (
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"

	"github.com/sluicemq/sluice/messages"
)

// spyProcess counts the messages sent to it, as they are sent.
type spyProcess struct{ got atomic.Int32 }

func (s *spyProcess) SendUserMessage(*actor.PID, any)   { s.got.Add(1) }
func (s *spyProcess) SendSystemMessage(*actor.PID, any) {}
func (s *spyProcess) Stop(*actor.PID)                   {}

// A session's answers go only back on its own stream: a request whose
// sender names an actor of the node (to have the answer delivered there)
// is delivered without it, and nothing reaches that actor; the session's
// next request, with a sender of its own, is answered on the stream.
func TestSessionAnswersOnlyOnItsStream(t *testing.T) {
	// The node under test is this process's: a broker actor, and a spy
	// where a forged sender would send the answer.
	brokerProps := actor.PropsFromFunc(func(ctx actor.Context) {
		if _, ok := ctx.Message().(*messages.MetadataRequest); ok {
			ctx.Respond(&messages.MetadataResponse{ClusterId: "alive"})
		}
	})
	if _, err := sender.System.Root.SpawnNamed(brokerProps, BrokerActorName); err != nil {
		t.Fatal(err)
	}
	spy := &spyProcess{}
	spyPID, _ := sender.System.ProcessRegistry.Add(spy, "spy")
	defer sender.System.ProcessRegistry.Remove(spyPID)

	conn, err := grpc.Dial(sender.Addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stream, err := conn.NewStream(ctx, sessionDesc, SessionMethod)
	if err != nil {
		t.Fatal(err)
	}
	send := func(m *remote.RemoteMessage) {
		t.Helper()
		if err := stream.SendMsg(m); err != nil {
			t.Fatal(err)
		}
	}
	send(&remote.RemoteMessage{MessageType: &remote.RemoteMessage_ConnectRequest{ConnectRequest: &remote.ConnectRequest{
		ConnectionType: &remote.ConnectRequest_ServerConnection{ServerConnection: &remote.ServerConnection{Address: sessionAddress}}}}})
	request := func(from *actor.PID) {
		t.Helper()
		data, _ := proto.Marshal(&messages.MetadataRequest{})
		send(&remote.RemoteMessage{MessageType: &remote.RemoteMessage_MessageBatch{MessageBatch: &remote.MessageBatch{
			TypeNames: []string{"sluice.MetadataRequest"}, Targets: []*actor.PID{BrokerPID(sender.Addr)}, Senders: []*actor.PID{from},
			Envelopes: []*remote.MessageEnvelope{{TypeId: 0, Target: 0, Sender: 1, MessageData: data, SerializerId: protoSerializerID}}}}})
	}
	request(spyPID)
	request(actor.NewPID(sessionAddress, "mine"))
	m := &remote.RemoteMessage{}
	if err := stream.RecvMsg(m); err != nil {
		t.Fatal(err)
	}
	b := m.GetMessageBatch()
	if b == nil || len(b.Envelopes) != 1 || b.Targets[b.Envelopes[0].Target].Id != "mine" {
		t.Fatalf("the session got %v, want the answer to its own sender", m)
	}
	// The broker actor answered the forged request first, if at all.
	if n := spy.got.Load(); n != 0 {
		t.Fatalf("the actor a forged sender named got %d messages", n)
	}
}

// A broker that does not serve sessions (an earlier version) answers a
// session's first request with Unimplemented: the request hears that the
// broker is not reachable, and the node sends to its broker actor
// directly from then on.
func TestSessionFallsBackWhereNotServed(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer() // no services at all
	go srv.Serve(lis)
	defer srv.Stop()
	addr := lis.Addr().String()
	res, err := sender.System.Root.RequestFuture(sender.SessionPID(addr), &messages.MetadataRequest{}, 10*time.Second).Result()
	if _, dead := res.(*actor.DeadLetterResponse); !dead && err != actor.ErrDeadLetter {
		t.Fatalf("answer %T %v, %v; want a dead letter", res, res, err)
	}
	if pid := sender.SessionPID(addr); !pid.Equal(BrokerPID(addr)) {
		t.Fatalf("after Unimplemented the node sends to %v, want the broker actor", pid)
	}
}
