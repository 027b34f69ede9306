package broker

import (
	"slices"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/sluicemq/sluice/actors"
	"github.com/sluicemq/sluice/actors/controller"
	"github.com/sluicemq/sluice/actors/election"
	"github.com/sluicemq/sluice/cluster"
	"github.com/sluicemq/sluice/internal/reply"
	"github.com/sluicemq/sluice/messages"
	"github.com/sluicemq/sluice/transport"
)

// Reaching the other brokers. Consul says which brokers are alive, not
// whether they hear each other: a broker cut off from the others but not
// from Consul stays "alive". Every pingInterval the broker pings each live
// peer (election.Reach keeps the answers). While it is the controller's
// broker, the peers it has not heard from for the session timeout are
// fenced: the controller sees the live brokers without them, so it moves
// their leaderships and takes them out of the ISRs. A broker that hears
// fewer than half of the live brokers may not be the controller: it gives
// up the lock, and does not campaign until it hears enough again, so the
// brokers it cannot reach elect one they can.

// pingTimeout is longer than pingInterval: a slow answer (a busy broker
// actor, a loaded machine) still counts, as long as it comes.
const (
	pingInterval = time.Second
	pingTimeout  = 3 * time.Second
)

// pingTick is the broker's ping schedule; gen names the broker actor
// incarnation that scheduled it.
type pingTick struct{ gen uint64 }

var pingGen atomic.Uint64

// leadGate is what the broker actor tells its campaign goroutine: whether
// it may hold the controller's lock, and a signal to give it up.
type leadGate struct {
	may      atomic.Bool
	stepDown chan struct{}
}

func newLeadGate() *leadGate {
	g := &leadGate{stepDown: make(chan struct{}, 1)}
	g.may.Store(true) // until pings say otherwise
	return g
}

// startPings schedules this incarnation's first ping round.
func (b *brokerActor) startPings(ctx actor.Context) {
	b.pingGen = pingGen.Add(1)
	b.reach = election.NewReach(b.cfg.BrokerSessionTimeout)
	b.schedulePing(ctx)
}

func (b *brokerActor) schedulePing(ctx actor.Context) {
	self, root, gen := ctx.Self(), ctx.ActorSystem().Root, b.pingGen
	time.AfterFunc(pingInterval, func() { root.Send(self, pingTick{gen: gen}) })
}

// onPingTick pings every live peer and acts on what the answers so far say.
func (b *brokerActor) onPingTick(ctx actor.Context, msg pingTick) {
	if msg.gen != b.pingGen || b.stopping {
		return
	}
	b.schedulePing(ctx)
	now := time.Now()
	b.reach.Live(b.liveIDs(), now)
	for id, br := range b.live {
		if id == b.cfg.ID {
			continue
		}
		reach := b.reach
		reply.Ask(ctx, transport.BrokerPID(br.Addr), &messages.BrokerPingRequest{BrokerId: b.cfg.ID}, pingTimeout, func(res any, err error) {
			if _, ok := res.(*messages.BrokerPingResponse); ok && err == nil {
				reach.Answered(id, time.Now())
			}
		})
	}
	b.checkReach(ctx, now)
}

// checkReach gives up the controller's lock when this broker hears fewer
// than half of the live brokers, and otherwise fences the ones it has not
// heard from.
func (b *brokerActor) checkReach(ctx actor.Context, now time.Time) {
	may := b.reach.Majority(b.cfg.ID, now)
	if was := b.gate.may.Swap(may); was != may {
		if may {
			b.cfg.Logger.Info("this broker hears at least half of the live brokers again: it may be the controller")
		} else {
			b.cfg.Logger.Warn("this broker hears fewer than half of the live brokers: it may not be the controller",
				"unreachable", b.reach.Unreachable(b.cfg.ID, now), "live", len(b.live))
		}
	}
	if !may && b.controller != nil {
		select {
		case b.gate.stepDown <- struct{}{}:
		default:
		}
	}
	// Cut off itself, the broker fences nobody: its view is the minority's.
	var fenced []int32
	if may {
		fenced = b.reach.Unreachable(b.cfg.ID, now)
	}
	if slices.Equal(fenced, b.fenced) {
		return
	}
	if len(fenced) > 0 {
		b.cfg.Logger.Warn("live brokers not answering for longer than the broker session timeout", "brokers", fenced,
			"timeout", b.cfg.BrokerSessionTimeout)
	}
	b.fenced = fenced
	b.publishMetrics()
	if b.controller != nil {
		ctx.Send(b.controller, &controller.BrokersUpdated{Brokers: b.controllerLive()})
	}
}

// onBrokerPing answers a peer's ping.
func (b *brokerActor) onBrokerPing(ctx actor.Context, _ *messages.BrokerPingRequest) {
	actors.Respond(ctx, &messages.BrokerPingResponse{BrokerId: b.cfg.ID})
}

// liveIDs lists the live brokers' ids.
func (b *brokerActor) liveIDs() []int32 {
	ids := make([]int32, 0, len(b.live))
	for id := range b.live {
		ids = append(ids, id)
	}
	return ids
}

// controllerLive is what the controller counts as live: the live brokers
// but those fenced.
func (b *brokerActor) controllerLive() []cluster.Broker {
	out := b.liveList()
	return slices.DeleteFunc(out, func(br cluster.Broker) bool { return slices.Contains(b.fenced, br.ID) })
}

// renewSessions gives every live broker a full session from now, when this
// broker becomes the controller (election.Reach.Renew).
func (b *brokerActor) renewSessions() {
	if b.reach != nil {
		b.reach.Renew(time.Now())
	}
	b.fenced = nil
}
