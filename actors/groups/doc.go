// Package groups is the consumer-group coordinator's logic as plain,
// deterministic Go: group membership (JoinGroup, SyncGroup, Heartbeat,
// LeaveGroup), the rebalance that forms each generation, the checks an
// OffsetCommit must pass, the metadata the coordinator persists, and the
// partition assignors ("range", "roundrobin", "sticky").
//
// Nothing here does I/O, reads a clock or draws random numbers. The
// coordinator actor owns one Group per consumer group and calls it on each
// request and on a tick every ~100 ms, passing the time and a function that
// tells a topic's partition count. What comes back is an Outcome: whether to
// persist the group metadata (Snapshot) to __consumer_offsets, the parked
// joins to answer once that write is done, and the members whose assignment
// changed (push members are told). The coordinator computes every
// assignment; members only Sync to fetch theirs.
//
//	g := groups.New(groups.DefaultConfig())
//	out := g.Join(groups.JoinRequest{ClientID: "c", Topics: []string{"orders"},
//		Assignors: []string{"sticky", "range"}, SessionTimeout: 45 * time.Second,
//		ReplyTo: sender}, now, counts)
//	if out.Code != groups.None { /* answer the JoinGroup now with out.Code */ }
//	// ... later, on a tick or another member's join:
//	out = g.Tick(now, counts)
//	if out.Persist { /* write g.Snapshot(), then: */ }
//	for _, r := range out.Replies { /* answer the JoinGroup r.ReplyTo with r */ }
//
// Where this differs from Kafka's classic GroupCoordinator:
//   - There is no CompletingRebalance state: the coordinator assigns, so the
//     group is Stable as soon as a generation is formed, and Sync returns the
//     member's assignment at once.
//   - Any accepted JoinGroup of a Stable group starts a rebalance (Kafka
//     answers a follower rejoining with unchanged metadata with the current
//     generation). A client only rejoins when it wants a new generation.
//   - Sync, Heartbeat and CommitCheck check the generation before the member
//     id, so that a member evicted in an earlier generation (a zombie) gets
//     ILLEGAL_GENERATION; Kafka checks the member id first.
//   - An admin commit (generation -1, no member id) to a group with members
//     gets NON_EMPTY_GROUP, not UNKNOWN_MEMBER_ID.
//   - Push members (a PushTarget set) join every rebalance by themselves
//     and are never evicted by time: the broker is their client, and the
//     actor calls Leave when their actor dies.
//   - A push member's acks (AckCheck) are checked against partition
//     ownership, not the generation alone: an ack from an earlier generation
//     counts for a partition the member has held since then.
//   - The assignor vote breaks ties by the leader's preference; the leader
//     stays while it is a member, otherwise the lowest member id leads.
//   - Names of assignors this package does not implement are dropped from a
//     member's list; an empty list means Config.DefaultAssignor.
//
// This package must import only the standard library: not protoactor,
// storage, consul, the network, nor the messages package (the actor
// converts to and from protobuf; Code.String gives the enum name).
package groups
