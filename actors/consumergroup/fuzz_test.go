package consumergroup

import (
	"fmt"
	"testing"
	"time"

	"github.com/sluicemq/sluice/actors/groups"
)

// Any sequence of heartbeats, however wrong (any epoch, owned partitions
// that were never given, subscriptions, regexes, leaves, time going by),
// leaves the group without a panic and with no partition held by two
// members.
func FuzzHeartbeats(f *testing.F) {
	f.Add([]byte{0, 0, 1, 2, 3, 0, 1, 5, 1, 1, 0, 4})
	f.Add([]byte("\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f"))
	regexes := []string{"", "a", "a|b", "(", ".*"}
	f.Fuzz(func(t *testing.T, ops []byte) {
		ts := topics{"a": 3, "b": 2}
		cat := ts.catalog()
		g := New(testConfig())
		now := t0
		for i := 0; i+3 < len(ops) && i < 400; i += 4 {
			op, who, epoch, arg := ops[i], ops[i+1]%4, int32(int8(ops[i+2])), ops[i+3]
			h := Heartbeat{MemberID: fmt.Sprintf("m%d", who), MemberEpoch: epoch % 8, RebalanceTimeout: -1}
			switch op % 6 {
			case 0:
				h.MemberEpoch, h.RebalanceTimeout = 0, time.Duration(arg)*time.Second
				h.Topics, h.TopicsSet = []string{"a", "b"}[:1+arg%2], true
			case 1:
				h.Owned, h.OwnedSet = []groups.TopicPartitions{{Topic: "a", Partitions: []int32{int32(arg % 4)}}}, true
			case 2:
				h.Regex, h.RegexSet = regexes[int(arg)%len(regexes)], true
			case 3:
				h.InstanceID, h.MemberEpoch = fmt.Sprintf("i%d", arg%2), -1-int32(arg%2)
			case 4:
				now = now.Add(time.Duration(arg) * time.Second)
				g.Tick(now, cat)
				continue
			case 5:
				ts["a"] = 3 + int32(arg%3)
				h.Assignor = []string{"", Uniform, Range, "x"}[arg%4]
			}
			g.Heartbeat(h, now, cat)
			heldOnce(t, g)
		}
	})
}

// Any text a member subscribes with is measured without a panic, and one
// the group refuses (too long, not compiling) costs nothing.
func FuzzRegexBytes(f *testing.F) {
	for _, s := range []string{"", ".*", "[a-z]{1000}", "(", "a{2000}", "((a{100}){10}){10}", "\\p{Greek}+|x"} {
		f.Add(s)
	}
	cat := topics{"a": 1, "orders": 2}.catalog()
	f.Fuzz(func(t *testing.T, regex string) {
		n := RegexBytes(regex, "User:x", cat)
		if _, err := compile(regex); (err != nil || len(regex) > MaxRegexBytes) && n != 0 {
			t.Fatalf("%q is refused but costs %d bytes", regex, n)
		}
		if n < 0 {
			t.Fatalf("%q costs %d bytes", regex, n)
		}
	})
}
