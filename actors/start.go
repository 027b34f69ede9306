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
	backend cluster.Backend
	logger  *slog.Logger
}

// StartBroker registers the broker with the backend and spawns its actor on
// system, whose remote (if any) listens at addr.
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
	pid, err := system.Root.SpawnNamed(NewBrokerProps(&c, backend, addr, snap), transport.BrokerActorName)
	if err != nil {
		return nil, err
	}
	return &Broker{System: system, PID: pid, backend: backend, logger: cfg.Logger}, nil
}

// Stop stops the broker actor (and with it every partition, which
// checkpoints and closes its log) and leaves the cluster.
func (b *Broker) Stop() {
	if err := b.System.Root.StopFuture(b.PID).Wait(); err != nil {
		b.logger.Warn("broker actor did not stop in time", "error", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = b.backend.Deregister(ctx)
}
