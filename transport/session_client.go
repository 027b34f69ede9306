package transport

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// The client side of a session (session.go): a process on the client's
// node that stands for the broker at one address. A message sent to it
// goes to that broker's broker actor over the session's stream; an answer
// comes back on the stream to the sender. When the stream breaks, every
// request still waiting hears a DeadLetterResponse (as from a broker that
// is gone), the node's event stream an EndpointTerminatedEvent for the
// address, and the next message opens a new session.

// sessionDesc describes the session stream to gRPC.
var sessionDesc = &grpc.StreamDesc{StreamName: "Open", ServerStreams: true, ClientStreams: true}

// SessionPID returns the local stand-in for the broker actor at addr, whose
// messages travel over a session this node opens.
func (n *Node) SessionPID(addr string) *actor.PID {
	n.sessionsMu.Lock()
	defer n.sessionsMu.Unlock()
	if n.noSessions[addr] {
		// A broker of an earlier version: it answers over a connection
		// it opens to this node.
		return BrokerPID(addr)
	}
	if s := n.sessions[addr]; s != nil {
		return s.pid
	}
	if n.sessions == nil {
		n.sessions = map[string]*clientSession{}
	}
	s := &clientSession{node: n, addr: addr, waiting: map[string]*actor.PID{}, wake: make(chan struct{}, 1), done: make(chan struct{})}
	// An id of its own: the session before it, ending, may not have left
	// the registry yet.
	n.sessionSeq++
	s.pid, _ = n.System.ProcessRegistry.Add(s, fmt.Sprintf("session$%s$%d", addr, n.sessionSeq))
	n.sessions[addr] = s
	go s.run()
	return s.pid
}

// clientSession is one session to one broker.
type clientSession struct {
	node *Node
	addr string
	pid  *actor.PID

	mu sync.Mutex
	// waiting maps each request's sender id to its sender, until the
	// answer comes.
	waiting map[string]*actor.PID
	queue   []*remote.MessageBatch
	ended   bool
	wake    chan struct{}
	done    chan struct{}
	nextID  atomic.Uint64
}

// SendUserMessage sends message (an envelope when it has a sender) to the
// broker; it never blocks.
func (s *clientSession) SendUserMessage(_ *actor.PID, message any) {
	_, msg, sender := actor.UnwrapEnvelope(message)
	data, typeName, err := remote.Serialize(msg, protoSerializerID)
	if err != nil {
		s.deadLetter(sender)
		return
	}
	b := &remote.MessageBatch{TypeNames: []string{typeName}, Targets: []*actor.PID{BrokerPID(s.addr)},
		Envelopes: []*remote.MessageEnvelope{{TypeId: 0, Target: 0, MessageData: data, SerializerId: protoSerializerID}}}
	s.mu.Lock()
	if s.ended {
		s.mu.Unlock()
		s.deadLetter(sender)
		return
	}
	if sender != nil {
		// The broker sees a sender of the session's own; its answer names
		// it, and goes to the sender here.
		id := strconv.FormatUint(s.nextID.Add(1), 36)
		s.waiting[id] = sender
		b.Senders = []*actor.PID{actor.NewPID(sessionAddress, id)}
		b.Envelopes[0].Sender = 1
	}
	s.queue = append(s.queue, b)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// SendSystemMessage drops system messages: a session carries requests.
func (s *clientSession) SendSystemMessage(*actor.PID, any) {}

// Stop ends the session.
func (s *clientSession) Stop(*actor.PID) { s.end() }

// deadLetter tells sender its request reached no broker.
func (s *clientSession) deadLetter(sender *actor.PID) {
	if sender != nil {
		s.node.System.Root.Send(sender, &actor.DeadLetterResponse{Target: BrokerPID(s.addr)})
	}
}

// run opens the stream, then writes what is queued and delivers what
// comes back until the stream or the node ends.
func (s *clientSession) run() {
	defer s.end()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	conn, err := grpc.DialContext(ctx, s.addr, s.node.dialOptions...)
	if err != nil {
		return
	}
	defer conn.Close()
	stream, err := conn.NewStream(ctx, sessionDesc, SessionMethod)
	if err != nil {
		return
	}
	hello := &remote.RemoteMessage{MessageType: &remote.RemoteMessage_ConnectRequest{ConnectRequest: &remote.ConnectRequest{
		ConnectionType: &remote.ConnectRequest_ServerConnection{ServerConnection: &remote.ServerConnection{
			SystemId: s.node.System.ID, Address: sessionAddress}}}}}
	if err := stream.SendMsg(hello); err != nil {
		return
	}
	go func() {
		defer cancel()
		s.read(stream)
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.done:
			return
		case <-s.wake:
		}
		s.mu.Lock()
		batches := s.queue
		s.queue = nil
		s.mu.Unlock()
		for _, b := range batches {
			if err := stream.SendMsg(&remote.RemoteMessage{MessageType: &remote.RemoteMessage_MessageBatch{MessageBatch: b}}); err != nil {
				return
			}
		}
	}
}

// read delivers answers to the senders that wait for them.
func (s *clientSession) read(stream grpc.ClientStream) {
	for {
		m := &remote.RemoteMessage{}
		if err := stream.RecvMsg(m); err != nil {
			if status.Code(err) == codes.Unimplemented {
				s.node.sessionsMu.Lock()
				if s.node.noSessions == nil {
					s.node.noSessions = map[string]bool{}
				}
				s.node.noSessions[s.addr] = true
				s.node.sessionsMu.Unlock()
			}
			return
		}
		b := m.GetMessageBatch()
		if b == nil {
			continue
		}
		for _, env := range b.Envelopes {
			if env.TypeId < 0 || int(env.TypeId) >= len(b.TypeNames) || env.Target < 0 || int(env.Target) >= len(b.Targets) {
				continue
			}
			msg, err := remote.Deserialize(env.MessageData, b.TypeNames[env.TypeId], env.SerializerId)
			if err != nil {
				continue
			}
			id := b.Targets[env.Target].GetId()
			s.mu.Lock()
			to := s.waiting[id]
			delete(s.waiting, id)
			s.mu.Unlock()
			if to != nil {
				s.node.System.Root.Send(to, msg)
			}
		}
	}
}

// end closes the session: waiting requests hear that the broker is gone,
// and the address's next message opens a new session.
func (s *clientSession) end() {
	s.mu.Lock()
	if s.ended {
		s.mu.Unlock()
		return
	}
	s.ended = true
	waiting := s.waiting
	s.waiting = nil
	s.queue = nil
	close(s.done)
	s.mu.Unlock()
	s.node.sessionsMu.Lock()
	if s.node.sessions[s.addr] == s {
		delete(s.node.sessions, s.addr)
	}
	s.node.sessionsMu.Unlock()
	s.node.System.ProcessRegistry.Remove(s.pid)
	for _, to := range waiting { // queued requests' senders among them
		s.deadLetter(to)
	}
	s.node.System.EventStream.Publish(&remote.EndpointTerminatedEvent{Address: s.addr})
}
