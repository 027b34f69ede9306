// Package consumergroup is Kafka's consumer group protocol (KIP-848) as
// plain, deterministic Go: the coordinator, not a member, assigns the
// partitions, and members converge on that assignment through their
// heartbeats alone.
//
// A group has an epoch that moves whenever what its assignment depends on
// moves: a member joins or leaves, a subscription changes, a subscribed
// topic gains partitions, a regular expression matches another topic. Each
// new epoch computes a target assignment at once ("uniform" or "range").
// Every member then reconciles towards its target, one heartbeat at a
// time, under three rules:
//
//   - a member first gives up (revokes) what its target no longer holds,
//     keeping its epoch, and says so in a later heartbeat by no longer
//     listing those partitions as owned; only then does it move to the
//     target's epoch;
//   - a partition is handed to a member only once no other member holds
//     it, assigned or still revoking ("unreleased" until then);
//   - a member that does not revoke within its rebalance timeout, or does
//     not heartbeat within the session timeout, is removed.
//
// So no partition is ever held by two members at once, and a member's
// epoch says which target it has reached. Offset commits name the epoch;
// a commit from an earlier epoch counts only for partitions the member
// has held since then.
//
// Nothing here does I/O, reads a clock or draws random numbers: the
// coordinator actor owns one Group per consumer group, calls Heartbeat on
// each ConsumerGroupHeartbeat and Tick every ~100 ms, passing the time and
// a Catalog of the cluster's topics.
//
//	g := consumergroup.New(consumergroup.DefaultConfig())
//	r := g.Heartbeat(consumergroup.Heartbeat{MemberID: "m1", MemberEpoch: 0,
//		Topics: []string{"orders"}, TopicsSet: true, RebalanceTimeout: time.Minute,
//		OwnedSet: true}, now, catalog)
//	// r.MemberEpoch, r.Assignment (when r.HasAssignment)
//	out := g.Tick(now, catalog) // removes silent members, follows new partitions
//
// Whenever Changes moves, the actor writes Snapshot before it answers the
// heartbeat that moved it; a new coordinator Restores the last one, so a
// failover fences nobody.
//
// Where this differs from Kafka's coordinator:
//   - A group holds no client-side assignors (Kafka's deprecated
//     ClientAssignors); "uniform" is the classic sticky assignor of
//     actors/groups and "range" its range assignor.
//   - A commit from an epoch below the member's counts for the partitions
//     the member has held since that epoch (as Kafka 4.3's assignment
//     epochs); an admin commit (epoch -1, no member) to a group with
//     members is NON_EMPTY_GROUP.
//   - A regular expression subscription is matched against the topics
//     again at most every Config.RegexRefresh, on the next Tick.
//
// This package imports only the standard library and actors/groups.
package consumergroup
