package replica

import (
	"testing"
	"time"

	"github.com/sluicemq/sluice/messages"
)

func TestReportOffline(t *testing.T) {
	now := time.Unix(1000, 0)
	long := now.Add(-OfflineReportEvery)
	cases := []struct {
		name string
		st   *messages.PartitionState
		last time.Time
		want bool
	}{
		{"no state yet", nil, time.Time{}, false},
		{"the leader, with another in sync", &messages.PartitionState{Leader: 1, Isr: []int32{1, 2}}, long, true},
		{"an ISR member, not leading", &messages.PartitionState{Leader: 2, Isr: []int32{1, 2}}, long, true},
		{"the leader, alone in the ISR", &messages.PartitionState{Leader: 1, Isr: []int32{1}}, long, false},
		{"neither leader nor in the ISR", &messages.PartitionState{Leader: 2, Isr: []int32{2, 3}}, long, false},
		{"reported just now", &messages.PartitionState{Leader: 1, Isr: []int32{1, 2}}, now.Add(-OfflineReportEvery + time.Millisecond), false},
		{"never reported", &messages.PartitionState{Leader: 1, Isr: []int32{2}}, time.Time{}, true},
	}
	for _, c := range cases {
		if got := ReportOffline(1, c.st, c.last, now); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
