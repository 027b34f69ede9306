// Package consul is the cluster backend for many brokers: membership,
// metadata and the controller lock (cluster.Backend) in Consul.
//
//	backend, err := consul.Open(consul.Config{Addr: "127.0.0.1:8500", Cluster: "prod"})
//	err = backend.Register(ctx, cluster.Broker{ID: 1, Addr: "10.0.0.1:9470"})
//	lead, err := backend.Campaign(ctx, 1) // blocks until broker 1 is the controller
//	err = backend.CreateTopic(ctx, lead.Fence, topic, partitions)
//
// Metadata lives in the KV store under "sluice/<cluster>/" (topics/<name>,
// partitions/<topic>/<partition> and security, the ACLs and token users, as
// protobuf, plus cluster_id, controller, controller_epoch and
// producer_ids). Brokers are agent services "sluice-<cluster>" with a TTL
// check that a keepalive passes, re-registering after Consul lost them;
// each broker id is claimed (brokers/<id>, locked by a session tied to the
// broker's check). The controller holds the "controller" key with a
// session tied to its own TTL check, so a killed controller is replaced
// about CheckTTL later; its Fence makes every metadata write fail with
// cluster.ErrFenced once it is no longer the controller. The store takes
// writes only with a fence, and Campaign needs the broker registered first.
//
// Package consultest runs a real Consul agent for tests.
package consul
