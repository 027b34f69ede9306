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
			if !strings.HasPrefix(name, string(sluicePackage)+".") {
				continue // nothing but requests is delivered here
			}
			msg, err := remote.Deserialize(env.MessageData, name, env.SerializerId)
			if err != nil {
				continue // the guard let through only what decodes
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
					w.send(to, res, n)
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
}

type queuedAnswer struct {
	to  string // the client's sender
	msg proto.Message
	n   int64
}

func newSessionWriter(ss grpc.ServerStream, window *budget.Budget) *sessionWriter {
	w := &sessionWriter{ss: ss, window: window, wake: make(chan struct{}, 1), done: make(chan struct{})}
	go w.run()
	return w
}

// send queues msg for the client's actor id; it never blocks the actor
// that answers, nor encodes the answer on its time (the session's window
// bounds what can queue).
func (w *sessionWriter) send(id string, msg any, n int64) {
	pm, ok := msg.(proto.Message)
	if !ok {
		w.window.Release("", n)
		return
	}
	// The answer counts too until written: a client that does not read
	// its answers gets no more requests read.
	size := int64(proto.Size(pm))
	w.window.Take("", size)
	n += size
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		w.window.Release("", n)
		return
	}
	w.pending = append(w.pending, queuedAnswer{id, pm, n})
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

// write encodes an answer and writes it to the stream.
func (w *sessionWriter) write(a queuedAnswer) error {
	data, typeName, err := remote.Serialize(a.msg, protoSerializerID)
	if err != nil {
		return nil // not one to send; the client's request times out
	}
	b := &remote.MessageBatch{TypeNames: []string{typeName}, Targets: []*actor.PID{actor.NewPID(sessionAddress, a.to)},
		Envelopes: []*remote.MessageEnvelope{{TypeId: 0, Target: 0, MessageData: data, SerializerId: protoSerializerID}}}
	return w.ss.SendMsg(&remote.RemoteMessage{MessageType: &remote.RemoteMessage_MessageBatch{MessageBatch: b}})
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
