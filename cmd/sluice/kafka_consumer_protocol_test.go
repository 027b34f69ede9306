package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// owners records which client holds which partition, as the clients'
// own callbacks report it, and fails on a partition held by two at once.
type owners struct {
	mu     sync.Mutex
	t      *testing.T
	holder map[string]string // "topic/partition" -> client
	shared []string
}

func (o *owners) opts(name string) []kgo.Opt {
	return []kgo.Opt{
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, ps map[string][]int32) { o.change(name, ps, true) }),
		kgo.OnPartitionsRevoked(func(ctx context.Context, cl *kgo.Client, ps map[string][]int32) {
			if err := cl.CommitMarkedOffsets(ctx); err != nil {
				o.t.Errorf("%s: commit on revoke: %v", name, err)
			}
			o.change(name, ps, false)
		}),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, ps map[string][]int32) { o.change(name, ps, false) }),
	}
}

func (o *owners) change(name string, ps map[string][]int32, gained bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for topic, parts := range ps {
		for _, p := range parts {
			key := fmt.Sprintf("%s/%d", topic, p)
			switch {
			case !gained && o.holder[key] == name:
				delete(o.holder, key)
			case gained && o.holder[key] != "" && o.holder[key] != name:
				o.shared = append(o.shared, fmt.Sprintf("%s given to %s while %s held it", key, name, o.holder[key]))
			case gained:
				o.holder[key] = name
			}
		}
	}
}

func (o *owners) held() map[string]string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return maps.Clone(o.holder)
}

