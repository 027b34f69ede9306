package broker

import (
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/sluicemq/sluice/actors"
	"github.com/sluicemq/sluice/messages"
	"github.com/sluicemq/sluice/messages/record"
	"github.com/sluicemq/sluice/storage"
)

// countingLog counts the writes of group commits and, once armed, holds
// the next one until released.
type countingLog struct {
	storage.Log
	appends *atomic.Int32
	armed   *atomic.Bool
	hold    chan struct{}
	held    chan struct{}
}

func (l countingLog) Write(batches ...[]byte) error {
	l.appends.Add(1)
	if l.armed.CompareAndSwap(true, false) {
		close(l.held)
		<-l.hold
	}
	return l.Log.Write(batches...)
}

// Every produce request queued while the partition is busy is written by
// the next single Append (one write, one fsync).
func TestGroupCommitOneAppendForQueuedRequests(t *testing.T) {
	var appends atomic.Int32
	var armed atomic.Bool
	hold, held := make(chan struct{}), make(chan struct{})
	tb := startTestBroker(t, t.TempDir(), func(c *actors.BrokerConfig) {
		c.OpenLog = func(dir string, tc actors.TopicConfig) (storage.Log, error) {
			l, err := storage.OpenWAL(dir, storage.WALOptions{}, c.Logger)
			if err != nil {
				return nil, err
			}
			return countingLog{Log: l, appends: &appends, armed: &armed, hold: hold, held: held}, nil
		}
	})
	tb.createTopic("g", 1, nil)
	if r := tb.produce("g", 0, 1, "warm-up"); r.Error != messages.ErrorCode_NONE {
		t.Fatal(r.Error)
	}
	appends.Store(0)
	armed.Store(true)
	// The next request's append blocks inside the partition actor.
	first := tb.system.Root.RequestFuture(tb.pid, &messages.ProduceRequest{Topic: "g", Acks: 1, Records: makeBatch("first")}, 10*time.Second)
	<-held
	const queued = 50
	futures := make([]*actor.Future, queued)
	for i := range futures {
		futures[i] = tb.system.Root.RequestFuture(tb.pid, &messages.ProduceRequest{Topic: "g", Acks: 1, Records: makeBatch(fmt.Sprint(i))}, 10*time.Second)
	}
	// The broker actor forwards in the order it receives: once it has
	// answered a request sent after them, every queued produce request is
	// in the (blocked) partition's mailbox. Then release.
	tb.ask(&messages.MetadataRequest{Topics: []string{"g"}})
	close(hold)
	if _, err := first.Result(); err != nil {
		t.Fatal(err)
	}
	offsets := map[int64]bool{}
	for _, f := range futures {
		res, err := f.Result()
		if err != nil {
			t.Fatal(err)
		}
		r := res.(*messages.ProduceResponse)
		if r.Error != messages.ErrorCode_NONE {
			t.Fatalf("produce: %v", r.Error)
		}
		offsets[r.BaseOffset] = true
	}
	if len(offsets) != queued {
		t.Fatalf("%d distinct offsets for %d requests", len(offsets), queued)
	}
	if n := appends.Load(); n != 2 {
		t.Fatalf("%d appends for 1 + %d queued requests, want 2", n, queued)
	}
}

// A fetch at the end of the log is parked until data arrives.
func TestFetchLongPolls(t *testing.T) {
	tb := startTestBroker(t, t.TempDir(), nil)
	tb.createTopic("lp", 1, nil)
	tb.produce("lp", 0, 1, "a")
	f := tb.system.Root.RequestFuture(tb.pid, &messages.FetchRequest{Topic: "lp", Offset: 1, MaxBytes: 1 << 20,
		MinBytes: 1, MaxWaitMs: 20000, CurrentLeaderEpoch: -1}, 30*time.Second)
	// The partition handles requests in order: once it has answered a
	// later one, the fetch has been parked (had it been answered at once,
	// empty, the check below fails).
	tb.ask(&messages.ListOffsetsRequest{Topic: "lp", Timestamp: -1, CurrentLeaderEpoch: -1})
	tb.produce("lp", 0, 1, "b")
	res, err := f.Result()
	if err != nil {
		t.Fatal(err)
	}
	r := res.(*messages.FetchResponse)
	if r.Error != messages.ErrorCode_NONE || len(r.Batches) != 1 || r.HighWatermark != 2 {
		t.Fatalf("parked fetch answered with %v, %d batches, HW %d", r.Error, len(r.Batches), r.HighWatermark)
	}
	// With max wait 0 an empty answer comes back at once.
	r = tb.ask(&messages.FetchRequest{Topic: "lp", Offset: 2, MaxBytes: 1 << 20, CurrentLeaderEpoch: -1}).(*messages.FetchResponse)
	if r.Error != messages.ErrorCode_NONE || len(r.Batches) != 0 {
		t.Fatalf("immediate fetch: %v, %d batches", r.Error, len(r.Batches))
	}
}

