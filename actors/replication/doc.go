// Package replication is the partition replication protocol as plain,
// deterministic Go: the leader's view of its followers (LEO per replica,
// ISR shrink and expand proposals, the high watermark, which follower
// requests to serve) and the follower's fetch loop (truncation by leader
// epoch per KIP-101 and KIP-279, then fetch, append, sync, with backoff).
//
// Nothing here does I/O or reads a clock. The partition actor feeds events in
// (a local append, a follower's fetch, a tick with the current time, a
// committed ISR) and carries out what comes back: answer acks=all requests
// once HighWatermark passes them, send ISR proposals to the controller,
// truncate the log to the offset TruncationStep names. A follower reports
// each answer from its leader to Follower and sends the request, or
// appends, resets or waits, as the returned Step or FetchDecision says.
//
//	l := replication.NewLeader(replication.LeaderConfig{...}, leo, now)
//	l.FollowerFetched(2, 120, brokerEpoch, now)
//	if l.HighWatermark() >= lastOffset+1 { /* answer acks=all */ }
//
// This package must not import protoactor, storage, consul or the network.
package replication