// franz-go consumers in a group of Kafka's consumer protocol (KIP-848):
// the coordinator assigns; a second member gets its share only after the
// first gave it up (their callbacks never hold a partition at once); every
// record is read once across a member joining and leaving, and the commits
// made at member epochs are where the group resumes. kadm's
// DescribeConsumerGroups and sluice group describe show the epochs; the
// group and a classic one keep apart.
func TestKafkaConsumerProtocolGroup(t *testing.T) {
	b := startBroker(t, "--kafka-addr", "127.0.0.1:0", "--group-consumer-heartbeat-interval", "200ms")
	addr := kafkaAddr(t, b)
	b.cli("", "topic", "create", "kip848", "--partitions", "6")
	var in strings.Builder
	for i := range 300 {
		fmt.Fprintf(&in, "k%d:v%d\n", i, i)
	}
	b.cli(in.String(), "produce", "kip848", "--key-delimiter", ":")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	own := &owners{t: t, holder: map[string]string{}}
	var mu sync.Mutex
	seen := map[string]string{} // value -> client
	member := func(name string) *kgo.Client {
		opts := append([]kgo.Opt{kgo.ConsumerGroup("g848"), kgo.ConsumeTopics("kip848"), kgo.ServerSideBalancer(),
			kgo.Balancers(kgo.RangeBalancer()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.AutoCommitMarks(),
			kgo.AutoCommitInterval(100 * time.Millisecond), kgo.BlockRebalanceOnPoll(), kgo.ClientID(name)}, own.opts(name)...)
		cl := newKgo(t, addr, opts...)
		go func() {
			for ctx.Err() == nil {
				fs := cl.PollRecords(ctx, 10)
				if fs.IsClientClosed() {
					return
				}
				fs.EachRecord(func(r *kgo.Record) {
					mu.Lock()
					if other, ok := seen[string(r.Value)]; ok {
						t.Errorf("%s read by %s and %s", r.Value, other, name)
					}
					seen[string(r.Value)] = name
					mu.Unlock()
					cl.MarkCommitRecords(r)
				})
				cl.AllowRebalance()
				time.Sleep(20 * time.Millisecond) // slow enough for the others to join before all is read
			}
		}()
		return cl
	}
	read := func() int { mu.Lock(); defer mu.Unlock(); return len(seen) }
	first := member("first")
	eventually(t, 30*time.Second, func() string {
		if n := len(own.held()); n != 6 {
			return fmt.Sprintf("first holds %d of 6 partitions", n)
		}
		return ""
	})
	second := member("second")
	adm := kadm.NewClient(newKgo(t, addr))
	eventually(t, 30*time.Second, func() string {
		held := own.held()
		by := map[string]int{}
		for _, c := range held {
			by[c]++
		}
		if len(held) != 6 || by["first"] != 3 || by["second"] != 3 {
			return fmt.Sprintf("held: %v", by)
		}
		d, err := adm.DescribeConsumerGroups(ctx, "g848")
		if err != nil {
			return err.Error()
		}
		g := d["g848"]
		if g.Err != nil || g.State != "stable" || len(g.Members) != 2 || g.Epoch != g.AssignmentEpoch {
			return fmt.Sprintf("described: %+v", g)
		}
		for _, m := range g.Members {
			if m.MemberEpoch != g.Epoch || len(m.Assignment["kip848"]) != 3 || m.ClientHost == "" {
				return fmt.Sprintf("member %+v", m)
			}
		}
		return ""
	})
	desc := decodeLines[groupDescJSON](t, b.cli("", "group", "describe", "g848", "--format", "json"))[0]
	if desc.Type != "consumer" || desc.State != "Stable" || len(desc.Members) != 2 || desc.Members[0].Epoch != desc.Generation ||
		desc.Members[0].MemberState != "stable" || len(desc.Members[0].Target["kip848"]) != 3 {
		t.Errorf("sluice group describe: %+v", desc)
	}
	if out := b.cli("", "group", "list", "--format", "json"); !strings.Contains(out, `"type":"consumer"`) {
		t.Errorf("sluice group list: %s", out)
	}
	if out := b.cli("", "group", "list"); !strings.Contains(out, "TYPE") || !regexp.MustCompile(`g848\s+consumer\s+Stable\s+2`).MatchString(out) {
		t.Errorf("sluice group list: %s", out)
	}

	// Kept apart: a classic member cannot join it, nor a new-protocol
	// member a classic group with members.
	join := kmsg.NewPtrJoinGroupRequest()
	join.Group, join.ProtocolType, join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = "g848", "consumer", 10000, 10000
	join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0, 0}}}
	if resp, err := join.RequestWith(ctx, newKgo(t, addr)); err != nil || resp.ErrorCode != kerr.InconsistentGroupProtocol.Code {
		t.Errorf("classic join to the consumer group: %+v %v", resp, err)
	}

	second.Close() // leaves (epoch -1): first takes its partitions back
	eventually(t, 30*time.Second, func() string {
		held := own.held()
		for p, c := range held {
			if c != "first" {
				return fmt.Sprintf("%s still held by %s", p, c)
			}
		}
		if len(held) != 6 {
			return fmt.Sprintf("first holds %d of 6", len(held))
		}
		return ""
	})
	eventually(t, 60*time.Second, func() string {
		if n := read(); n < 300 {
			return fmt.Sprintf("%d of 300 records read", n)
		}
		return ""
	})
	first.Close()
	own.mu.Lock()
	for _, s := range own.shared {
		t.Error(s)
	}
	own.mu.Unlock()
	g := decodeLines[groupDescJSON](t, b.cli("", "group", "describe", "g848", "--format", "json"))[0]
	var committed int64
	for _, p := range g.Partitions {
		committed += max(p.Committed, 0)
	}
	if committed != 300 || len(g.Members) != 0 {
		t.Errorf("after both left: %d members, commits add up to %d, want 300: %+v", len(g.Members), committed, g.Partitions)
	}

	// A classic group with a member refuses a new-protocol member.
	classic := newKgo(t, addr, kgo.ConsumerGroup("classic"), kgo.ConsumeTopics("kip848"))
	eventually(t, 30*time.Second, func() string {
		if d, err := adm.DescribeGroups(ctx, "classic"); err != nil || d["classic"].State != "Stable" {
			return fmt.Sprintf("classic group: %+v %v", d["classic"], err)
		}
		return ""
	})
	hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	hb.Group, hb.MemberID, hb.RebalanceTimeoutMillis, hb.SubscribedTopicNames = "classic", "m", 10000, []string{"kip848"}
	hb.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	resp, err := hb.RequestWith(ctx, classic)
	if err != nil || resp.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Errorf("new-protocol join to a classic group: %+v %v", resp, err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); !errors.Is(err, kerr.GroupIDNotFound) {
		t.Errorf("error %v", err)
	}
}

