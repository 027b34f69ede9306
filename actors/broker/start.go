package broker

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/sluicemq/sluice/acl"
	"github.com/sluicemq/sluice/actors"
	"github.com/sluicemq/sluice/cluster"
	"github.com/sluicemq/sluice/internal/budget"
	"github.com/sluicemq/sluice/internal/throttle"
	"github.com/sluicemq/sluice/storage"
	"github.com/sluicemq/sluice/storage/datadir"
	"github.com/sluicemq/sluice/transport"
)

// Broker is a running broker actor.
type Broker struct {
	System *actor.ActorSystem
	PID    *actor.PID
	// ClusterID and Epoch: the cluster this broker belongs to and the
	// broker epoch of this start.
	ClusterID string
	Epoch     int64
	backend   cluster.Backend
	closings  *storage.Closings
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
// The broker actor is restarted in place after a failure (with a growing
// backoff, by its guardian); only Stop stops it.
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
	if cfg.ProducerIDs == nil {
		cfg.ProducerIDs = &acl.ProducerIDs{}
	}
	if cfg.GroupMetadata == nil {
		cfg.GroupMetadata = budget.New(cfg.GroupMetadataMaxBytes, cfg.GroupMetadataMaxBytes/4)
	}
	if cfg.ProducerIDsEnd, err = dir.ProducerIDsEnd(); err != nil {
		return nil, fmt.Errorf("data directory %s: %w", dir.Path(), err)
	}
	reg, err := backend.Register(ctx, cluster.Broker{ID: cfg.ID, Addr: addr, Dir: cfg.DirectoryID, Version: cfg.Version, KafkaAddr: cfg.KafkaAddr, Rack: cfg.Rack})
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
	if c.Closings == nil {
		c.Closings = storage.NewClosings()
	}
	if c.CatchUp == nil {
		c.CatchUp = &throttle.Bucket{}
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
	return &Broker{System: system, PID: pid, ClusterID: cfg.ClusterID, Epoch: cfg.BrokerEpoch,
		backend: backend, closings: c.Closings, dir: dir, pool: pool, logger: cfg.Logger}, nil
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
	if err := b.System.Root.StopFuture(b.PID).Wait(); err != nil {
		b.logger.Warn("broker actor did not stop in time", "error", err)
	}
	// The partitions close their logs beside their actors.
	b.closings.WaitAll()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = b.backend.Deregister(ctx)
	if b.pool != nil {
		b.pool.Close()
	}
	_ = b.dir.Close()
}
