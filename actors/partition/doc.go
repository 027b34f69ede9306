// Package partition is the partition replica actor: one per partition this
// broker holds, a child of the broker actor. It owns the replica's log
// (storage.Log) and serves it as leader (group commit, acks, fetch with long
// polling, HW from replication.Leader) or copies it as follower (truncation
// by leader epoch, then ReplicaFetch). A replica that cannot serve (a log
// that fails its checks or an fsync) goes offline and reports itself to the
// controller; a corrupt log is moved aside and refilled from the new leader.
//
// The broker starts it with NewProducer(Config) and hands it its state with
// ApplyState; a (re)started partition sends Started to its parent.
//
// Disk work that rewrites the log (opening it and restoring the producer
// state, a follower's truncation with the producer state rebuilt from what
// remains, a reset, retention, moving a corrupt log aside, a write that
// starts a new segment) runs beside the actor, which keeps the messages
// that arrive meanwhile and handles them, in order, once it is done
// (beside.go). Fsyncs run beside it too, in the broker's sync waves; the
// HW checkpoint and the producer state snapshot are written beside it; a
// stopped replica's log is closed beside it, and whoever uses the
// directory next waits for that (storage.Closings). On the actor stay the
// writes that only copy into the page cache and the reads. The package
// touches no file itself: the replica's directory is storage/replicadir's,
// its log storage's.
//
// Its protocol decisions come from replication (followers, ISR, HW),
// replica (the role a controller state calls for, the group commit and
// when a produce request may be answered) and producerstate
// (idempotence), which do no I/O.
package partition
