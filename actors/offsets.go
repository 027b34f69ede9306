package actors

import (
	"github.com/sluicemq/sluice/actors/replica"
	"github.com/sluicemq/sluice/messages"
)

// OffsetsTopic is the internal topic holding consumer groups' membership
// and committed offsets. Each group lives in the partition its id hashes
// to; the leader of that partition hosts the group's coordinator.
const OffsetsTopic = messages.OffsetsTopic

// OffsetMetadataMaxBytes is the longest metadata an offset commit may carry
// (Kafka's offset.metadata.max.bytes); a longer one is refused with
// OFFSET_METADATA_TOO_LARGE.
const OffsetMetadataMaxBytes = 4096

// GroupPartition is the partition of OffsetsTopic a group belongs to, as
// Kafka computes it: abs(Java String.hashCode(group)) % partitions.
func GroupPartition(group string, partitions int32) int32 {
	h := javaStringHash(group)
	if h == -1<<31 {
		h = 0
	} else if h < 0 {
		h = -h
	}
	return h % partitions
}

// javaStringHash is Java's String.hashCode over the UTF-16 code units of s.
func javaStringHash(s string) int32 {
	var h int32
	for _, r := range s {
		if r >= 0x10000 {
			r -= 0x10000
			h = 31*h + int32(0xD800+(r>>10))
			h = 31*h + int32(0xDC00+(r&0x3FF))
			continue
		}
		h = 31*h + int32(r)
	}
	return h
}

// IsolationLogEnd is a fetch's isolation level that reads up to the
// durable end of the log instead of the HW. Only actors of the broker itself
// may use it (a group host replaying its offsets partition); consumers never
// see data at or above the HW.
const IsolationLogEnd = replica.IsolationLogEnd
