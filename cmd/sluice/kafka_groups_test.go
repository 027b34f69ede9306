package main

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/messages"
)

// lockedLines collects a process's output lines.
type lockedLines struct {
	mu    sync.Mutex
	lines []string
	part  string
}

func (l *lockedLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.part += string(p)
	for {
		i := strings.IndexByte(l.part, '\n')
		if i < 0 {
			return len(p), nil
		}
		l.lines = append(l.lines, l.part[:i])
		l.part = l.part[i+1:]
	}
}

func (l *lockedLines) get() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.lines...)
}

// Two kcat balanced consumers (librdkafka's classic group protocol) share
// a topic's partitions through Sluice's coordinator, each partition read by
// one of them; when one leaves, the other takes its partitions and goes on
// from the committed offsets. sluice group describe shows the Kafka group.
func TestKafkaKcatConsumerGroup(t *testing.T) {
	kcat := needTool(t, "kcat")
	b := startBroker(t, "--kafka-addr", "127.0.0.1:0", "--group-initial-rebalance-delay", "500ms")
	addr := kafkaAddr(t, b)
	b.cli("", "topic", "create", "shared", "--partitions", "4")

	start := func() (*exec.Cmd, *lockedLines) {
		out := &lockedLines{}
		cmd := exec.Command(kcat, "-b", addr, "-G", "kgroup", "shared", "-q", "-u", "-f", `%p:%s\n`,
			"-X", "auto.offset.reset=earliest", "-X", "session.timeout.ms=6000", "-X", "auto.commit.interval.ms=200")
		cmd.Stdout = out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		return cmd, out
	}
	first, out1 := start()
	_, out2 := start()
	// Both members in, each with partitions, before anything is produced.
	eventually(t, 60*time.Second, func() string {
		d := decodeLines[groupDescJSON](t, b.cli("", "group", "describe", "kgroup", "--format", "json"))[0]
		if d.State != "Stable" || len(d.Members) != 2 || len(d.Members[0].Assigned["shared"]) == 0 || len(d.Members[1].Assigned["shared"]) == 0 {
			return fmt.Sprintf("group: %s with %d members", d.State, len(d.Members))
		}
		return ""
	})
	var in strings.Builder
	for i := 0; i < 100; i++ {
		fmt.Fprintf(&in, "k%d:v%d\n", i, i)
	}
	b.cli(in.String(), "produce", "shared", "--key-delimiter", ":")
	seen := func() map[string]string { // value -> partition
		m := map[string]string{}
		for _, o := range []*lockedLines{out1, out2} {
			for _, l := range o.get() {
				p, v, _ := strings.Cut(l, ":")
				m[v] = p
			}
		}
		return m
	}
	eventually(t, 60*time.Second, func() string {
		if n := len(seen()); n < 100 {
			return fmt.Sprintf("%d of 100 records consumed", n)
		}
		return ""
	})
	parts1, parts2 := map[string]bool{}, map[string]bool{}
	for _, l := range out1.get() {
		p, _, _ := strings.Cut(l, ":")
		parts1[p] = true
	}
	for _, l := range out2.get() {
		p, _, _ := strings.Cut(l, ":")
		parts2[p] = true
	}
	for p := range parts1 {
		if parts2[p] {
			t.Errorf("partition %s read by both members", p)
		}
	}
	if len(parts1) == 0 || len(parts2) == 0 {
		t.Errorf("one member got nothing: %v %v", parts1, parts2)
	}
	d := decodeLines[groupDescJSON](t, b.cli("", "group", "describe", "kgroup", "--format", "json"))[0]
	if d.State != "Stable" || len(d.Members) != 2 {
		t.Errorf("sluice group describe: %+v", d)
	}
	assigned := 0
	for _, m := range d.Members {
		assigned += len(m.Assigned["shared"])
	}
	if assigned != 4 {
		t.Errorf("the members' assignments hold %d partitions, want 4: %+v", assigned, d.Members)
	}

	// The first member leaves (SIGTERM: kcat leaves the group); the other
	// takes every partition and reads what comes next.
	first.Process.Signal(syscall.SIGTERM)
	first.Wait()
	in.Reset()
	for i := 100; i < 140; i++ {
		fmt.Fprintf(&in, "k%d:v%d\n", i, i)
	}
	b.cli(in.String(), "produce", "shared", "--key-delimiter", ":")
	eventually(t, 60*time.Second, func() string {
		got := map[string]bool{}
		for _, l := range out2.get() {
			_, v, _ := strings.Cut(l, ":")
			got[v] = true
		}
		for i := 100; i < 140; i++ {
			if !got[fmt.Sprintf("v%d", i)] {
				return fmt.Sprintf("v%d not read by the remaining member", i)
			}
		}
		return ""
	})
}

