package transport

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/sluicemq/sluice/internal/budget"
	"github.com/sluicemq/sluice/internal/reply"
	"github.com/sluicemq/sluice/messages"
)

// A session carries a client's requests and their answers over one
// connection the client opens: no broker needs to reach the client, so a
// client behind NAT, in a container or on another host works as well as
// one beside the broker.
//
// The client opens a gRPC stream of SessionMethod on a node's listener and
// sends protoactor's own frames on it: a ConnectRequest, then
// MessageBatches addressed to the broker actor. The guard checks each
// batch as it checks a remote's (types, headers with the connection's
// principal, the restricted client's rules). The node delivers each
// envelope itself, with a reply address of its own as the sender, and
// writes the answer back on the stream to the client's sender. Answers can
// only go to the stream the request came on.

// SessionMethod is the gRPC method of a client session.
const SessionMethod = "/sluice.Session/Open"

// sessionAddress is the node address the client side of a session gives
// its senders: not a place anyone can send to.
const sessionAddress = "session"

// sessionAnswerTimeout bounds how long a request's reply address waits for
// its answer (a produce waits for its acks at most its own timeout, 30 s
// by default; a fetch for its MaxWait).
const sessionAnswerTimeout = 2 * time.Minute

// sessionWindowBytes bounds the requests of one session whose answers are
// not yet written, and the answers queued for it: the session reads its
// next request only when there is room, so a client that stops reading its
// answers stops its requests too. (Answers still to come to requests
// already read are not bounded here: a fetch's is at most its MaxBytes.)
const sessionWindowBytes = 32 << 20

// sessionQueueBytes bounds what a session's stream may have queued when a
// push comes: pushes wait on the subscriber's credit, not on the window,
// and a client that grants credit but does not read its stream is
// disconnected before it can grow the broker's memory further.
const sessionQueueBytes = 2 * sessionWindowBytes

// serveSession runs one client session on ss, a guarded stream.
func serveSession(system *actor.ActorSystem, ss grpc.ServerStream) error {
	gs, ok := ss.(*guardedStream)
	if !ok {
		return status.Error(codes.Internal, "session stream not guarded")
	}
	local := gs.origin.Local
	if local == "" {
		return status.Error(codes.Unavailable, "the node is starting")
	}
	window := budget.New(sessionWindowBytes, 0)
	w := newSessionWriter(ss, window)
	defer w.close()
	targets := newSessionTargets(system, local, w)
	defer targets.end()
	received := make(chan error, 1)
	go func() { received <- receiveSession(system, local, ss, window, w, targets) }()
	select {
	case err := <-received:
		return err
	case <-w.overflow:
		if gs.stats.shouldLog() {
			gs.logger.Warn("closed a client session that does not read what is queued for it", "peer", gs.origin.Peer,
				"principal", gs.origin.Principal, "queued_bytes_over", sessionQueueBytes)
		}
		return status.Error(codes.ResourceExhausted, fmt.Sprintf("the session's client reads too slowly: over %d bytes are queued for it", sessionQueueBytes))
	}
}

// receiveSession reads the session's requests and delivers them, each
// with a reply address of its own whose answer goes back on the stream.
func receiveSession(system *actor.ActorSystem, local string, ss grpc.ServerStream, window *budget.Budget, w *sessionWriter, targets *sessionTargets) error {
	for {
		m := &remote.RemoteMessage{}
		if err := ss.RecvMsg(m); err != nil {
			return err
		}
		b := m.GetMessageBatch()
		if b == nil {
			continue // the ConnectRequest
		}
		for _, env := range b.Envelopes {
			name := b.TypeNames[env.TypeId]
			if name == terminatedName {
				// A subscriber of the client stopped: its target ends, and
				// the coordinator watching it removes the member.
				var m actor.Terminated
				if proto.Unmarshal(env.MessageData, &m) == nil {
					targets.gone(m.Who.GetId())
				}
				continue
			}
			if !strings.HasPrefix(name, string(sluicePackage)+".") {
				continue // nothing but requests is delivered here
			}
			msg, err := remote.Deserialize(env.MessageData, name, env.SerializerId)
			if err != nil {
				continue // the guard let through only what decodes
			}
			if sub, ok := msg.(*messages.SubscribeRequest); ok {
				// The subscriber is reached through this session, whatever
				// the request names: a session gets the pushes of its own
				// subscribers only.
				if msg = targets.subscribe(sub); msg == nil {
					msg = &messages.InvalidMessage{TypeName: name, Error: messages.ErrorCode_INVALID_REQUEST,
						Reason: fmt.Sprintf("a session has at most %d push subscribers", maxSessionTargets)}
				}
			}
			target := actor.NewPID(local, b.Targets[env.Target].Id)
			var sender *actor.PID
			switch {
			case env.Sender == 0:
			case b.Senders[env.Sender-1].Address == local:
				sender = b.Senders[env.Sender-1] // the guard's, for an acks=0 produce
			default:
				n := int64(len(env.MessageData) + askOverhead)
				if err := window.Acquire(ss.Context(), "", n); err != nil {
					return status.Error(codes.Canceled, err.Error())
				}
				to := b.Senders[env.Sender-1].Id
				sender = reply.OnAnswer(system, sessionAnswerTimeout, func(res any, err error) {
					if err != nil {
						window.Release("", n) // no answer: nothing to write
						return
					}
					w.send(to, nil, res, n)
				})
			}
			system.Root.Send(target, &actor.MessageEnvelope{Header: env.MessageHeader.GetHeaderData(), Message: msg, Sender: sender})
		}
	}
}