// Size retention deletes whole old segments, never data below the HW
// boundary, and the log start offset moves forward.
func TestRetentionBySize(t *testing.T) {
	tb := startTestBroker(t, t.TempDir(), func(c *actors.BrokerConfig) {
		c.RetentionCheckInterval = 20 * time.Millisecond
	})
	tb.createTopic("ret", 1, map[string]string{actors.ConfigSegmentBytes: "65536", actors.ConfigRetentionBytes: "131072"})
	value := string(make([]byte, 1000))
	for i := 0; i < 600; i++ {
		tb.produce("ret", 0, 1, value)
	}
	// What remains is the retention limit plus at most the segment that
	// straddles it and the one being written.
	size := func() int64 {
		desc := tb.ask(&messages.DescribeReplicasRequest{Topics: []string{"ret"}}).(*messages.DescribeReplicasResponse)
		return desc.Replicas[0].SizeBytes
	}
	waitFor(t, "retention", func() bool { return size() <= 131072+3*65536 })
	if s := size(); s < 131072 {
		t.Fatalf("retention left %d bytes, below retention.bytes 131072", s)
	}
	start := tb.ask(&messages.ListOffsetsRequest{Topic: "ret", Timestamp: -2, CurrentLeaderEpoch: -1}).(*messages.ListOffsetsResponse).Offset
	end := tb.ask(&messages.ListOffsetsRequest{Topic: "ret", Timestamp: -1, CurrentLeaderEpoch: -1}).(*messages.ListOffsetsResponse).Offset
	if end != 600 || start <= 0 || (end-start)*1000 < 131072 {
		t.Fatalf("log [%d, %d) after retention of 128 KiB", start, end)
	}
	// Reading below the log start is out of range; from it works.
	if r := tb.fetch("ret", 0, 0); r.Error != messages.ErrorCode_OFFSET_OUT_OF_RANGE {
		t.Fatalf("fetch below log start: %v", r.Error)
	}
	if r := tb.fetch("ret", 0, start); r.Error != messages.ErrorCode_NONE || len(r.Batches) == 0 {
		t.Fatalf("fetch at log start: %v", r.Error)
	}

}

// Retention by age removes segments whose newest record is too old.
func TestRetentionByAge(t *testing.T) {
	tb := startTestBroker(t, t.TempDir(), func(c *actors.BrokerConfig) {
		c.RetentionCheckInterval = 20 * time.Millisecond
	})
	tb.createTopic("age", 1, map[string]string{actors.ConfigSegmentBytes: "65536", actors.ConfigRetentionMs: "300"})
	value := string(make([]byte, 1000))
	for i := 0; i < 200; i++ {
		tb.produce("age", 0, 1, value)
	}
	waitFor(t, "age retention", func() bool {
		r := tb.ask(&messages.ListOffsetsRequest{Topic: "age", Timestamp: -2, CurrentLeaderEpoch: -1}).(*messages.ListOffsetsResponse)
		return r.Offset == 200
	})
	// The emptied log keeps its end offset and accepts new records there.
	if r := tb.produce("age", 0, 1, "new"); r.Error != messages.ErrorCode_NONE || r.BaseOffset != 200 {
		t.Fatalf("produce after full retention: %v at %d", r.Error, r.BaseOffset)
	}
}

