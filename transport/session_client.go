package transport

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/sluicemq/sluice/messages"
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
	if s := n.session(addr); s != nil {
		return s.pid
	}
	// This node's own broker actor, or a broker of an earlier version:
	// it answers over a connection it opens to this node.
	return BrokerPID(addr)
}

// UsesSession reports whether this node's messages to the broker at addr
// travel over a session (it serves them, as far as the node knows). Never
// to the node's own address: those messages are local.
func (n *Node) UsesSession(addr string) bool {
	if addr == n.System.Address() {
		return false
	}
	n.sessionsMu.Lock()
	defer n.sessionsMu.Unlock()
	return !n.noSessions[addr]
}

// session returns the open session to addr, opening one if there is none;
// nil for a broker that does not serve sessions and for the node itself.
func (n *Node) session(addr string) *clientSession {
	if addr == n.System.Address() {
		return nil
	}
	n.sessionsMu.Lock()
	defer n.sessionsMu.Unlock()
	if n.noSessions[addr] {
		return nil
	}
	if s := n.sessions[addr]; s != nil {
		return s
	}
	if n.sessions == nil {
		n.sessions = map[string]*clientSession{}
	}
	s := &clientSession{node: n, addr: addr, waiting: map[string]waitingRequest{}, subscribers: map[string]bool{},
		wake: make(chan struct{}, 1), done: make(chan struct{})}
	// An id of its own: the session before it, ending, may not have left
	// the registry yet.
	n.sessionSeq++
	s.pid, _ = n.System.ProcessRegistry.Add(s, fmt.Sprintf("session$%s$%d", addr, n.sessionSeq))
	n.sessions[addr] = s
	go s.run()
	return s
}

// waitingRequest is a request sent over a session whose answer has not
// come.
type waitingRequest struct {
	sender *actor.PID
	sent   time.Time
}

// sweepEvery spaces a session's sweeps of requests whose answers will not
// come.
const sweepEvery = time.Minute

// sweep forgets the requests sent before now less the time a broker waits
// for their answers (sessionAnswerTimeout) and a minute: the broker has
// given up on them, and their senders, on their own timeouts, long ago.
func (s *clientSession) sweep(now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, w := range s.waiting {
		if now.Sub(w.sent) > sessionAnswerTimeout+time.Minute {
			delete(s.waiting, id)
		}
	}
}

// clientSession is one session to one broker.
type clientSession struct {
	node *Node
	addr string
	pid  *actor.PID

	mu sync.Mutex
	// waiting maps each request's sender id to its sender, until the
	// answer comes or the broker has stopped waiting for it (sweep).
	waiting map[string]waitingRequest
	// subscribers are this node's actors subscribed through the session:
	// the broker pushes only to them.
	subscribers map[string]bool
	queue       []encodedMessage
	ended       bool
	wake        chan struct{}
	done        chan struct{}
	nextID      atomic.Uint64
}

// SendUserMessage sends message (an envelope when it has a sender) to the
// broker actor; it never blocks.
func (s *clientSession) SendUserMessage(_ *actor.PID, message any) { s.send(BrokerActorName, message) }

