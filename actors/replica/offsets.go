package replica

import (
	"fmt"

	"github.com/sluicemq/sluice/messages"
)

// The timestamps a ListOffsets request names instead of a time.
const (
	LatestTimestamp   = -1 // the HW: where a consumer starting at the end reads from
	EarliestTimestamp = -2 // the log start
	MaxTimestamp      = -3 // the record with the largest timestamp a consumer can read
)

// TimeIndex is what ListOffsets reads of a leader's log: the record with
// the largest timestamp below an offset, the first record at or after a
// timestamp, and the leader epoch of the batch holding an offset (-1:
// none).
type TimeIndex interface {
	MaxTimestamp(below int64) (offset, timestamp int64, ok bool, err error)
	OffsetForTimestamp(ts int64) (offset, timestamp int64, ok bool, err error)
	EpochAt(offset int64) int32
}

// ListedOffset is a leader's answer to ListOffsets for one partition.
type ListedOffset struct {
	// Code, unless NONE, is the error answer, with Reason.
	Code   messages.ErrorCode
	Reason string
	// Offset and Timestamp found (-1: none); LeaderEpoch is the epoch of
	// the batch at Offset (-1: none), which a client's truncation check
	// starts from, and the leader's own epoch for the latest offset and
	// with an error.
	Offset, Timestamp int64
	LeaderEpoch       int32
}

// ListOffset answers a ListOffsets request for timestamp on a leader whose
// log starts at start, with high watermark hw, in leader epoch epoch. Only
// what a consumer can read counts: nothing at or above the HW is found.
func ListOffset(timestamp, start, hw int64, epoch int32, log TimeIndex) ListedOffset {
	found := ListedOffset{Offset: -1, Timestamp: -1}
	var err error
	switch {
	case timestamp == LatestTimestamp:
		found.Offset, found.LeaderEpoch = hw, epoch
		return found
	case timestamp == EarliestTimestamp:
		found.Offset = start
	case timestamp == MaxTimestamp:
		var ok bool
		var off, ts int64
		if off, ts, ok, err = log.MaxTimestamp(hw); ok && err == nil {
			found.Offset, found.Timestamp = off, ts
		}
	case timestamp < 0:
		return ListedOffset{Code: messages.ErrorCode_INVALID_REQUEST, Offset: -1, Timestamp: -1, LeaderEpoch: epoch,
			Reason: fmt.Sprintf("timestamp %d: want %d, %d, %d or >= 0", timestamp, MaxTimestamp, EarliestTimestamp, LatestTimestamp)}
	default:
		var ok bool
		var off, ts int64
		if off, ts, ok, err = log.OffsetForTimestamp(timestamp); ok && err == nil && off < hw {
			found.Offset, found.Timestamp = off, ts
		}
	}
	if err != nil {
		return ListedOffset{Code: messages.ErrorCode_STORAGE_ERROR, Reason: err.Error(), Offset: -1, Timestamp: -1, LeaderEpoch: epoch}
	}
	found.LeaderEpoch = -1
	if found.Offset >= 0 {
		found.LeaderEpoch = log.EpochAt(found.Offset)
	}
	return found
}
