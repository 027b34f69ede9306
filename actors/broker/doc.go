// Package broker is the broker actor, one per broker process, named
// "broker" on its node: every client request arrives here and is routed to
// the local partition actor, the controller or a group host. It keeps the
// local replicas in line with the metadata it watches (starting, stopping
// and, for recorded deletions only, deleting them), hosts the controller
// actor while this broker holds the controller lock, checks control and
// replication messages against their sender, and starts again every child
// that stops while it still routes to it.
//
// Start checks the data directory against the metadata store, registers
// the broker and spawns its actor (restarted by a guardian on failure, and
// spawned again by a keeper if it stops).
//
//	b, err := broker.Start(node.System, cfg, backend, node.Addr)
//	defer b.Stop()
//
// This package's tests run a whole broker on an actor system without a
// remote, so they also cover the partition and coordinator actors.
package broker
