// Package cluster is how brokers find each other and agree on metadata:
// Membership (which brokers are alive), MetadataStore (topics, replica
// assignment and each partition's leader, leader epoch and ISR, written with
// check-and-set) and ControllerLock (which broker is the controller, with an
// epoch that grows with every new controller), and the types they share.
//
// Two implementations sit behind these interfaces: Embedded, here, a
// single-node store persisted under the data directory (the default, no
// Consul needed), and package consul, for a cluster of brokers. Code that
// only reads metadata (the metrics, the console) depends on this package
// alone, not on a Consul client.
//
//	store, err := cluster.OpenEmbedded(dataDir, cluster.Broker{ID: 0, Addr: "127.0.0.1:9470"})
//	snap, err := store.Load(ctx)
//
// Register gives each broker start a new broker epoch and claims the broker
// id before the broker shows up in WatchBrokers: one live process per id.
// A store does not create its cluster id by itself: CreateClusterID, called
// only by a broker whose data directory is new. Snapshots carry the
// controller, the recorded topic deletions, and whether the store was
// restored, wiped or replaced under it. Every store passes the conformance
// suite of package storetest.
//
// This package imports messages and storage/datadir (for its atomic file
// writes); it knows nothing of actors, partition logs or Consul.
package cluster