// Topics and their data survive a broker restart.
func TestTopicsSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	tb := startTestBroker(t, dir, nil)
	tb.createTopic("keep", 3, map[string]string{actors.ConfigRetentionMs: "3600000"})
	tb.produce("keep", 2, 1, "x", "y")
	tb.stop()

	tb2 := startTestBroker(t, dir, nil)
	md := tb2.ask(&messages.MetadataRequest{Topics: []string{"keep"}}).(*messages.MetadataResponse)
	if len(md.Topics) != 1 || len(md.Topics[0].Partitions) != 3 || md.Topics[0].Configs[actors.ConfigRetentionMs] != "3600000" {
		t.Fatalf("metadata after restart: %v", md)
	}
	waitFor(t, "partition serving", func() bool { return tb2.fetch("keep", 2, 0).Error == messages.ErrorCode_NONE })
	if got := tb2.readAll("keep", 2); len(got) != 2 || got[0] != "x" || got[1] != "y" {
		t.Fatalf("data after restart: %v", got)
	}
}

// A retry of an idempotent batch that is already on disk, arriving when
// nothing else is written, is answered at once with its original offset:
// it must not wait for an fsync that has nothing left to do.
func TestDuplicateAloneIsAnsweredAtOnce(t *testing.T) {
	tb := startTestBroker(t, t.TempDir(), nil)
	tb.createTopic("dup", 1, nil)
	tb.produce("dup", 0, 1, "before")
	batch := makeBatch("once")
	record.SetProducer(batch, record.Producer{ID: 7, Epoch: 0, BaseSequence: 0})
	for attempt := range 3 {
		r := tb.ask(&messages.ProduceRequest{Topic: "dup", Acks: 1, Records: append([]byte(nil), batch...)}).(*messages.ProduceResponse)
		if r.Error != messages.ErrorCode_NONE || r.BaseOffset != 1 {
			t.Fatalf("attempt %d: %v %s, offset %d; want offset 1", attempt, r.Error, r.ErrorMessage, r.BaseOffset)
		}
	}
	if got := tb.readAll("dup", 0); len(got) != 2 || got[1] != "once" {
		t.Fatalf("log holds %q", got)
	}
}

// gatedSyncLog, once armed, holds every fsync until the gate opens.
type gatedSyncLog struct {
	storage.Log
	armed *atomic.Bool
	gate  chan struct{}
}

func (l gatedSyncLog) SyncFunc() func() error {
	fn := l.Log.SyncFunc()
	if !l.armed.Load() {
		return fn
	}
	return func() error {
		<-l.gate
		return fn()
	}
}

// probe collects the answers sent to it. A probeMark is answered once
// every message queued before it has been collected.
type probeMark struct{ done chan struct{} }

func startProbe(tb *testBroker) (*actor.PID, chan any) {
	got := make(chan any, 64)
	pid := tb.system.Root.Spawn(actor.PropsFromFunc(func(ctx actor.Context) {
		switch m := ctx.Message().(type) {
		case probeMark:
			close(m.done)
		case actor.SystemMessage, actor.AutoReceiveMessage:
		default:
			got <- m
		}
	}))
	return pid, got
}

// drain returns what the probe has collected so far.
func drain(tb *testBroker, probe *actor.PID, got chan any) []any {
	m := probeMark{done: make(chan struct{})}
	tb.system.Root.Send(probe, m)
	<-m.done
	var out []any
	for {
		select {
		case r := <-got:
			out = append(out, r)
		default:
			return out
		}
	}
}

func (tb *testBroker) replicaState(topic string, partition int32) *messages.ReplicaState {
	tb.t.Helper()
	desc := tb.ask(&messages.DescribeReplicasRequest{Topics: []string{topic}}).(*messages.DescribeReplicasResponse)
	for _, r := range desc.Replicas {
		if r.Partition == partition {
			return r
		}
	}
	return &messages.ReplicaState{LogEndOffset: -1, HighWatermark: -1}
}

