// Package broker is the broker actor, one per broker process, named
// "broker" on its node: every client request arrives here and is routed to
// the local partition actor, the controller or a group host. It keeps the
// local replicas in line with the metadata it watches (starting, stopping
// and, for recorded deletions only, deleting them), hosts the controller
// actor while this broker holds the controller lock, checks control and
// replication messages against their sender, and starts again every child
// that stops while it still routes to it.
//
// Supervision is protoactor's, once: an actor that fails (panics) is
// restarted in place by its parent's strategy, with a growing backoff, and
// keeps its PID and mailbox; the broker actor is restarted so by its
// guardian. Nothing else restarts an actor. No actor stops itself, and the
// transport's guard lets no other process stop one or report one's end
// (Stop, PoisonPill and a Terminated naming this node's actors are
// refused), so a child ends only when the broker stops it; should one end
// otherwise, the broker starts it again as it starts any replica the
// metadata gives it.
//
// Start checks the data directory against the metadata store, registers
// the broker and spawns its actor.
//
//	b, err := broker.Start(node.System, cfg, backend, node.Addr)
//	defer b.Stop()
//
// This package's tests run a whole broker on an actor system without a
// remote, so they also cover the partition and coordinator actors.
package broker