// sessionWriter writes answers to a session's stream from one goroutine:
// answers come from many actors, and a stream takes one writer. Each
// answer gives its request's bytes back to the session's window once it
// is written (or the session ends).
type sessionWriter struct {
	ss      grpc.ServerStream
	window  *budget.Budget
	mu      sync.Mutex
	pending []queuedAnswer
	closed  bool
	wake    chan struct{}
	done    chan struct{}
	// overflow is closed when more than sessionQueueBytes would be queued.
	overflow     chan struct{}
	overflowOnce sync.Once
}

type queuedAnswer struct {
	to   string     // the client's actor: a request's sender, or a subscriber
	from *actor.PID // for a push, the pusher it answers to
	msg  proto.Message
	n    int64
}

func newSessionWriter(ss grpc.ServerStream, window *budget.Budget) *sessionWriter {
	w := &sessionWriter{ss: ss, window: window, wake: make(chan struct{}, 1), done: make(chan struct{}), overflow: make(chan struct{})}
	go w.run()
	return w
}

// send queues msg for the client's actor id (from: the sender of a push,
// nil for an answer); n is what the request of an answer holds of the
// window. It never blocks the actor that answers or pushes, nor encodes
// the message on its time: the window bounds the requests whose answers
// can come, the subscribers' credit and sessionQueueBytes the pushes.
func (w *sessionWriter) send(id string, from *actor.PID, msg any, n int64) {
	pm, ok := msg.(proto.Message)
	if !ok {
		w.window.Release("", n)
		return
	}
	// The message counts too until written: a client that does not read
	// its answers gets no more requests read.
	size := int64(proto.Size(pm))
	if from != nil && w.window.Used()+size > sessionQueueBytes {
		// Only a push: answers are bounded by the requests read, and a
		// client busy with its answers must not lose its session.
		w.window.Release("", n)
		w.overflowOnce.Do(func() { close(w.overflow) })
		return
	}
	w.window.Take("", size)
	n += size
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		w.window.Release("", n)
		return
	}
	w.pending = append(w.pending, queuedAnswer{to: id, from: from, msg: pm, n: n})
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (w *sessionWriter) run() {
	for {
		select {
		case <-w.done:
			return
		case <-w.wake:
		}
		w.mu.Lock()
		answers := w.pending
		w.pending = nil
		w.mu.Unlock()
		for _, a := range answers {
			err := w.write(a)
			w.window.Release("", a.n)
			if err != nil {
				return
			}
		}
	}
}

// write encodes an answer and writes it to the stream (the server's
// codec, rawCodec, sends the encoding as it is).
func (w *sessionWriter) write(a queuedAnswer) error {
	pm, ok := a.msg.(proto.Message)
	if !ok {
		return nil // not one to send; the client's request times out
	}
	encoded, err := encodeEnvelope(pm, actor.NewPID(sessionAddress, a.to), a.from)
	if err != nil {
		return nil
	}
	return w.ss.SendMsg(encoded)
}

// close ends the writer; answers still to come give their bytes back.
func (w *sessionWriter) close() {
	w.mu.Lock()
	w.closed = true
	for _, a := range w.pending {
		w.window.Release("", a.n)
	}
	w.pending = nil
	w.mu.Unlock()
	close(w.done)
}

// errNotSession answers a stream of another unknown method.
func errNotSession(method string) error {
	return status.Error(codes.Unimplemented, fmt.Sprintf("%s is not served", method))
}