// Nothing is acknowledged, counted in the HW or shown to a consumer before
// the fsync that makes it durable has returned.
func TestAcksAndHighWatermarkWaitForTheFsync(t *testing.T) {
	gate := make(chan struct{})
	var armed atomic.Bool
	tb := startTestBroker(t, t.TempDir(), func(c *actors.BrokerConfig) {
		c.OpenLog = func(dir string, tc actors.TopicConfig) (storage.Log, error) {
			l, err := storage.OpenWAL(dir, storage.WALOptions{}, c.Logger)
			if err != nil {
				return nil, err
			}
			return gatedSyncLog{Log: l, armed: &armed, gate: gate}, nil
		}
	})
	tb.createTopic("sync", 1, nil)
	if r := tb.produce("sync", 0, 1, "before"); r.Error != messages.ErrorCode_NONE {
		t.Fatal(r.Error)
	}
	armed.Store(true)
	probe, got := startProbe(tb)
	for _, acks := range []int32{1, -1} {
		tb.system.Root.RequestWithCustomSender(tb.pid, &messages.ProduceRequest{Topic: "sync", Acks: acks,
			Records: makeBatch(fmt.Sprint("acks ", acks))}, probe)
	}
	tb.system.Root.RequestWithCustomSender(tb.pid, &messages.FetchRequest{Topic: "sync", Offset: 1, MaxBytes: 1 << 20,
		MinBytes: 1, MaxWaitMs: 20000, CurrentLeaderEpoch: -1}, probe)
	// Both batches are written (the LEO moves) while their fsync is held.
	waitFor(t, "both batches written", func() bool { return tb.replicaState("sync", 0).LogEndOffset == 3 })
	if st := tb.replicaState("sync", 0); st.HighWatermark != 1 {
		t.Fatalf("HW %d before the fsync returned", st.HighWatermark)
	}
	if early := drain(tb, probe, got); len(early) > 0 {
		t.Fatalf("answered before the fsync returned: %v", early)
	}
	close(gate)
	var answers []any
	waitFor(t, "three answers", func() bool {
		answers = append(answers, drain(tb, probe, got)...)
		return len(answers) == 3
	})
	for _, a := range answers {
		switch r := a.(type) {
		case *messages.ProduceResponse:
			if r.Error != messages.ErrorCode_NONE {
				t.Fatalf("produce after the fsync: %v %s", r.Error, r.ErrorMessage)
			}
		case *messages.FetchResponse:
			// The two batches may have been written, and so synced, apart:
			// the fetch is answered once the first is durable.
			if r.Error != messages.ErrorCode_NONE || r.HighWatermark < 2 || len(r.Batches) == 0 {
				t.Fatalf("fetch after the fsync: %v, HW %d, %d batches", r.Error, r.HighWatermark, len(r.Batches))
			}
		default:
			t.Fatalf("unexpected answer %T", a)
		}
	}
	waitFor(t, "the HW over both batches", func() bool { return tb.replicaState("sync", 0).HighWatermark == 3 })
}

// failingSyncLog fails every fsync while armed, after really syncing (the
// way Linux reports EIO once and forgets the dirty pages it dropped).
type failingSyncLog struct {
	storage.Log
	armed *atomic.Bool
}

func (l failingSyncLog) SyncFunc() func() error {
	sync := l.Log.SyncFunc()
	if !l.armed.Load() {
		return sync
	}
	return func() error {
		_ = sync()
		return errors.New("injected fsync failure: input/output error")
	}
}

