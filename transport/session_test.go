package transport

import (
	"context"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
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
	startSessionBroker(t)
	spy := &spyProcess{}
	spyPID, _ := sender.System.ProcessRegistry.Add(spy, "spy")
	defer sender.System.ProcessRegistry.Remove(spyPID)

	ss := openSession(t)
	ss.request(&messages.MetadataRequest{}, spyPID)
	ss.request(&messages.MetadataRequest{}, actor.NewPID(sessionAddress, "mine"))
	b := ss.next()
	if len(b.Envelopes) != 1 || b.Targets[b.Envelopes[0].Target].Id != "mine" {
		t.Fatalf("the session got %v, want the answer to its own sender", b)
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
	for err == nil && !sender.UsesSession(lis.Addr().String()) {
		// A port an earlier run of this test (-count) had: the node
		// already knows it serves no sessions.
		defer lis.Close()
		lis, err = net.Listen("tcp", "127.0.0.1:0")
	}
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

// sessionSubscribes has each SubscribeRequest the test broker actor got.
var sessionSubscribes = make(chan *messages.SubscribeRequest, 16)

var sessionBrokerOnce sync.Once

// startSessionBroker starts this process's broker actor for the session
// tests: it answers metadata and subscriptions.
func startSessionBroker(t *testing.T) {
	sessionBrokerOnce.Do(func() {
		props := actor.PropsFromFunc(func(ctx actor.Context) {
			switch m := ctx.Message().(type) {
			case *messages.MetadataRequest:
				ctx.Respond(&messages.MetadataResponse{ClusterId: "alive"})
			case *messages.SubscribeRequest:
				sessionSubscribes <- m
				ctx.Respond(&messages.SubscribeResponse{MemberId: "m"})
			}
		})
		if _, err := sender.System.Root.SpawnNamed(props, BrokerActorName); err != nil {
			t.Fatal(err)
		}
	})
}

// testSession is the raw client end of a session to this process's node.
type testSession struct {
	t      *testing.T
	stream grpc.ClientStream
}

func openSession(t *testing.T) *testSession {
	t.Helper()
	conn, err := grpc.Dial(sender.Addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	stream, err := conn.NewStream(ctx, sessionDesc, SessionMethod)
	if err != nil {
		t.Fatal(err)
	}
	ss := &testSession{t: t, stream: stream}
	ss.send(&remote.RemoteMessage{MessageType: &remote.RemoteMessage_ConnectRequest{ConnectRequest: &remote.ConnectRequest{
		ConnectionType: &remote.ConnectRequest_ServerConnection{ServerConnection: &remote.ServerConnection{Address: sessionAddress}}}}})
	return ss
}

func (ss *testSession) send(m *remote.RemoteMessage) {
	ss.t.Helper()
	if err := ss.stream.SendMsg(m); err != nil {
		ss.t.Fatal(err)
	}
}

// request sends msg to the broker actor (from nil: without a sender).
func (ss *testSession) request(msg proto.Message, from *actor.PID) {
	ss.t.Helper()
	data, typeName, err := remote.Serialize(msg, protoSerializerID)
	if err != nil {
		ss.t.Fatal(err)
	}
	b := &remote.MessageBatch{TypeNames: []string{typeName}, Targets: []*actor.PID{BrokerPID(sender.Addr)},
		Envelopes: []*remote.MessageEnvelope{{TypeId: 0, Target: 0, MessageData: data, SerializerId: protoSerializerID}}}
	if from != nil {
		b.Senders, b.Envelopes[0].Sender = []*actor.PID{from}, 1
	}
	ss.send(&remote.RemoteMessage{MessageType: &remote.RemoteMessage_MessageBatch{MessageBatch: b}})
}

// next reads the session's next batch.
func (ss *testSession) next() *remote.MessageBatch {
	ss.t.Helper()
	for {
		m := &remote.RemoteMessage{}
		if err := ss.stream.RecvMsg(m); err != nil {
			ss.t.Fatal(err)
		}
		if b := m.GetMessageBatch(); b != nil {
			return b
		}
	}
}

// subscribe subscribes the client actor id (named as on addr) through the
// session and returns the request as the broker actor got it.
func (ss *testSession) subscribe(addr, id string) *messages.SubscribeRequest {
	ss.t.Helper()
	ss.request(&messages.SubscribeRequest{Group: "g", Topics: []string{"t"}, TargetAddress: addr, TargetId: id}, actor.NewPID(sessionAddress, "sub-"+id))
	select {
	case req := <-sessionSubscribes:
		ss.next() // the SubscribeResponse
		return req
	case <-time.After(10 * time.Second):
		ss.t.Fatal("the subscription did not reach the broker actor")
		return nil
	}
}

// A session's subscription names the session's own stand-in for the
// subscriber, whatever actor the request named: a pusher's messages to it
// come on that session's stream with the pusher as sender, nothing else
// sent to it does, and an actor of the node named by a forged request gets
// nothing. When the client reports the subscriber's end, the stand-in's
// watchers hear it.
func TestSessionPushesReachOnlyItsSubscribers(t *testing.T) {
	startSessionBroker(t)
	spy := &spyProcess{}
	spyPID, _ := sender.System.ProcessRegistry.Add(spy, "push-spy")
	defer sender.System.ProcessRegistry.Remove(spyPID)

	a, b := openSession(t), openSession(t)
	subA := a.subscribe(sender.Addr, "push-spy") // forged: names an actor of the node
	subB := b.subscribe("10.9.9.9:1", "push-spy")
	if subA.TargetAddress != sender.Addr || !strings.HasPrefix(subA.TargetId, sessionTargetPrefix) ||
		subB.TargetId == subA.TargetId || !strings.HasPrefix(subB.TargetId, sessionTargetPrefix) {
		t.Fatalf("the broker got targets %s/%s and %s/%s: want each session's own stand-in",
			subA.TargetAddress, subA.TargetId, subB.TargetAddress, subB.TargetId)
	}
	targetA := actor.NewPID(subA.TargetAddress, subA.TargetId)
	pusher := actor.NewPID(sender.Addr, "pusher")
	sender.System.Root.Send(targetA, &actor.MessageEnvelope{Message: &messages.OffsetCommitResponse{}, Sender: pusher}) // not a push: dropped
	sender.System.Root.Send(targetA, &actor.MessageEnvelope{Message: &messages.PushRecords{Group: "g", MemberId: "m"}, Sender: pusher})
	got := a.next()
	env := got.Envelopes[0]
	if got.TypeNames[env.TypeId] != "sluice.PushRecords" || got.Targets[env.Target].Id != "push-spy" ||
		env.Sender == 0 || !got.Senders[env.Sender-1].Equal(pusher) {
		t.Fatalf("session a got %v, want the PushRecords for its subscriber from the pusher", got)
	}
	if n := spy.got.Load(); n != 0 {
		t.Fatalf("the node's actor named by the forged subscription got %d messages", n)
	}

	// The subscriber stops: the session says so, and a watcher of its
	// stand-in hears it.
	ended := make(chan *actor.Terminated, 1)
	watcher := sender.System.Root.Spawn(actor.PropsFromFunc(func(ctx actor.Context) {
		switch m := ctx.Message().(type) {
		case *actor.Started:
			ctx.Watch(targetA)
		case *actor.Terminated:
			ended <- m
		}
	}))
	defer sender.System.Root.Stop(watcher)
	data, _ := proto.Marshal(&actor.Terminated{Who: actor.NewPID(sessionAddress, "push-spy")})
	a.send(&remote.RemoteMessage{MessageType: &remote.RemoteMessage_MessageBatch{MessageBatch: &remote.MessageBatch{
		TypeNames: []string{"actor.Terminated"}, Targets: []*actor.PID{BrokerPID(sender.Addr)},
		Envelopes: []*remote.MessageEnvelope{{TypeId: 0, Target: 0, MessageData: data, SerializerId: protoSerializerID}}}}})
	select {
	case m := <-ended:
		if !m.Who.Equal(targetA) {
			t.Fatalf("Terminated for %v, want %v", m.Who, targetA)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the watcher did not hear of the subscriber's end")
	}
}

// A session whose client grants credit but does not read its stream is
// closed once more than sessionQueueBytes would be queued for it: pushes
// cannot grow the broker's memory without bound.
func TestSessionThatDoesNotReadIsClosed(t *testing.T) {
	startSessionBroker(t)
	ss := openSession(t)
	sub := ss.subscribe("", "slow")
	target := actor.NewPID(sub.TargetAddress, sub.TargetId)
	value := make([]byte, 1<<20)
	pusher := actor.NewPID(sender.Addr, "pusher")
	for i := 0; i < 3*sessionQueueBytes/len(value); i++ {
		sender.System.Root.Send(target, &actor.MessageEnvelope{Sender: pusher,
			Message: &messages.PushRecords{Records: []*messages.PushedRecord{{Value: value}}}})
	}
	// Read everything written before the end: the stream must end.
	for {
		m := &remote.RemoteMessage{}
		err := ss.stream.RecvMsg(m)
		if err == nil {
			continue
		}
		if status.Code(err) != codes.ResourceExhausted {
			t.Fatalf("the stream ended with %v, want ResourceExhausted", err)
		}
		return
	}
}

// A request whose answer never comes is forgotten once the broker has
// given up on it: a long session does not keep every lost request.
func TestSessionForgetsRequestsNobodyAnswers(t *testing.T) {
	s := &clientSession{waiting: map[string]waitingRequest{}}
	start := time.Now()
	s.waiting["old"] = waitingRequest{sender: actor.NewPID("nonhost", "a"), sent: start}
	s.waiting["new"] = waitingRequest{sender: actor.NewPID("nonhost", "b"), sent: start.Add(2 * time.Minute)}
	s.sweep(start.Add(sessionAnswerTimeout))
	if len(s.waiting) != 2 {
		t.Fatalf("swept %v while the broker may still answer", s.waiting)
	}
	s.sweep(start.Add(sessionAnswerTimeout + 2*time.Minute))
	if _, ok := s.waiting["old"]; ok || len(s.waiting) != 1 {
		t.Fatalf("after the broker gave up: %v, want only the newer request", s.waiting)
	}
}

// Until the node serves sessions (its broker actor runs), a session is
// refused as Unavailable: protoactor must not be handed a request for an
// actor it is still spawning, which panics the process.
func TestSessionRefusedUntilServed(t *testing.T) {
	sender.serving.Store(false)
	defer sender.ServeSessions()
	ss := openSession(t)
	err := ss.stream.RecvMsg(&remote.RemoteMessage{})
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("a session before the broker runs: %v, want Unavailable", err)
	}
}

// A node's messages to its own address are local: they open no session,
// so a program that runs a broker actor in its own actor system (an
// embedded broker, a test's stand-in) reaches it whether or not the node
// serves sessions.
func TestSessionNotOpenedToItself(t *testing.T) {
	startSessionBroker(t)
	sender.serving.Store(false)
	defer sender.ServeSessions()
	if sender.UsesSession(sender.Addr) {
		t.Fatal("the node would use a session to its own address")
	}
	pid := sender.SessionPID(sender.Addr)
	if !pid.Equal(BrokerPID(sender.Addr)) {
		t.Fatalf("the node sends to its own broker actor through %v", pid)
	}
	res, err := sender.System.Root.RequestFuture(pid, &messages.MetadataRequest{}, 10*time.Second).Result()
	if m, ok := res.(*messages.MetadataResponse); err != nil || !ok || m.ClusterId != "alive" {
		t.Fatalf("answer %T %v, %v; want the broker actor's", res, res, err)
	}
}
