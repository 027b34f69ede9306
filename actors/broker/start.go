package broker

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/sluicemq/sluice/actors"
	"github.com/sluicemq/sluice/actors/transport"
	"github.com/sluicemq/sluice/cluster"
	"github.com/sluicemq/sluice/storage"
	"github.com/sluicemq/sluice/storage/datadir"
)

// Broker is a running broker actor.
type Broker struct {
	System *actor.ActorSystem
	PID    *actor.PID
	// ClusterID and Epoch: the cluster this broker belongs to and the
	// broker epoch of this start.
	ClusterID string
	Epoch     int64
	keeper    *actor.PID
	backend   cluster.Backend
	dir       *datadir.Dir
	pool      *storage.Pool // nil when the caller gave one
	logger    *slog.Logger
}

// StartBroker checks the data directory against the metadata store,
// registers the broker with the backend and spawns its actor on system,
// whose remote (if any) listens at addr.
//
// It refuses to start (an error wrapping datadir.ErrInconsistentCluster,
// datadir.ErrWrongBroker, datadir.ErrLocked or cluster.ErrBrokerIDInUse)
// when the directory belongs to another cluster or broker, when the store
// lost its cluster id while the directory holds data, when another process
// uses the directory, or when a live broker holds the id.
//
// The broker actor is restarted after a failure (with a growing backoff)
// and spawned again if it ever stops before Stop, so its name never points
// at a dead actor.
func Start(system *actor.ActorSystem, cfg actors.BrokerConfig, backend cluster.Backend, addr string) (_ *Broker, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	dir := cfg.Dir
	if dir == nil {
		if dir, err = datadir.Open(cfg.DataDir); err != nil {
			return nil, err
		}
		defer func() {
			if err != nil {
				dir.Close()
			}
		}()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if cfg.ClusterID, err = bindClusterID(ctx, dir, cfg.ID, backend); err != nil {
		return nil, err
	}
	cfg.DirectoryID = dir.DirectoryID()
	reg, err := backend.Register(ctx, cluster.Broker{ID: cfg.ID, Addr: addr, Dir: cfg.DirectoryID})
	if err != nil {
		return nil, err
	}
	cfg.BrokerEpoch = reg.Epoch
	if dir.Meta() == nil {
		if err := dir.WriteMeta(datadir.Meta{ClusterID: cfg.ClusterID, BrokerID: cfg.ID, DirectoryID: cfg.DirectoryID}); err != nil {
			_ = backend.Deregister(context.WithoutCancel(ctx))
			return nil, err
		}
		cfg.Logger.Info("data directory bound to its cluster", "dir", cfg.DataDir, "cluster_id", cfg.ClusterID, "broker", cfg.ID)
	}
	// Start from the stored metadata, so the broker serves its partitions
	// as soon as it reports ready.
	snap, err := backend.Load(ctx)
	if err == nil && snap.ClusterID != cfg.ClusterID {
		err = fmt.Errorf("%w: the metadata store's cluster id changed to %q during the start", datadir.ErrInconsistentCluster, snap.ClusterID)
	}
	if err != nil {
		_ = backend.Deregister(context.WithoutCancel(ctx))
		return nil, err
	}
	c := cfg
	c.Dir = dir
	var pool *storage.Pool
	if c.LogPool == nil {
		pool = storage.NewPool(c.LogMemoryBytes, c.LogIdleTime, c.MaxOpenLogs)
		c.LogPool = pool
	}
	if c.Syncer == nil {
		if c.Syncer, err = storage.NewSyncer(c.DataDir); err != nil {
			_ = backend.Deregister(context.WithoutCancel(ctx))
			return nil, err
		}
	}
	props := NewProps(&c, backend, addr, snap)
	pid, err := system.Root.SpawnNamed(props, transport.BrokerActorName)
	if err != nil {
		if pool != nil {
			pool.Close()
		}
		_ = backend.Deregister(context.WithoutCancel(ctx))
		return nil, err
	}
	keeper := system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor {
		return &brokerKeeper{props: props, logger: cfg.Logger, watched: pid}
	}))
	return &Broker{System: system, PID: pid, ClusterID: cfg.ClusterID, Epoch: cfg.BrokerEpoch,
		keeper: keeper, backend: backend, dir: dir, pool: pool, logger: cfg.Logger}, nil
}

// bindClusterID returns the cluster id the data directory belongs to,
// creating the store's for a new cluster, or why the broker must not start.
func bindClusterID(ctx context.Context, dir *datadir.Dir, id int32, store cluster.MetadataStore) (string, error) {
	snap, err := store.Load(ctx)
	if err != nil {
		return "", err
	}
	create, err := datadir.Check(dir.Meta(), dir.HasData(), id, snap.ClusterID)
	if err != nil {
		return "", fmt.Errorf("data directory %s: %w", dir.Path(), err)
	}
	if create {
		return store.CreateClusterID(ctx)
	}
	return snap.ClusterID, nil
}

// Stop stops the broker actor (and with it every partition, which
// checkpoints and closes its log), leaves the cluster and releases the
// data directory.
func (b *Broker) Stop() {
	// The keeper first, or it would start the broker again.
	_ = b.System.Root.StopFuture(b.keeper).Wait()
	if err := b.System.Root.StopFuture(b.PID).Wait(); err != nil {
		b.logger.Warn("broker actor did not stop in time", "error", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = b.backend.Deregister(ctx)
	if b.pool != nil {
		b.pool.Close()
	}
	_ = b.dir.Close()
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
