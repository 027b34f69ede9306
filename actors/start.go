package actors

import (
	"context"
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/sluicemq/sluice/actors/transport"
	"github.com/sluicemq/sluice/cluster"
)

// Broker is a running broker actor.
type Broker struct {
	System  *actor.ActorSystem
	PID     *actor.PID
	keeper  *actor.PID
	backend cluster.Backend
	logger  *slog.Logger
}

// StartBroker registers the broker with the backend and spawns its actor on
// system, whose remote (if any) listens at addr. The broker actor is
// restarted after a failure (with a growing backoff) and spawned again if it
// ever stops before Stop, so its name never points at a dead actor.
func StartBroker(system *actor.ActorSystem, cfg BrokerConfig, backend cluster.Backend, addr string) (*Broker, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := backend.Register(ctx, cluster.Broker{ID: cfg.ID, Addr: addr}); err != nil {
		return nil, err
	}
	// Start from the stored metadata, so the broker serves its partitions
	// as soon as it reports ready.
	snap, err := backend.Load(ctx)
	if err != nil {
		return nil, err
	}
	c := cfg
	props := NewBrokerProps(&c, backend, addr, snap)
	pid, err := system.Root.SpawnNamed(props, transport.BrokerActorName)
	if err != nil {
		return nil, err
	}
	keeper := system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor {
		return &brokerKeeper{props: props, logger: cfg.Logger, watched: pid}
	}))
	return &Broker{System: system, PID: pid, keeper: keeper, backend: backend, logger: cfg.Logger}, nil
}

// Stop stops the broker actor (and with it every partition, which
// checkpoints and closes its log) and leaves the cluster.
func (b *Broker) Stop() {
	// The keeper first, or it would start the broker again.
	_ = b.System.Root.StopFuture(b.keeper).Wait()
	if err := b.System.Root.StopFuture(b.PID).Wait(); err != nil {
		b.logger.Warn("broker actor did not stop in time", "error", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = b.backend.Deregister(ctx)
}

// brokerKeeper watches the broker actor and spawns it again under its name
// if it stops while the broker runs. Failures do not stop it (the broker's
// guardian restarts it); this covers every other way an actor can end.
type brokerKeeper struct {
	props   *actor.Props
	logger  *slog.Logger
	watched *actor.PID
}

type keeperRetry struct{}

func (k *brokerKeeper) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *actor.Started:
		ctx.Watch(k.watched)
	case *actor.Terminated:
		if msg.Who.Equal(k.watched) {
			k.logger.Error("broker actor stopped; starting it again")
			k.spawn(ctx)
		}
	case keeperRetry:
		k.spawn(ctx)
	}
}

func (k *brokerKeeper) spawn(ctx actor.Context) {
	pid, err := ctx.ActorSystem().Root.SpawnNamed(k.props, transport.BrokerActorName)
	if err != nil {
		k.logger.Error("cannot start the broker actor again; retrying", "error", err)
		self, root := ctx.Self(), ctx.ActorSystem().Root
		time.AfterFunc(100*time.Millisecond, func() { root.Send(self, keeperRetry{}) })
		return
	}
	k.watched = pid
	ctx.Watch(pid)
}
