package client

import (
	"fmt"
	"time"

	"github.com/sluicemq/sluice/messages/record"
)

// Header is a record header.
type Header = record.RecordHeader

// Record is one record to produce or one consumed record.
type Record struct {
	Topic string
	// Partition is set by the producer's partitioner unless ManualPartition is used.
	Partition int32
	Key       []byte
	Value     []byte
	Headers   []Header
	// Timestamp defaults to the time of Produce.
	Timestamp time.Time
	// Offset is set once the record is acknowledged or when it is consumed.
	Offset int64
	// LeaderEpoch of the leader that wrote the record (consumed records).
	LeaderEpoch int32
}

// Offset says where a consumer starts in a partition.
type Offset struct {
	at int64 // -2 start, -1 end, -3 timestamp, else exact offset
	ts int64
}

// AtStart is the partition's first offset.
func AtStart() Offset { return Offset{at: -2} }

// AtEnd is the partition's high watermark: only records produced from now on.
func AtEnd() Offset { return Offset{at: -1} }

// AtOffset is an exact offset.
func AtOffset(o int64) Offset { return Offset{at: o} }

// AtTimestamp is the first record with a timestamp at or after t (the end
// when there is none).
func AtTimestamp(t time.Time) Offset { return Offset{at: -3, ts: t.UnixMilli()} }

func (o Offset) String() string {
	switch o.at {
	case -2:
		return "start"
	case -1:
		return "end"
	case -3:
		return fmt.Sprintf("timestamp %d", o.ts)
	}
	return fmt.Sprintf("offset %d", o.at)
}

// listOffsetsTimestamp is the ListOffsets timestamp for o, or -4 when o is exact.
func (o Offset) listOffsetsTimestamp() int64 {
	switch o.at {
	case -2, -1:
		return o.at
	case -3:
		return o.ts
	}
	return -4
}
