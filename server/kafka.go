package server

import (
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/proto"

	"github.com/sluicemq/sluice/internal/reply"
	"github.com/sluicemq/sluice/kafka"
	"github.com/sluicemq/sluice/transport"
)

// localBroker is the Kafka listener's way to the broker actor of this
// process.
type localBroker struct {
	system *actor.ActorSystem
	pid    *actor.PID
}

func (l localBroker) Ask(c kafka.Caller, req proto.Message, timeout time.Duration) kafka.Answer {
	p := reply.NewPending(l.system, timeout)
	l.system.Root.Send(l.pid, l.envelope(c, req, p.PID()))
	return pendingAnswer{p}
}

// envelope carries the caller as the transport stamps a request from its
// own listener, so that the broker authorizes both doors alike.
func (l localBroker) envelope(c kafka.Caller, req proto.Message, sender *actor.PID) *actor.MessageEnvelope {
	env := &actor.MessageEnvelope{Message: req, Sender: sender}
	env.SetHeader(transport.PeerHeader, c.Peer)
	env.SetHeader(transport.PrincipalHeader, c.Principal)
	return env
}

type pendingAnswer struct{ p *reply.Pending }

func (a pendingAnswer) Wait() (proto.Message, error) {
	res, err := a.p.Wait()
	if err != nil {
		return nil, err
	}
	msg, ok := res.(proto.Message)
	if !ok {
		return nil, fmt.Errorf("unexpected answer %T", res)
	}
	return msg, nil
}