// A consumer-protocol group survives its coordinator's restart (SIGKILL):
// the group is read back from __consumer_offsets, so its members keep
// their ids, epochs and partitions; none is fenced or loses a partition,
// and they go on consuming.
func TestKafkaConsumerProtocolGroupSurvivesRestart(t *testing.T) {
	port := freePort(t)
	b := startBroker(t, "--kafka-addr", fmt.Sprintf("127.0.0.1:%d", port), "--group-consumer-heartbeat-interval", "200ms")
	addr := kafkaAddr(t, b)
	b.cli("", "topic", "create", "durable848", "--partitions", "4")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var mu sync.Mutex
	lost := 0
	seen := map[string]int{}
	member := func(name string) {
		cl := newKgo(t, addr, kgo.ConsumerGroup("durable"), kgo.ConsumeTopics("durable848"), kgo.ServerSideBalancer(),
			kgo.Balancers(kgo.StickyBalancer()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.ClientID(name),
			kgo.OnPartitionsLost(func(context.Context, *kgo.Client, map[string][]int32) { mu.Lock(); lost++; mu.Unlock() }))
		go func() {
			for ctx.Err() == nil {
				fs := cl.PollFetches(ctx)
				if fs.IsClientClosed() {
					return
				}
				fs.EachRecord(func(r *kgo.Record) { mu.Lock(); seen[string(r.Value)]++; mu.Unlock() })
			}
		}()
	}
	member("a")
	member("b")
	adm := kadm.NewClient(newKgo(t, addr))
	stable := func() (kadm.DescribedConsumerGroup, string) {
		d, err := adm.DescribeConsumerGroups(ctx, "durable")
		if err != nil {
			return kadm.DescribedConsumerGroup{}, err.Error()
		}
		g := d["durable"]
		if g.Err != nil || g.State != "stable" || len(g.Members) != 2 {
			return g, fmt.Sprintf("group: %+v", g)
		}
		for _, m := range g.Members {
			if len(m.Assignment["durable848"]) != 2 {
				return g, fmt.Sprintf("member %s holds %v", m.MemberID, m.Assignment)
			}
		}
		return g, ""
	}
	var before kadm.DescribedConsumerGroup
	eventually(t, 30*time.Second, func() string { var why string; before, why = stable(); return why })

	b.kill9()
	b.start()
	eventually(t, 60*time.Second, func() string {
		after, why := stable()
		if why != "" {
			return why
		}
		if after.Epoch != before.Epoch {
			return fmt.Sprintf("epoch %d after the restart, %d before", after.Epoch, before.Epoch)
		}
		for i, m := range after.Members {
			if m.MemberID != before.Members[i].MemberID || m.MemberEpoch != before.Members[i].MemberEpoch {
				return fmt.Sprintf("member %s at %d, was %s at %d", m.MemberID, m.MemberEpoch, before.Members[i].MemberID, before.Members[i].MemberEpoch)
			}
		}
		return ""
	})
	var in strings.Builder
	for i := range 100 {
		fmt.Fprintf(&in, "v%d\n", i)
	}
	b.cli(in.String(), "produce", "durable848")
	eventually(t, 60*time.Second, func() string {
		mu.Lock()
		defer mu.Unlock()
		if len(seen) < 100 {
			return fmt.Sprintf("%d of 100 records read after the restart", len(seen))
		}
		return ""
	})
	mu.Lock()
	defer mu.Unlock()
	if lost != 0 {
		t.Errorf("members lost their partitions %d times across the restart", lost)
	}
	for v, n := range seen {
		if n != 1 {
			t.Errorf("%s read %d times", v, n)
		}
	}
}