// send sends message to the actor id of the session's broker.
func (s *clientSession) send(id string, message any) {
	_, msg, sender := actor.UnwrapEnvelope(message)
	pm, ok := msg.(proto.Message)
	if !ok {
		s.deadLetter(sender)
		return
	}
	// The broker sees a sender of the session's own; its answer names it,
	// and goes to the sender here.
	var senderID string
	var sessionSender *actor.PID
	if sender != nil {
		senderID = strconv.FormatUint(s.nextID.Add(1), 36)
		sessionSender = actor.NewPID(sessionAddress, senderID)
	}
	encoded, err := encodeEnvelope(pm, actor.NewPID(s.addr, id), sessionSender)
	if err != nil {
		s.deadLetter(sender)
		return
	}
	s.mu.Lock()
	if s.ended {
		s.mu.Unlock()
		s.deadLetter(sender)
		return
	}
	var watch *actor.PID
	if sub, ok := msg.(*messages.SubscribeRequest); ok && !s.subscribers[sub.TargetId] {
		s.subscribers[sub.TargetId] = true
		watch = actor.NewPID(s.node.System.Address(), sub.TargetId)
	}
	if sender != nil {
		s.waiting[senderID] = waitingRequest{sender: sender, sent: time.Now()}
	}
	s.queue = append(s.queue, encoded)
	s.mu.Unlock()
	if watch != nil {
		// The broker learns of the subscriber's end from the session
		// (outside the lock: an actor already gone answers at once).
		p, _ := s.node.System.ProcessRegistry.Get(watch)
		p.SendSystemMessage(watch, &actor.Watch{Watcher: s.pid})
	}
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// SendSystemMessage passes on the end of a subscriber the session
// watches; other system messages are dropped.
func (s *clientSession) SendSystemMessage(_ *actor.PID, message any) {
	t, ok := message.(*actor.Terminated)
	if !ok || t.Who == nil {
		return
	}
	s.mu.Lock()
	subscribed := s.subscribers[t.Who.Id]
	delete(s.subscribers, t.Who.Id)
	s.mu.Unlock()
	if subscribed {
		s.send(BrokerActorName, &actor.Terminated{Who: actor.NewPID(sessionAddress, t.Who.Id), Why: t.Why})
	}
}

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
	stream, err := conn.NewStream(ctx, sessionDesc, SessionMethod, grpc.ForceCodec(rawCodec{}))
	if err != nil {
		return
	}
	hello := &remote.RemoteMessage{MessageType: &remote.RemoteMessage_ConnectRequest{ConnectRequest: &remote.ConnectRequest{
		ConnectionType: &remote.ConnectRequest_ServerConnection{ServerConnection: &remote.ServerConnection{
			SystemId: s.node.System.ID, Address: sessionAddress}}}}}
	// A failed send says only that the stream ended; its status (for a
	// broker that does not serve sessions, Unimplemented) comes from the
	// reader, which must have recorded it before the session ends and its
	// requests hear of it.
	if err := stream.SendMsg(hello); err != nil {
		s.read(stream)
		return
	}
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		defer cancel()
		s.read(stream)
	}()
	sweeps := time.NewTicker(sweepEvery)
	defer sweeps.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.done:
			return
		case now := <-sweeps.C:
			s.sweep(now)
			continue
		case <-s.wake:
		}
		s.mu.Lock()
		batches := s.queue
		s.queue = nil
		s.mu.Unlock()
		for _, b := range batches {
			if err := stream.SendMsg(b); err != nil {
				<-readerDone // the stream has ended: the reader learns how
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
			if env.Sender > 0 && int(env.Sender) <= len(b.Senders) {
				s.push(id, msg, b.Senders[env.Sender-1])
				continue
			}
			s.mu.Lock()
			to := s.waiting[id].sender
			delete(s.waiting, id)
			s.mu.Unlock()
			if to != nil {
				s.node.System.Root.Send(to, msg)
			}
		}
	}
}

// push delivers a pusher's message to the subscriber id of this node, if
// it subscribed through this session, with a sender that reaches the
// pusher over a session too.
func (s *clientSession) push(id string, msg any, pusher *actor.PID) {
	s.mu.Lock()
	ok := s.subscribers[id]
	s.mu.Unlock()
	if !ok || pusher == nil || pusher.Address == "" {
		return
	}
	to := actor.NewPID(s.node.System.Address(), id)
	s.node.System.Root.Send(to, &actor.MessageEnvelope{Message: msg, Sender: s.node.route(pusher)})
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
	for _, w := range waiting { // queued requests' senders among them
		s.deadLetter(w.sender)
	}
	s.node.System.EventStream.Publish(&remote.EndpointTerminatedEvent{Address: s.addr})
}

// maxRoutes bounds the routes a node keeps; past it they are dropped and
// made anew as needed (routes to pushers long gone go with them).
const maxRoutes = 4096

// route returns the local stand-in for to, an actor of a broker (a
// pusher): what a subscriber sends it goes over a session to to's broker.
func (n *Node) route(to *actor.PID) *actor.PID {
	key := pidKey(to)
	n.sessionsMu.Lock()
	defer n.sessionsMu.Unlock()
	if pid := n.routes[key]; pid != nil {
		return pid
	}
	if len(n.routes) >= maxRoutes {
		for _, pid := range n.routes {
			n.System.ProcessRegistry.Remove(pid)
		}
		n.routes = nil
	}
	if n.routes == nil {
		n.routes = map[string]*actor.PID{}
	}
	n.sessionSeq++
	pid, _ := n.System.ProcessRegistry.Add(&sessionRoute{node: n, to: to}, fmt.Sprintf("route$%d", n.sessionSeq))
	n.routes[key] = pid
	return pid
}

// sessionRoute sends what it is sent to an actor of a broker, over the
// node's session to that broker.
type sessionRoute struct {
	node *Node
	to   *actor.PID
}

func (r *sessionRoute) SendUserMessage(_ *actor.PID, message any) {
	if s := r.node.session(r.to.Address); s != nil {
		s.send(r.to.Id, message)
		return
	}
	// The broker serves no sessions: straight to it.
	if p, ok := r.node.System.ProcessRegistry.Get(r.to); ok {
		p.SendUserMessage(r.to, message)
	}
}

func (r *sessionRoute) SendSystemMessage(*actor.PID, any) {}
func (r *sessionRoute) Stop(*actor.PID)                   {}
