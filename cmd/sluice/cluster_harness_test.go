package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicemq/sluice/client"
	"github.com/sluicemq/sluice/cluster/consultest"
	"github.com/sluicemq/sluice/internal/testutil"
	"github.com/sluicemq/sluice/messages"
	"github.com/sluicemq/sluice/messages/record"
	"github.com/sluicemq/sluice/storage"
)

// Timings of the cluster under test: a broker silent for checkTTL is dead,
// a follower behind for lagTime leaves the ISR.
const (
	checkTTL = "2s"
	lagTime  = "4s"
)

// testClientOpts are added to the options of every client the harness
// makes, and testBrokerArgs(id) to the flags of every broker startCluster
// starts: the secure cluster tests set them to TLS credentials (in a test
// process of their own, see TestSecureCluster).
var (
	testClientOpts []client.Opt
	testBrokerArgs func(id int32) []string
)

// sharedOpts is testClientOpts as one option, for any kind of client.
func sharedOpts() client.Opt { return client.Options(testClientOpts...) }

// testCluster is a real Consul agent and real broker processes on 127.0.0.1.
type testCluster struct {
	t       *testing.T
	consul  *consultest.Agent
	name    string
	brokers map[int32]*brokerProc
	admin   *client.Admin
	// extra are the flags every broker of the cluster gets.
	extra []string
	// mu guards brokers against addBroker while a monitor goroutine reads
	// it (brokersNow); the test's own goroutine reads it freely.
	mu sync.Mutex
}

// brokersNow is a copy of brokers, for goroutines beside the test's.
func (c *testCluster) brokersNow() map[int32]*brokerProc {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.brokers)
}

var clusterSeq atomic.Int32

