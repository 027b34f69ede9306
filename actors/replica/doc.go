// Package replica is the partition replica's decisions as plain,
// deterministic Go: which role a controller state calls for (Decide), what
// a consumer's fetch reads and when it is answered (PlanFetch, FetchReady,
// with CheckFetch and CheckEpoch fencing requests), which batches of a
// group commit are written and with what offsets (Commit), and when each
// written produce request may be answered (Acks): acks=1 once its batch is
// on disk, acks=all once the high watermark has passed it too, and with an
// error when its deadline passes or the replica stops leading; what a
// ListOffsets request finds (ListOffset), and when a replica that cannot
// serve reports itself to the controller (ReportOffline).
//
// Nothing here does I/O or reads a clock. The partition actor feeds events
// in (a request written, the log synced to an offset, the HW moved, a tick
// with the current time, a role change) and sends the answers that come
// back; the writes and fsyncs run beside it.
//
//	acks.Add(replica.Written[*actor.PID]{To: sender, Resp: resp, Next: next, AcksAll: true, Deadline: d})
//	for _, w := range acks.Synced(offset) { send(w) }    // acks=1 now on disk
//	for _, w := range acks.HWAdvanced(hw) { send(w) }    // acks=all now replicated
//
// This package must not import protoactor, storage, consul or the network.
package replica
