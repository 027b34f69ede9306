package replica

import (
	"testing"

	"github.com/sluicemq/sluice/messages"
)

func TestDecide(t *testing.T) {
	state := func(leader, epoch, partEpoch int32, isr ...int32) *messages.PartitionState {
		return &messages.PartitionState{Leader: leader, LeaderEpoch: epoch, PartitionEpoch: partEpoch, Isr: isr}
	}
	base := func() Change {
		return Change{Self: 1, BrokerEpoch: 7, Current: state(2, 3, 5, 1, 2), Role: Follower, FollowingAddr: "b2", LeaderAddr: "b2", HasLog: true}
	}
	for _, tc := range []struct {
		name string
		edit func(c *Change)
		want Step
	}{
		{"an older leader epoch", func(c *Change) { c.Next = state(2, 2, 9, 1, 2) }, Ignore},
		{"an older partition epoch", func(c *Change) { c.Next = state(2, 3, 4, 1, 2) }, Ignore},
		{"the same state", func(c *Change) { c.Next = state(2, 3, 5, 1, 2); c.LeaderAddr = "b2-moved" }, Readdress},
		{"no log", func(c *Change) { c.Next = state(1, 4, 6, 1); c.HasLog = false }, Unusable},
		{"named leader with records lost, others in sync", func(c *Change) { c.Next = state(1, 4, 6, 1, 2); c.LostRecords = true }, YieldToInSync},
		{"named leader with records lost, alone in sync", func(c *Change) { c.Next = state(1, 4, 6, 1); c.LostRecords = true }, Lead},
		{"named leader of an earlier run", func(c *Change) {
			c.Next = state(1, 4, 6, 1, 2)
			c.Next.IsrEpochs = map[int32]int64{1: 6}
		}, AwaitDecision},
		{"named leader, this run", func(c *Change) {
			c.Next = state(1, 4, 6, 1, 2)
			c.Next.IsrEpochs = map[int32]int64{1: 7}
		}, Lead},
		{"the leader's ISR changed", func(c *Change) {
			c.Current, c.Role = state(1, 4, 6, 1, 2), Leader
			c.Next = state(1, 4, 7, 1)
		}, ISRChanged},
		{"a new epoch of the same leader", func(c *Change) {
			c.Current, c.Role = state(1, 4, 6, 1, 2), Leader
			c.Next = state(1, 5, 7, 1, 2)
		}, Lead},
		{"a follower's ISR changed", func(c *Change) { c.Next = state(2, 3, 6, 2) }, KeepFollowing},
		{"a follower's leader moved address", func(c *Change) { c.Next = state(2, 3, 6, 2); c.LeaderAddr = "b2-new" }, Follow},
		{"a new leader", func(c *Change) { c.Next = state(3, 4, 6, 3) }, Follow},
		{"the first state", func(c *Change) { c.Current, c.Role = nil, NoRole; c.Next = state(2, 0, 1, 1, 2) }, Follow},
		{"no leader", func(c *Change) { c.Next = state(-1, 4, 6) }, StepDown},
		{"moved away from this broker", func(c *Change) {
			c.Next = state(2, 3, 6, 2, 3)
			c.Next.Replicas = []int32{2, 3}
		}, StepDown},
		{"the leader's replica set grew", func(c *Change) {
			c.Current, c.Role = state(1, 4, 6, 1, 2), Leader
			c.Next = state(1, 4, 7, 1, 2)
			c.Next.Replicas = []int32{1, 2, 3}
		}, ISRChanged},
	} {
		c := base()
		tc.edit(&c)
		if got := Decide(c); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