// startCluster starts Consul and brokers 1..n.
func startCluster(t *testing.T, n int, extra ...string) *testCluster {
	t.Helper()
	c := &testCluster{t: t, consul: consultest.Start(t), brokers: map[int32]*brokerProc{},
		name: fmt.Sprintf("t%d-%d", os.Getpid(), clusterSeq.Add(1))}
	c.extra = extra
	for id := int32(1); id <= int32(n); id++ {
		c.addBroker(id)
	}
	var err error
	c.admin, err = client.NewAdmin(c.seeds(), sharedOpts(), client.RequestTimeout(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	c.waitFor("every broker registered", time.Minute, func() bool {
		md, err := c.metadata()
		return err == nil && len(md.Brokers) == n && md.ControllerId > 0
	})
	return c
}

// addBroker starts broker id of the cluster, with the flags of the others.
func (c *testCluster) addBroker(id int32) {
	args := append([]string{"--consul", c.consul.Addr(), "--cluster", c.name, "--id", fmt.Sprint(id),
		"--check-ttl", checkTTL, "--replica-lag-time-max", lagTime}, c.extra...)
	if testBrokerArgs != nil {
		args = append(args, testBrokerArgs(id)...)
	}
	b := startBroker(c.t, args...)
	c.mu.Lock()
	c.brokers[id] = b
	c.mu.Unlock()
}

// seeds lists every broker's address, for clients' bootstrap.
func (c *testCluster) seeds() string {
	var addrs []string
	for _, id := range c.ids() {
		addrs = append(addrs, c.brokers[id].Addr)
	}
	return strings.Join(addrs, ",")
}

func (c *testCluster) ids() []int32 {
	var ids []int32
	for id := range c.brokers {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// metadata asks any live broker.
func (c *testCluster) metadata(topics ...string) (*messages.MetadataResponse, error) {
	var lastErr error
	for _, id := range c.ids() {
		b := c.brokers[id]
		if !b.alive() || b.paused.Load() {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		res, err := c.admin.Request(ctx, b.Addr, &messages.MetadataRequest{Topics: topics})
		cancel()
		if err == nil {
			return res.(*messages.MetadataResponse), nil
		}
		lastErr = err
	}
	return nil, fmt.Errorf("no broker answered: %v", lastErr)
}

func (c *testCluster) waitFor(what string, timeout time.Duration, cond func() bool) {
	c.t.Helper()
	testutil.WaitFor(c.t, timeout, what, cond)
}

func (c *testCluster) createTopic(name string, partitions, rf int32, configs map[string]string) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.admin.CreateTopic(ctx, client.TopicSpec{Name: name, Partitions: partitions, ReplicationFactor: rf, Configs: configs}); err != nil {
		c.t.Fatalf("create %s: %v", name, err)
	}
	c.waitFor("leaders of "+name, 30*time.Second, func() bool {
		md, err := c.metadata(name)
		if err != nil || len(md.Topics) != 1 || len(md.Topics[0].Partitions) != int(partitions) {
			return false
		}
		for _, p := range md.Topics[0].Partitions {
			if p.Leader < 0 || len(p.Isr) != int(rf) {
				return false
			}
		}
		return true
	})
}

// waitControllerCounts waits until the controller counts at least n brokers
// alive: it then validates a topic with n replicas. The controller runs its
// elections for a membership change before it handles the next request, so
// afterwards its decisions about the brokers it sees have been made.
func (c *testCluster) waitControllerCounts(n int32) {
	c.t.Helper()
	c.waitFor(fmt.Sprintf("the controller counting %d brokers alive", n), time.Minute, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		res, err := c.admin.Request(ctx, "", &messages.CreateTopicsRequest{ValidateOnly: true,
			Topics: []*messages.TopicSpec{{Name: "validate-only", Partitions: 1, ReplicationFactor: n}}})
		if err != nil {
			return false
		}
		r := res.(*messages.CreateTopicsResponse)
		return len(r.Results) == 1 && r.Results[0].Error == messages.ErrorCode_NONE
	})
}

// partitionState returns a partition's metadata as a live broker sees it.
func (c *testCluster) partitionState(topic string, p int32) *messages.PartitionMetadata {
	md, err := c.metadata(topic)
	if err != nil || len(md.Topics) != 1 {
		return nil
	}
	for _, pm := range md.Topics[0].Partitions {
		if pm.Partition == p {
			return pm
		}
	}
	return nil
}

func (c *testCluster) leaderOf(topic string, p int32) int32 {
	if pm := c.partitionState(topic, p); pm != nil {
		return pm.Leader
	}
	return -1
}

func (c *testCluster) controller() int32 {
	md, err := c.metadata()
	if err != nil {
		return -1
	}
	return md.ControllerId
}

// replicaStates asks every live broker for its replicas of topic.
func (c *testCluster) replicaStates(topic string) map[int32][]*messages.ReplicaState {
	out := map[int32][]*messages.ReplicaState{}
	for id, b := range c.brokers {
		if !b.alive() || b.paused.Load() {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		res, err := c.admin.Request(ctx, b.Addr, &messages.DescribeReplicasRequest{Topics: []string{topic}})
		cancel()
		if err == nil {
			out[id] = res.(*messages.DescribeReplicasResponse).Replicas
		}
	}
	return out
}

// waitFullyReplicated waits until every partition has all its replicas in
// the ISR and every replica's LEO and HW equal the leader's LEO.
func (c *testCluster) waitFullyReplicated(topic string, timeout time.Duration) {
	c.t.Helper()
	var last string
	defer func() {
		if c.t.Failed() {
			c.t.Logf("last replica states of %s:\n%s", topic, last)
		}
	}()
	c.waitFor(topic+" fully replicated", timeout, func() bool {
		md, err := c.metadata(topic)
		if err != nil || len(md.Topics) != 1 {
			last = fmt.Sprintf("metadata: %v", err)
			return false
		}
		states := c.replicaStates(topic)
		last = fmt.Sprintf("metadata %v\nreplicas %v", md.Topics[0].Partitions, states)
		for _, pm := range md.Topics[0].Partitions {
			if pm.Leader < 0 || len(pm.Isr) != len(pm.Replicas) {
				return false
			}
			var leo int64 = -1
			for _, id := range pm.Replicas {
				var rs *messages.ReplicaState
				for _, s := range states[id] {
					if s.Partition == pm.Partition {
						rs = s
					}
				}
				if rs == nil || rs.HighWatermark != rs.LogEndOffset || (leo >= 0 && rs.LogEndOffset != leo) {
					return false
				}
				leo = rs.LogEndOffset
			}
		}
		return true
	})
}

// ---- workload ---------------------------------------------------------------

// ledger records what producers were told.
type ledger struct {
	mu         sync.Mutex
	acked      map[int32]map[int64]string // partition -> offset -> value
	failed     int
	violations []string
	ackTimes   map[int32][]time.Time // partition -> when each ack came, in order
}

func newLedger() *ledger {
	return &ledger{acked: map[int32]map[int64]string{}, ackTimes: map[int32][]time.Time{}}
}

func (l *ledger) ack(r *client.Record) {
	l.mu.Lock()
	defer l.mu.Unlock()
	m := l.acked[r.Partition]
	if m == nil {
		m = map[int64]string{}
		l.acked[r.Partition] = m
	}
	if prev, ok := m[r.Offset]; ok && prev != string(r.Value) {
		l.violations = append(l.violations, fmt.Sprintf("offset %d-%d acknowledged for %q and %q", r.Partition, r.Offset, prev, r.Value))
	}
	m[r.Offset] = string(r.Value)
	l.ackTimes[r.Partition] = append(l.ackTimes[r.Partition], time.Now())
}

func (l *ledger) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, m := range l.acked {
		n += len(m)
	}
	return n
}

// acksSince counts acknowledgements after t.
func (l *ledger) acksSince(t time.Time) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, times := range l.ackTimes {
		for _, at := range times {
			if at.After(t) {
				n++
			}
		}
	}
	return n
}

// firstAckAfter is when partition p got its first acknowledgement after t
// (zero if none).
func (l *ledger) firstAckAfter(p int32, t time.Time) time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, at := range l.ackTimes[p] {
		if at.After(t) {
			return at
		}
	}
	return time.Time{}
}

// longestGap is the longest time partition p went without an
// acknowledgement: how long it was unavailable to producers.
func (l *ledger) longestGap(p int32) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	var gap time.Duration
	times := l.ackTimes[p]
	for i := 1; i < len(times); i++ {
		gap = max(gap, times[i].Sub(times[i-1]))
	}
	return gap
}