// franz-go's group consumer (cooperative-sticky by default) consumes
// through the relay; its commits are where the next member resumes, with
// nothing read twice; kadm describes the group with the assignments the
// leader made.
func TestKafkaFranzGoConsumerGroup(t *testing.T) {
	b := startBroker(t, "--kafka-addr", "127.0.0.1:0", "--group-initial-rebalance-delay", "100ms")
	addr := kafkaAddr(t, b)
	b.cli("", "topic", "create", "fg", "--partitions", "3")
	var in strings.Builder
	for i := 0; i < 90; i++ {
		fmt.Fprintf(&in, "k%d:v%d\n", i, i)
	}
	b.cli(in.String(), "produce", "fg", "--key-delimiter", ":")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	consume := func(want int) map[string]bool {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumerGroup("fgroup"), kgo.ConsumeTopics("fg"),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit(), kgo.SessionTimeout(6*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		got := map[string]bool{}
		for len(got) < want {
			f := cl.PollRecords(ctx, want-len(got))
			if err := f.Err(); err != nil {
				t.Fatalf("after %d records: %v", len(got), err)
			}
			f.EachRecord(func(r *kgo.Record) {
				if got[string(r.Value)] {
					t.Fatalf("%s twice", r.Value)
				}
				got[string(r.Value)] = true
			})
		}
		if err := cl.CommitUncommittedOffsets(ctx); err != nil {
			t.Fatal(err)
		}
		if want == 60 {
			described, err := kadm.NewClient(cl).DescribeGroups(ctx, "fgroup")
			if err != nil {
				t.Fatal(err)
			}
			d := described["fgroup"]
			a, ok := d.Members[0].Assigned.AsConsumer()
			if d.State != "Stable" || d.Protocol == "" || len(d.Members) != 1 || !ok || len(a.Topics) != 1 || len(a.Topics[0].Partitions) != 3 {
				t.Errorf("kadm describe: %+v", d)
			}
		}
		return got
	}
	first := consume(60)
	second := consume(30)
	for v := range second {
		if first[v] {
			t.Errorf("%s read by both members: the second did not resume at the commits", v)
		}
	}
	if len(first)+len(second) != 90 {
		t.Errorf("%d + %d records", len(first), len(second))
	}
	g := decodeLines[groupDescJSON](t, b.cli("", "group", "describe", "fgroup", "--format", "json"))[0]
	var committed int64
	for _, p := range g.Partitions {
		committed += max(p.Committed, 0)
	}
	if committed != 90 {
		t.Errorf("committed offsets add up to %d, want 90: %+v", committed, g.Partitions)
	}

	// Sluice's group commands on the Kafka clients' group: list it, reset
	// its offsets to the start (the next member reads everything again),
	// delete it.
	if out := b.cli("", "group", "list"); !strings.Contains(out, "fgroup") {
		t.Errorf("sluice group list: %q", out)
	}
	if out := b.cli("", "group", "reset-offsets", "fgroup", "--topic", "fg", "--to-earliest"); out != "fg 0 -> 0\nfg 1 -> 0\nfg 2 -> 0\n" {
		t.Errorf("sluice group reset-offsets printed %q", out)
	}
	if again := consume(90); len(again) != 90 {
		t.Errorf("after the reset the next member read %d records, want 90", len(again))
	}
	b.cli("", "group", "delete", "fgroup")
	described, err := kadm.NewClient(newKgo(t, addr)).DescribeGroups(ctx, "fgroup")
	if err != nil || described["fgroup"].State != "Dead" {
		t.Errorf("after sluice group delete: %+v %v", described["fgroup"], err)
	}
}

// The group coordinator's broker is killed with SIGKILL while a franz-go
// group member has committed offsets: the commits survive on the
// replicated __consumer_offsets, and the next member resumes at them.
func TestKafkaGroupCoordinatorFailover(t *testing.T) {
	c := startCluster(t, 3, "--kafka-addr", "127.0.0.1:0", "--group-initial-rebalance-delay", "100ms")
	c.createTopic("fo", 3, 3, map[string]string{"min.insync.replicas": "2"})
	seeds := strings.Join(kafkaSeeds(t, c), ",")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	p := newKgo(t, seeds)
	for i := 0; i < 300; i++ {
		if err := p.ProduceSync(ctx, &kgo.Record{Topic: "fo", Key: []byte(fmt.Sprint(i)), Value: []byte(fmt.Sprintf("v%d", i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	consume := func(want int, seen map[string]bool) {
		cl := newKgo(t, seeds, kgo.ConsumerGroup("fogroup"), kgo.ConsumeTopics("fo"),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit(), kgo.SessionTimeout(6*time.Second))
		got := 0
		for got < want {
			f := cl.PollRecords(ctx, want-got)
			if ctx.Err() != nil {
				t.Fatalf("after %d records: %v", got, f.Err())
			}
			// While the coordinator fails over, joins fail and the client
			// retries; those errors come with the fetches.
			f.EachError(func(topic string, p int32, err error) { t.Logf("while consuming: %v", err) })
			f.EachRecord(func(r *kgo.Record) {
				if seen[string(r.Value)] {
					t.Fatalf("%s read again", r.Value)
				}
				seen[string(r.Value)] = true
				got++
			})
		}
		if err := cl.CommitUncommittedOffsets(ctx); err != nil {
			t.Fatal(err)
		}
		cl.Close()
	}
	seen := map[string]bool{}
	consume(150, seen)

	coord := kadm.NewClient(p).FindGroupCoordinators(ctx, "fogroup")["fogroup"]
	if coord.Err != nil {
		t.Fatal(coord.Err)
	}
	c.brokers[coord.NodeID].kill9()
	t.Logf("killed broker %d, the coordinator of fogroup", coord.NodeID)
	consume(150, seen)
	if len(seen) != 300 {
		t.Fatalf("%d distinct records read", len(seen))
	}
}

// Static membership with franz-go: members with group instance ids share a
// topic; one closes (a static member does not leave) and a new client
// under the same instance id takes its place in the same generation with
// the same partitions, while the other member sees no rebalance; the
// member id it replaced is fenced. LeaveGroup by instance ids (kadm)
// empties the group.
func TestKafkaStaticMembership(t *testing.T) {
	b := startBroker(t, "--kafka-addr", "127.0.0.1:0", "--group-initial-rebalance-delay", "100ms")
	addr := kafkaAddr(t, b)
	b.cli("", "topic", "create", "st", "--partitions", "4")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	adm := kadm.NewClient(newKgo(t, addr))

	var revoked atomic.Int32
	member := func(instance string, opts ...kgo.Opt) *kgo.Client {
		opts = append(opts, kgo.SeedBrokers(addr), kgo.ConsumerGroup("sgroup"), kgo.ConsumeTopics("st"),
			kgo.InstanceID(instance), kgo.SessionTimeout(30*time.Second))
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			t.Fatal(err)
		}
		go func() { // a consumer polls; the group is joined meanwhile
			for ctx.Err() == nil && !cl.PollFetches(ctx).IsClientClosed() {
			}
		}()
		return cl
	}
	describe := func() kadm.DescribedGroup {
		var described kadm.DescribedGroups
		eventually(t, 30*time.Second, func() string { // the first group request creates __consumer_offsets
			var err error
			if described, err = adm.DescribeGroups(ctx, "sgroup"); err != nil {
				return err.Error()
			}
			return ""
		})
		return described["sgroup"]
	}
	generationNow := func() int32 { // kadm does not show it
		return decodeLines[groupDescJSON](t, b.cli("", "group", "describe", "sgroup", "--format", "json"))[0].Generation
	}
	// byInstance maps each member's instance id to its member id and
	// partitions, once the group is Stable with every member assigned.
	type seat struct {
		memberID   string
		partitions []int32
	}
	byInstance := func(d kadm.DescribedGroup) (map[string]seat, string) {
		if d.State != "Stable" || len(d.Members) != 2 {
			return nil, fmt.Sprintf("%s with %d members", d.State, len(d.Members))
		}
		out := map[string]seat{}
		for _, m := range d.Members {
			a, ok := m.Assigned.AsConsumer()
			if m.InstanceID == nil || !ok || len(a.Topics) != 1 || len(a.Topics[0].Partitions) != 2 {
				return nil, fmt.Sprintf("member %s: instance %v, assignment %+v", m.MemberID, m.InstanceID, m.Assigned)
			}
			out[*m.InstanceID] = seat{m.MemberID, slices.Sorted(slices.Values(a.Topics[0].Partitions))}
		}
		return out, ""
	}

	a := member("a")
	keep := member("b", kgo.OnPartitionsRevoked(func(context.Context, *kgo.Client, map[string][]int32) { revoked.Add(1) }))
	defer keep.Close()
	var before map[string]seat
	var generation int32
	eventually(t, time.Minute, func() string {
		d := describe()
		seats, why := byInstance(d)
		before = seats
		return why
	})
	if !strings.HasPrefix(before["a"].memberID, "a-") {
		t.Errorf("a static member's id %q does not start with its instance id", before["a"].memberID)
	}
	generation = generationNow()
	revoked.Store(0)

	a.Close() // a static member does not leave: its seat waits for it
	if d, gen := describe(), generationNow(); len(d.Members) != 2 || gen != generation {
		t.Fatalf("after a static member closed: %s, generation %d, %d members", d.State, gen, len(d.Members))
	}
	restarted := member("a")
	defer restarted.Close()
	var after map[string]seat
	eventually(t, time.Minute, func() string {
		d := describe()
		seats, why := byInstance(d)
		if why == "" && seats["a"].memberID == before["a"].memberID {
			why = "instance a still has its old member id"
		}
		if gen := generationNow(); why == "" && gen != generation {
			t.Fatalf("the rejoin rebalanced: generation %d -> %d", generation, gen)
		}
		after = seats
		return why
	})
	if !slices.Equal(after["a"].partitions, before["a"].partitions) || after["b"].memberID != before["b"].memberID ||
		!slices.Equal(after["b"].partitions, before["b"].partitions) {
		t.Errorf("seats moved: before %+v, after %+v", before, after)
	}
	if n := revoked.Load(); n != 0 {
		t.Errorf("the other member had partitions revoked %d times", n)
	}

	// The replaced member id is fenced.
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Group, hb.MemberID, hb.Generation, hb.InstanceID = "sgroup", before["a"].memberID, generation, kmsg.StringPtr("a")
	resp, err := hb.RequestWith(ctx, newKgo(t, addr))
	if err != nil || resp.ErrorCode != int16(messages.ErrorCode_FENCED_INSTANCE_ID) {
		t.Errorf("heartbeat of the replaced member id: %+v %v", resp, err)
	}
	g := decodeLines[groupDescJSON](t, b.cli("", "group", "describe", "sgroup", "--format", "json"))[0]
	for _, m := range g.Members {
		if m.InstanceID == "" || after[m.InstanceID].memberID != m.MemberID {
			t.Errorf("sluice group describe: member %+v", m)
		}
	}

	// Static members that closed stay until their session ends or an
	// admin removes them by instance id.
	restarted.Close()
	keep.Close()
	left, err := adm.LeaveGroup(ctx, kadm.LeaveGroup("sgroup").InstanceIDs("a", "b", "c"))
	if err != nil {
		t.Fatal(err)
	}
	for instance, want := range map[string]string{"a": "", "b": "", "c": "UNKNOWN_MEMBER_ID"} {
		got := ""
		if err := left[instance].Err; err != nil {
			got = err.Error()
		}
		if (want == "") != (got == "") || !strings.Contains(got, want) {
			t.Errorf("LeaveGroup of instance %s: %q, want %q", instance, got, want)
		}
	}
	if d := describe(); d.State != "Empty" || len(d.Members) != 0 {
		t.Errorf("after LeaveGroup by instance ids: %s with %d members", d.State, len(d.Members))
	}
}
