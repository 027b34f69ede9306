// Package cluster is how brokers find each other and agree on metadata:
// Membership (which brokers are alive), MetadataStore (topics, replica
// assignment and each partition's leader, leader epoch and ISR, written with
// check-and-set) and ControllerLock (which broker is the controller, with an
// epoch that grows with every new controller).
//
// Two implementations sit behind these interfaces: Embedded, a single-node
// store persisted under the data directory (the default, no Consul needed),
// and Consul, for a cluster of brokers.
//
//	store, err := cluster.OpenEmbedded(dataDir, cluster.Broker{ID: 0, Addr: "127.0.0.1:9470"})
//	snap, err := store.Load(ctx)
//
//	backend, err := cluster.OpenConsul(cluster.ConsulConfig{Addr: "127.0.0.1:8500", Cluster: "prod"})
//	err = backend.Register(ctx, cluster.Broker{ID: 1, Addr: "10.0.0.1:9470"})
//	lead, err := backend.Campaign(ctx, 1) // blocks until broker 1 is the controller
//	err = backend.CreateTopic(ctx, lead.Fence, topic, partitions)
//
// With Consul, metadata lives in the KV store under "sluice/<cluster>/"
// (topics/<name>, partitions/<topic>/<partition> and security, the ACLs
// and token users, as protobuf, plus cluster_id, controller,
// controller_epoch and producer_ids; see Consul).
// Brokers are agent services "sluice-<cluster>" with a TTL check that a
// keepalive passes, re-registering after Consul lost them. The controller
// holds the "controller" key with a session tied to its own TTL check, so a
// killed controller is replaced about CheckTTL later; its Fence makes every
// metadata write fail with ErrFenced once it is no longer the controller.
// The Consul store takes writes only with a fence (the embedded one ignores
// fences), and Campaign needs the broker registered first.
//
// Register gives each broker start a new broker epoch and claims the broker
// id (brokers/<id>, locked by a session tied to the broker's check) before
// the broker shows up in WatchBrokers: one live process per id. A store
// does not create its cluster id by itself: CreateClusterID, called only by
// a broker whose data directory is new. Snapshots carry the controller, the
// recorded topic deletions, and whether the store was restored, wiped or
// replaced under it.
//
// Package consultest runs a real Consul agent for tests.
//
// This package imports consul/api, messages and storage/datadir (for its
// atomic file writes); it knows nothing of actors or partition logs.
package cluster
