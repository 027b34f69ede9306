package replica

import (
	"errors"
	"testing"

	"github.com/sluicemq/sluice/messages"
)

// logRecords is a log of one-record batches: offset i has timestamps[i],
// written in epoch epochs[i]; err, when set, is every lookup's answer.
type logRecords struct {
	timestamps []int64
	epochs     []int32
	err        error
}

func (l logRecords) MaxTimestamp(below int64) (int64, int64, bool, error) {
	best := -1
	for i := 0; i < len(l.timestamps) && int64(i) < below; i++ {
		if best < 0 || l.timestamps[i] >= l.timestamps[best] {
			best = i
		}
	}
	return int64(best), l.ts(best), best >= 0, l.err
}

func (l logRecords) OffsetForTimestamp(ts int64) (int64, int64, bool, error) {
	for i, t := range l.timestamps {
		if t >= ts {
			return int64(i), t, true, l.err
		}
	}
	return -1, -1, false, l.err
}

func (l logRecords) EpochAt(offset int64) int32 {
	if offset < 0 || offset >= int64(len(l.epochs)) {
		return -1
	}
	return l.epochs[offset]
}

func (l logRecords) ts(i int) int64 {
	if i < 0 {
		return -1
	}
	return l.timestamps[i]
}

func TestListOffset(t *testing.T) {
	// Offsets 0-4; the HW is 4, so offset 4 (timestamp 500, the largest)
	// is not readable yet.
	log := logRecords{timestamps: []int64{100, 300, 200, 300, 500}, epochs: []int32{1, 1, 2, 2, 3}}
	broken := logRecords{err: errors.New("disk gone")}
	const start, hw, epoch = 0, 4, 3
	cases := []struct {
		name      string
		timestamp int64
		log       logRecords
		want      ListedOffset
	}{
		{"latest is the HW in the leader's epoch", LatestTimestamp, log, ListedOffset{Offset: hw, Timestamp: -1, LeaderEpoch: epoch}},
		{"earliest is the log start", EarliestTimestamp, log, ListedOffset{Offset: 0, Timestamp: -1, LeaderEpoch: 1}},
		{"the largest timestamp below the HW, the last of equals", MaxTimestamp, log, ListedOffset{Offset: 3, Timestamp: 300, LeaderEpoch: 2}},
		{"the first record at or after a time", 250, log, ListedOffset{Offset: 1, Timestamp: 300, LeaderEpoch: 1}},
		{"an exact time", 100, log, ListedOffset{Offset: 0, Timestamp: 100, LeaderEpoch: 1}},
		{"a time only past the HW finds nothing", 400, log, ListedOffset{Offset: -1, Timestamp: -1, LeaderEpoch: -1}},
		{"a time past every record finds nothing", 900, log, ListedOffset{Offset: -1, Timestamp: -1, LeaderEpoch: -1}},
		{"an empty log has no largest timestamp", MaxTimestamp, logRecords{}, ListedOffset{Offset: -1, Timestamp: -1, LeaderEpoch: -1}},
		{"a negative time Kafka does not define", -4, log, ListedOffset{Code: messages.ErrorCode_INVALID_REQUEST, Offset: -1, Timestamp: -1, LeaderEpoch: epoch}},
		{"a failed lookup by time", 100, broken, ListedOffset{Code: messages.ErrorCode_STORAGE_ERROR, Reason: "disk gone", Offset: -1, Timestamp: -1, LeaderEpoch: epoch}},
		{"a failed lookup of the largest time", MaxTimestamp, broken, ListedOffset{Code: messages.ErrorCode_STORAGE_ERROR, Reason: "disk gone", Offset: -1, Timestamp: -1, LeaderEpoch: epoch}},
	}
	for _, c := range cases {
		got := ListOffset(c.timestamp, start, hw, epoch, c.log)
		if c.want.Code == messages.ErrorCode_INVALID_REQUEST && got.Reason != "" {
			c.want.Reason = got.Reason
		}
		if got != c.want {
			t.Errorf("%s: got %+v, want %+v", c.name, got, c.want)
		}
	}
}

// Whatever the time asked, nothing at or above the HW is ever listed.
func TestListOffsetNeverPastTheHW(t *testing.T) {
	log := logRecords{timestamps: []int64{5, 1, 9, 3, 7, 2, 8}, epochs: []int32{0, 0, 0, 1, 1, 1, 2}}
	for hw := int64(0); hw <= 7; hw++ {
		for ts := int64(-3); ts <= 10; ts++ {
			got := ListOffset(ts, 0, hw, 2, log)
			if got.Code != messages.ErrorCode_NONE {
				t.Fatalf("hw %d, timestamp %d: %+v", hw, ts, got)
			}
			if got.Offset > hw || got.Offset == hw && ts != LatestTimestamp && !(ts == EarliestTimestamp && hw == 0) {
				t.Fatalf("hw %d, timestamp %d: listed offset %d", hw, ts, got.Offset)
			}
		}
	}
}