// workload runs acks=all producers writing unique values until stopped.
type workload struct {
	t       *testing.T
	ledger  *ledger
	stopCh  chan struct{}
	wg      sync.WaitGroup
	sent    atomic.Int64
	prods   []*client.Producer
	stopped bool
}

func startWorkload(t *testing.T, c *testCluster, topic string, producers int) *workload {
	t.Helper()
	w := &workload{t: t, ledger: newLedger(), stopCh: make(chan struct{})}
	for i := 0; i < producers; i++ {
		p, err := client.NewProducer(c.seeds(), sharedOpts(), client.Acks(client.AllAcks), client.Linger(2*time.Millisecond),
			client.BatchBytes(64<<10), client.RequestTimeout(5*time.Second), client.RetryBackoff(100*time.Millisecond),
			client.DeliveryTimeout(3*time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		w.prods = append(w.prods, p)
		w.wg.Add(1)
		go func(i int, p *client.Producer) {
			defer w.wg.Done()
			inflight := make(chan struct{}, 200)
			for n := 0; ; n++ {
				select {
				case <-w.stopCh:
					return
				case inflight <- struct{}{}:
				}
				v := fmt.Sprintf("w%d-%08d", i, n)
				w.sent.Add(1)
				p.Produce(context.Background(), &client.Record{Topic: topic, Key: []byte(v), Value: []byte(v)}, func(r *client.Record, err error) {
					<-inflight
					if err != nil {
						w.ledger.mu.Lock()
						w.ledger.failed++
						w.ledger.mu.Unlock()
						return
					}
					w.ledger.ack(r)
				})
			}
		}(i, p)
	}
	t.Cleanup(w.stop)
	return w
}

// stop ends production and waits for every outstanding record's answer.
func (w *workload) stop() {
	if w.stopped {
		return
	}
	w.stopped = true
	close(w.stopCh)
	w.wg.Wait()
	for _, p := range w.prods {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		if err := p.Flush(ctx); err != nil {
			w.t.Errorf("flush: %v", err)
		}
		cancel()
		p.Close()
	}
}

// waitAcks waits until n more records are acknowledged.
func (w *workload) waitAcks(c *testCluster, n int) {
	c.t.Helper()
	target := w.ledger.count() + n
	c.waitFor(fmt.Sprintf("%d acknowledgements", target), 2*time.Minute, func() bool { return w.ledger.count() >= target })
}

// ---- HW monitor ---------------------------------------------------------------

// hwMonitor samples every replica's HW and records any decrease within one
// run of a broker process (while the broker holds the replica: one moved
// away and back is a new replica).
type hwMonitor struct {
	mu         sync.Mutex
	last       map[string]int64
	violations []string
	stop       chan struct{}
	done       chan struct{}
}

func startHWMonitor(c *testCluster, topic string) *hwMonitor {
	m := &hwMonitor{last: map[string]int64{}, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(m.done)
		for {
			select {
			case <-m.stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			for id, b := range c.brokersNow() {
				run := b.runs.Load()
				if !b.alive() || b.paused.Load() {
					continue
				}
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				res, err := c.admin.Request(ctx, b.Addr, &messages.DescribeReplicasRequest{Topics: []string{topic}})
				cancel()
				if err != nil || b.runs.Load() != run {
					continue
				}
				m.mu.Lock()
				// A replica the broker no longer holds (moved away) starts
				// afresh if it comes back: its key is forgotten.
				held := map[string]bool{}
				for _, rs := range res.(*messages.DescribeReplicasResponse).Replicas {
					held[fmt.Sprintf("broker %d run %d partition %d", id, run, rs.Partition)] = true
				}
				for key := range m.last {
					if strings.HasPrefix(key, fmt.Sprintf("broker %d run %d partition ", id, run)) && !held[key] {
						delete(m.last, key)
					}
				}
				for _, rs := range res.(*messages.DescribeReplicasResponse).Replicas {
					if rs.HighWatermark < 0 {
						continue // no HW known: the replica has no usable log (yet)
					}
					key := fmt.Sprintf("broker %d run %d partition %d", id, run, rs.Partition)
					if prev, ok := m.last[key]; ok && rs.HighWatermark < prev {
						m.violations = append(m.violations, fmt.Sprintf("%s: HW went from %d to %d", key, prev, rs.HighWatermark))
					}
					m.last[key] = max(m.last[key], rs.HighWatermark)
				}
				m.mu.Unlock()
			}
		}
	}()
	return m
}

func (m *hwMonitor) finish() []string {
	close(m.stop)
	<-m.done
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.violations
}

// ---- verification ---------------------------------------------------------------

// report is what a fault test measured.
type report struct {
	acked, lost, duplicates, failed int
	// truncations counts "truncated divergent suffix" lines in broker logs.
	truncations int
}

// verify waits for full replication, reads every partition from its
// leader and checks each acknowledged record is at its offset, then stops
// the brokers and checks every replica's log below its HW matches.
func (c *testCluster) verify(topic string, partitions int32, w *workload, hw *hwMonitor) report {
	c.t.Helper()
	w.stop()
	c.waitFullyReplicated(topic, 2*time.Minute)
	var rep report
	if v := hw.finish(); len(v) > 0 {
		c.t.Errorf("HW decreased: %v", v)
	}
	w.ledger.mu.Lock()
	rep.failed = w.ledger.failed
	for _, v := range w.ledger.violations {
		c.t.Error(v)
	}
	w.ledger.mu.Unlock()
	logs := map[int32]map[int64]string{}
	for p := int32(0); p < partitions; p++ {
		logs[p] = map[int64]string{}
		seen := map[string]bool{}
		for _, r := range c.consumeAll(topic, p) {
			logs[p][r.Offset] = string(r.Value)
			if seen[string(r.Value)] {
				rep.duplicates++
			}
			seen[string(r.Value)] = true
		}
		for off, v := range w.ledger.acked[p] {
			rep.acked++
			if logs[p][off] != v {
				rep.lost++
				if rep.lost <= 5 {
					c.t.Errorf("partition %d offset %d: acknowledged %q, log has %q", p, off, v, logs[p][off])
				}
			}
		}
	}
	// Stop every broker cleanly and compare each replica's log below its HW.
	for _, id := range c.ids() {
		c.brokers[id].stop()
	}
	for _, id := range c.ids() {
		for p := int32(0); p < partitions; p++ {
			dir := filepath.Join(c.brokers[id].Data, "topics", fmt.Sprintf("%s-%d", topic, p))
			if _, err := os.Stat(dir); err != nil {
				continue // not a replica here
			}
			c.compareReplica(id, dir, logs[p])
		}
	}
	for _, id := range c.ids() {
		logs := c.brokers[id].logs.String()
		rep.truncations += strings.Count(logs, "truncated divergent suffix")
		if strings.Contains(logs, "truncating below the high watermark") {
			c.t.Errorf("broker %d truncated committed data:\n%s", id, grepLines(logs, "truncating below the high watermark"))
		}
	}
	var gaps []string
	for p := int32(0); p < partitions; p++ {
		gaps = append(gaps, fmt.Sprintf("p%d %v", p, w.ledger.longestGap(p).Round(time.Millisecond)))
	}
	c.t.Logf("acked %d, lost %d, failed %d, duplicates in the log %d; divergent suffixes truncated %d; longest time without an ack: %s",
		rep.acked, rep.lost, rep.failed, rep.duplicates, rep.truncations, strings.Join(gaps, ", "))
	if rep.lost > 0 {
		c.t.Fatalf("%d acknowledged records lost", rep.lost)
	}
	// The workload's producers are idempotent (acks=all turns it on): a
	// retried batch is never written twice.
	if rep.duplicates > 0 {
		c.t.Fatalf("%d records written twice", rep.duplicates)
	}
	return rep
}

// compareReplica checks one replica's log on disk against the leader's
// records, for every offset below the replica's checkpointed HW.
func (c *testCluster) compareReplica(id int32, dir string, leader map[int64]string) {
	c.t.Helper()
	hw, ok, err := storage.ReadCheckpoint(filepath.Join(dir, "high-watermark"))
	if err != nil || !ok {
		entries, _ := os.ReadDir(dir)
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		c.t.Errorf("broker %d %s: no HW checkpoint: %v (dir holds %v)", id, dir, err, names)
		return
	}
	l, err := storage.OpenWAL(filepath.Join(dir, "log"), storage.WALOptions{}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		c.t.Errorf("broker %d %s: %v", id, dir, err)
		return
	}
	defer l.Close()
	mismatches := 0
	for off := l.LogStartOffset(); off < hw; {
		batches, err := l.Read(off, 1<<20, hw)
		if err != nil || len(batches) == 0 {
			c.t.Errorf("broker %d %s: read at %d: %v", id, dir, off, err)
			return
		}
		for _, b := range batches {
			h, _ := record.ParseHeader(b)
			it := record.Records(b)
			for {
				r, more, err := it.Next()
				if err != nil || !more {
					break
				}
				o := h.BaseOffset + int64(r.OffsetDelta)
				if o >= hw || o < off {
					continue
				}
				if leader[o] != string(r.Value) {
					mismatches++
					if mismatches <= 3 {
						c.t.Errorf("broker %d %s offset %d: %q, leader has %q", id, dir, o, r.Value, leader[o])
					}
				}
			}
			off = h.NextOffset()
		}
	}
}

// consumeAll reads a partition from offset 0 to its HW.
func (c *testCluster) consumeAll(topic string, p int32) []*client.Record {
	c.t.Helper()
	var addr string
	for _, id := range c.ids() {
		if c.brokers[id].alive() {
			addr = c.brokers[id].Addr
			break
		}
	}
	return consumeAll(c.t, addr, topic, p)
}

// probeProduce produces one record to a partition and returns how long it
// took to be acknowledged, retries included: right after a leader dies,
// that is the failover time.
func (c *testCluster) probeProduce(topic string, p int32) time.Duration {
	c.t.Helper()
	prod, err := client.NewProducer(c.seeds(), sharedOpts(), client.Acks(client.AllAcks), client.WithPartitioner(client.ManualPartitioner()),
		client.RequestTimeout(2*time.Second), client.RetryBackoff(50*time.Millisecond), client.DeliveryTimeout(time.Minute))
	if err != nil {
		c.t.Fatal(err)
	}
	defer prod.Close()
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	probe := fmt.Sprintf("probe-%d", time.Now().UnixNano())
	if _, _, err := prod.ProduceSync(ctx, &client.Record{Topic: topic, Partition: p, Value: []byte(probe)}); err != nil {
		c.t.Fatalf("probe produce to %s-%d: %v", topic, p, err)
	}
	return time.Since(start)
}

// grepLines returns the lines of text that contain sub.
func grepLines(text, sub string) string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		if strings.Contains(line, sub) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

// replicaLEO asks broker id directly (no Consul involved) for the LEO of
// its replica of topic-p; -1 if it does not answer.
func (c *testCluster) replicaLEO(id int32, topic string, p int32) int64 {
	if rs := c.replicaState(id, topic, p); rs != nil {
		return rs.LogEndOffset
	}
	return -1
}

// replicaState asks broker id for the state of its replica of topic-p
// (nil: none, or no answer).
func (c *testCluster) replicaState(id int32, topic string, p int32) *messages.ReplicaState {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	res, err := c.admin.Request(ctx, c.brokers[id].Addr, &messages.DescribeReplicasRequest{Topics: []string{topic}})
	if err != nil {
		return nil
	}
	for _, rs := range res.(*messages.DescribeReplicasResponse).Replicas {
		if rs.Partition == p {
			return rs
		}
	}
	return nil
}
