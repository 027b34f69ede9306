// Package coordinator is the consumer groups' actors: a group host per
// __consumer_offsets partition this broker leads (NewHost), which replays
// the partition and then runs a coordinator actor per group, and, for push
// members, a pusher that fetches their partitions and pushes records to
// their actor under credit. Membership, rebalances and assignments come
// from groups, which does no I/O; the records of __consumer_offsets are
// encoded in records.go.
//
// The broker routes every request of a group (GroupOf) to the host of the
// group's partition, or answers it with GroupError.
package coordinator