// A failed fsync takes the partition offline for the rest of the process:
// the request is answered STORAGE_ERROR, the batch never counts toward the
// HW nor reaches a consumer, and the log is not opened again (where a new
// fsync would report success over lost pages) until the broker restarts.
func TestFailedFsyncTakesThePartitionOffline(t *testing.T) {
	var armed atomic.Bool
	var opens atomic.Int32
	dir := t.TempDir()
	openLog := func(c *actors.BrokerConfig) {
		c.OpenLog = func(d string, tc actors.TopicConfig) (storage.Log, error) {
			l, err := storage.OpenWAL(d, storage.WALOptions{}, c.Logger)
			if err != nil {
				return nil, err
			}
			opens.Add(1)
			return failingSyncLog{Log: l, armed: &armed}, nil
		}
	}
	tb := startTestBroker(t, dir, openLog)
	tb.createTopic("fs", 1, nil)
	if r := tb.produce("fs", 0, 1, "a"); r.Error != messages.ErrorCode_NONE {
		t.Fatal(r.Error)
	}
	armed.Store(true)
	if r := tb.ask(&messages.ProduceRequest{Topic: "fs", Acks: 1, Records: makeBatch("b")}).(*messages.ProduceResponse); r.Error != messages.ErrorCode_STORAGE_ERROR {
		t.Fatalf("produce with a failing fsync: %v %s, want STORAGE_ERROR", r.Error, r.ErrorMessage)
	}
	armed.Store(false)
	var rs *messages.ReplicaState
	waitFor(t, "the replica reporting its storage error", func() bool {
		d := tb.ask(&messages.DescribeReplicasRequest{}).(*messages.DescribeReplicasResponse)
		rs = d.Replicas[0]
		return rs.Error == messages.ErrorCode_STORAGE_ERROR
	})
	if rs.HighWatermark != 1 {
		t.Fatalf("HW %d after the failed fsync, want 1", rs.HighWatermark)
	}
	// No second chance in this process: the next write fails too, and
	// nothing is read.
	if r := tb.ask(&messages.ProduceRequest{Topic: "fs", Acks: 1, Records: makeBatch("c")}).(*messages.ProduceResponse); r.Error != messages.ErrorCode_STORAGE_ERROR {
		t.Fatalf("produce after the failed fsync: %v at %d, want STORAGE_ERROR", r.Error, r.BaseOffset)
	}
	if f := tb.fetch("fs", 0, 1); f.Error != messages.ErrorCode_STORAGE_ERROR || len(f.Batches) != 0 {
		t.Fatalf("fetch after the failed fsync: %v with %d batches", f.Error, len(f.Batches))
	}
	if n := opens.Load(); n != 1 {
		t.Fatalf("the log was opened %d times in one process", n)
	}
	// A restart recovers the log from the disk.
	tb.stop()
	tb = startTestBroker(t, dir, openLog)
	waitFor(t, "the partition serving after the restart", func() bool { return tb.fetch("fs", 0, 0).Error == messages.ErrorCode_NONE })
	if r := tb.produce("fs", 0, 1, "d"); r.Error != messages.ErrorCode_NONE {
		t.Fatalf("produce after the restart: %v", r.Error)
	}
	got := tb.readAll("fs", 0)
	if len(got) < 2 || got[0] != "a" || got[len(got)-1] != "d" || slices.Contains(got, "c") {
		t.Fatalf("log after the restart: %q", got)
	}
}

// An offsets-only fetch answers the partition's offsets and no records,
// even with records to read and a wait given.
func TestFetchOffsetsOnly(t *testing.T) {
	tb := startTestBroker(t, t.TempDir(), nil)
	tb.createTopic("oo", 1, nil)
	tb.produce("oo", 0, 1, "a", "b")
	r := tb.ask(&messages.FetchRequest{Topic: "oo", Offset: 0, MaxBytes: 1 << 20, MinBytes: 1, MaxWaitMs: 20000,
		CurrentLeaderEpoch: -1, OffsetsOnly: true}).(*messages.FetchResponse)
	if r.Error != messages.ErrorCode_NONE || len(r.Batches) != 0 || r.HighWatermark != 2 || r.LogStartOffset != 0 {
		t.Fatalf("offsets-only fetch: %v, %d batches, HW %d, log start %d", r.Error, len(r.Batches), r.HighWatermark, r.LogStartOffset)
	}
	// An offset outside the log is still refused.
	r = tb.ask(&messages.FetchRequest{Topic: "oo", Offset: 9, CurrentLeaderEpoch: -1, OffsetsOnly: true}).(*messages.FetchResponse)
	if r.Error != messages.ErrorCode_OFFSET_OUT_OF_RANGE {
		t.Fatalf("offsets-only fetch past the end: %v", r.Error)
	}
}

// An acks=0 produce is answered to a sender that asks, once its batch is
// written, with the offset it got: the Kafka listener holds the request's
// bytes until then.
func TestAcksZeroTellsASenderThatAsks(t *testing.T) {
	tb := startTestBroker(t, t.TempDir(), nil)
	tb.createTopic("a0", 1, nil)
	tb.produce("a0", 0, 1, "first")
	r := tb.produce("a0", 0, 0, "second")
	if r.Error != messages.ErrorCode_NONE || r.BaseOffset != 1 {
		t.Fatalf("acks=0 answer: %v, base offset %d", r.Error, r.BaseOffset)
	}
	tb.produce("a0", 0, 1, "third") // acknowledged once durable, with what came before
	if got := tb.readAll("a0", 0); len(got) != 3 || got[1] != "second" {
		t.Fatalf("log holds %q", got)
	}
}
