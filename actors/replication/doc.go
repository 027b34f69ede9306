// Package replication is the partition replication protocol as plain,
// deterministic Go: the leader's view of its followers (LEO per replica,
// ISR shrink and expand proposals, the high watermark) and the follower's
// truncation decisions by leader epoch (KIP-101, KIP-279).
//
// Nothing here does I/O or reads a clock. The partition actor feeds events in
// (a local append, a follower's fetch, a tick with the current time, a
// committed ISR) and carries out what comes back: answer acks=all requests
// once HighWatermark passes them, send ISR proposals to the controller,
// truncate the log to the offset TruncationStep names.
//
//	l := replication.NewLeader(replication.LeaderConfig{...}, leo, now)
//	l.FollowerFetched(2, 120, brokerEpoch, now)
//	if l.HighWatermark() >= lastOffset+1 { /* answer acks=all */ }
//
// This package must not import protoactor, storage, consul or the network.
package replication
