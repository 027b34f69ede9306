package partition

import (
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/sluicemq/sluice/actors"
	"github.com/sluicemq/sluice/cluster"
	"github.com/sluicemq/sluice/messages"
	"github.com/sluicemq/sluice/messages/record"
	"github.com/sluicemq/sluice/storage"
	"github.com/sluicemq/sluice/storage/replicadir"
	"github.com/sluicemq/sluice/transport"
)

// The partition actor on its own: a parent standing in for the broker,
// a real log in a temporary directory, requests as the broker forwards
// them.

// gatedLog is a log whose fsyncs wait until the test opens the gate (nil:
// they do not wait); each fsync announces itself on started first.
type gatedLog struct {
	storage.Log
	started chan struct{}
	gate    chan struct{}
	// truncating, when set, gates TruncateTo the same way; closing, Close.
	truncating, truncateGate chan struct{}
	closing, closeGate       chan struct{}
	// writing, when set, gates the writes that wait on the disk.
	writing, writeGate chan struct{}
}

func (l *gatedLog) WriteWaits(batches ...[]byte) bool {
	w, ok := l.Log.(diskBoundWrites)
	return ok && w.WriteWaits(batches...)
}

func (l *gatedLog) Write(batches ...[]byte) error {
	if l.writing != nil && l.WriteWaits(batches...) {
		l.writing <- struct{}{}
		<-l.writeGate
	}
	return l.Log.Write(batches...)
}

func (l *gatedLog) Close() error {
	if l.closing != nil {
		l.closing <- struct{}{}
		<-l.closeGate
	}
	return l.Log.Close()
}

func (l *gatedLog) TruncateTo(offset int64) error {
	if l.truncating != nil {
		l.truncating <- struct{}{}
		<-l.truncateGate
	}
	return l.Log.TruncateTo(offset)
}

func (l *gatedLog) SyncFunc() func() error {
	sync := l.Log.SyncFunc()
	if l.gate == nil {
		return sync
	}
	return func() error {
		l.started <- struct{}{}
		<-l.gate
		return sync()
	}
}

// replicaUnderTest is one partition actor and what its parent heard.
type replicaUnderTest struct {
	t      *testing.T
	cfg    Config
	parent *actor.PID
	system *actor.ActorSystem
	pid    *actor.PID
	status *atomic.Pointer[messages.ReplicaState]
	log    *gatedLog // nil unless the fsyncs are gated
}

const testTopic = "t"

// startReplica starts a partition actor of broker 0; with gated set its
// fsyncs wait for the test. The options change its config.
func startReplica(t *testing.T, gated bool, options ...func(*Config)) *replicaUnderTest {
	t.Helper()
	r := &replicaUnderTest{t: t, system: transport.NewSystem(slog.New(slog.DiscardHandler), slog.LevelError), status: &atomic.Pointer[messages.ReplicaState]{}}
	if gated {
		r.log = &gatedLog{started: make(chan struct{}, 16), gate: make(chan struct{})}
	}
	topic := actors.DefaultTopicConfig()
	topic.MinISR = 1
	cfg := Config{TP: cluster.TopicPartition{Topic: testTopic, Partition: 0}, TopicID: "id", Dir: t.TempDir(), Topic: topic,
		Broker: &actors.BrokerConfig{ID: 0, BrokerEpoch: 1, ReplicaLagTimeMax: 30 * time.Second, RetentionCheckInterval: time.Hour,
			HWCheckpointInterval: time.Hour, MaxFetchBytes: 1 << 20, MaxFetchWaitMs: 10_000, Closings: storage.NewClosings()},
		Status: r.status, Logger: slog.New(slog.DiscardHandler)}
	for _, o := range options {
		o(&cfg)
	}
	if gated {
		cfg.Broker.OpenLog = func(dir string, topic actors.TopicConfig) (storage.Log, error) {
			l, err := storage.OpenWAL(dir, storage.WALOptions{SegmentBytes: int(topic.SegmentBytes)}, cfg.Logger)
			if err != nil {
				return nil, err
			}
			r.log.Log = l
			return r.log, nil
		}
	}
	started := make(chan *actor.PID, 1)
	var child *actor.PID
	parent := actor.PropsFromFunc(func(ctx actor.Context) {
		switch ctx.Message().(type) {
		case *actor.Started:
			child = ctx.Spawn(Props(cfg))
		case Started:
			started <- child
		}
	})
	pp := r.system.Root.Spawn(parent)
	r.cfg, r.parent = cfg, pp
	t.Cleanup(func() {
		if r.log != nil && r.log.gate != nil {
			close(r.log.gate)
		}
		_ = r.system.Root.StopFuture(pp).Wait()
		cfg.Broker.Closings.WaitAll() // before the directory goes
	})
	select {
	case r.pid = <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("the partition actor did not start")
	}
	return r
}

// apply hands the replica the controller's state: leader leads the
// epoch, replicas are the replica set and the ISR.
func (r *replicaUnderTest) apply(leader, epoch int32, replicas ...int32) {
	r.applyWith(leader, epoch, "", replicas...)
}

// applyWith is apply with the leader's broker at leaderAddr.
func (r *replicaUnderTest) applyWith(leader, epoch int32, leaderAddr string, replicas ...int32) {
	r.system.Root.Send(r.pid, &ApplyState{Topic: actors.DefaultTopicConfig(), LeaderAddr: leaderAddr, State: &messages.PartitionState{
		Topic: testTopic, Leader: leader, LeaderEpoch: epoch, PartitionEpoch: epoch + 1, Isr: replicas, Replicas: replicas}})
}

// latest is the offset a consumer's ListOffsets(latest) gets: the HW.
func (r *replicaUnderTest) latest() int64 {
	resp := answer[*messages.ListOffsetsResponse](r.t, r.request(&messages.ListOffsetsRequest{Topic: testTopic, Timestamp: -1, CurrentLeaderEpoch: -1}))
	if resp.Error != messages.ErrorCode_NONE {
		r.t.Fatalf("ListOffsets: %v", resp)
	}
	return resp.Offset
}

// inbox takes the answers to one request as they are sent.
type inbox chan any

func (i inbox) SendUserMessage(_ *actor.PID, m any) { i <- m }
func (i inbox) SendSystemMessage(*actor.PID, any)   {}
func (i inbox) Stop(*actor.PID)                     {}

// request sends msg with an inbox of its own as the sender.
func (r *replicaUnderTest) request(msg any) inbox {
	in := make(inbox, 4)
	id := r.system.ProcessRegistry.NextId()
	pid, _ := r.system.ProcessRegistry.Add(in, "inbox"+id)
	r.t.Cleanup(func() { r.system.ProcessRegistry.Remove(pid) })
	r.system.Root.RequestWithCustomSender(r.pid, msg, pid)
	return in
}

func (r *replicaUnderTest) produce(acks int32, batch []byte) inbox {
	return r.request(&messages.ProduceRequest{Topic: testTopic, Acks: acks, Records: batch, TimeoutMs: 10_000})
}

// answer waits for the request's answer, of type T.
func answer[T any](t *testing.T, in inbox) T {
	t.Helper()
	select {
	case res := <-in:
		m, ok := res.(T)
		if !ok {
			t.Fatalf("answer %T %v", res, res)
		}
		return m
	case <-time.After(10 * time.Second):
		var zero T
		t.Fatalf("no %T came", zero)
		return zero
	}
}

// answered reports whether the request has been answered by now.
func (i inbox) answered() bool { return len(i) > 0 }

func batchOf(p record.Producer, values ...string) []byte {
	var b record.Builder
	b.Reset(p)
	for _, v := range values {
		b.Append(time.Now().UnixMilli(), nil, []byte(v), nil)
	}
	return append([]byte(nil), b.Finish()...)
}

// An acks=1 request is answered only once its batch is on disk: while the
// fsync of the group commit runs, nothing is acknowledged.
func TestProduceAnsweredOnlyOnceDurable(t *testing.T) {
	r := startReplica(t, true)
	r.apply(0, 0, 0)
	first := r.produce(1, batchOf(record.NoProducer, "a", "b"))
	<-r.log.started // written, and its fsync started
	if first.answered() {
		t.Fatal("acknowledged before its fsync ended")
	}
	r.log.gate <- struct{}{}
	if resp := answer[*messages.ProduceResponse](t, first); resp.Error != messages.ErrorCode_NONE || resp.BaseOffset != 0 {
		t.Fatalf("answer %v", resp)
	}
	// The next batch, likewise, at the next offset.
	second := r.produce(1, batchOf(record.NoProducer, "c"))
	<-r.log.started
	if second.answered() {
		t.Fatal("acknowledged before its fsync ended")
	}
	r.log.gate <- struct{}{}
	if resp := answer[*messages.ProduceResponse](t, second); resp.BaseOffset != 2 {
		t.Fatalf("answer %v, want base offset 2", resp)
	}
}

// An acks=all request is answered once every replica of the ISR has the
// batch: the follower's fetch past it moves the HW.
func TestAcksAllAnsweredWhenTheISRHasIt(t *testing.T) {
	r := startReplica(t, false)
	r.apply(0, 0, 0, 1)
	fetch := func(offset int64) inbox {
		return r.request(&messages.ReplicaFetchRequest{Topic: testTopic, ReplicaId: 1, BrokerEpoch: 1, FetchOffset: offset,
			MaxBytes: 1 << 20, MaxWaitMs: 10_000})
	}
	parked := fetch(0) // waits for data
	prod := r.produce(-1, batchOf(record.NoProducer, "a"))
	got := answer[*messages.ReplicaFetchResponse](t, parked)
	if got.Error != messages.ErrorCode_NONE || len(got.Batches) != 1 || got.HighWatermark != 0 {
		t.Fatalf("follower fetch: %v", got)
	}
	if prod.answered() {
		t.Fatal("acks=all acknowledged before the follower had the batch")
	}
	fetch(1) // the follower has it: the HW moves to 1
	if resp := answer[*messages.ProduceResponse](t, prod); resp.Error != messages.ErrorCode_NONE || resp.BaseOffset != 0 {
		t.Fatalf("answer %v", resp)
	}
	if hw := r.latest(); hw != 1 {
		t.Fatalf("HW %d, want 1", hw)
	}
}

// A leader that steps down answers what waits for replication with
// NOT_LEADER, and what comes after with NOT_LEADER too.
func TestSteppingDownAnswersWhatWaits(t *testing.T) {
	r := startReplica(t, false)
	r.apply(0, 0, 0, 1)
	parked := r.request(&messages.ReplicaFetchRequest{Topic: testTopic, ReplicaId: 1, BrokerEpoch: 1, MaxBytes: 1 << 20, MaxWaitMs: 10_000})
	prod := r.produce(-1, batchOf(record.NoProducer, "a"))
	answer[*messages.ReplicaFetchResponse](t, parked) // the batch is durable and waits for the follower
	r.apply(1, 1, 0, 1)
	if resp := answer[*messages.ProduceResponse](t, prod); resp.Error != messages.ErrorCode_NOT_LEADER || resp.BaseOffset != -1 {
		t.Fatalf("answer %v, want NOT_LEADER", resp)
	}
	if resp := answer[*messages.ProduceResponse](t, r.produce(1, batchOf(record.NoProducer, "b"))); resp.Error != messages.ErrorCode_NOT_LEADER {
		t.Fatalf("a produce to a follower: %v", resp)
	}
}

// A retry of an idempotent batch already written is answered with the
// offsets of the first write and writes nothing.
func TestRetryAnsweredWithTheOriginalOffsets(t *testing.T) {
	r := startReplica(t, false)
	r.apply(0, 0, 0)
	answer[*messages.ProduceResponse](t, r.produce(1, batchOf(record.NoProducer, "x", "y")))
	idem := batchOf(record.Producer{ID: 5, Epoch: 0, BaseSequence: 0}, "a", "b", "c")
	for i := 0; i < 2; i++ {
		resp := answer[*messages.ProduceResponse](t, r.produce(1, append([]byte(nil), idem...)))
		if resp.Error != messages.ErrorCode_NONE || resp.BaseOffset != 2 {
			t.Fatalf("attempt %d: %v, want base offset 2", i, resp)
		}
	}
	if end := r.latest(); end != 5 {
		t.Fatalf("the log ends at %d, want 5: the retry was written again", end)
	}
	skipped := batchOf(record.Producer{ID: 5, Epoch: 0, BaseSequence: 9}, "z")
	if resp := answer[*messages.ProduceResponse](t, r.produce(1, skipped)); resp.Error != messages.ErrorCode_OUT_OF_ORDER_SEQUENCE {
		t.Fatalf("a gap in the sequence: %v", resp)
	}
}

// A follower whose log diverges from its leader's truncates it beside the
// actor: while the truncation runs, what arrives waits (and is answered
// after it); the follower then fetches from the truncation point, and the
// producer state reflects the truncated log (a producer's batch that was
// cut is new again when this replica leads once more).
func TestFollowerTruncatesBesideTheActor(t *testing.T) {
	r := startReplica(t, true)
	r.log.started, r.log.gate = nil, nil // fsyncs pass; only the truncation is gated
	r.apply(0, 0, 0, 1)
	batch := func(seq int32, values ...string) []byte {
		return batchOf(record.Producer{ID: 9, Epoch: 0, BaseSequence: seq}, values...)
	}
	for _, b := range [][]byte{batch(0, "a", "b"), batch(2, "c", "d")} {
		if resp := answer[*messages.ProduceResponse](t, r.produce(1, b)); resp.Error != messages.ErrorCode_NONE {
			t.Fatalf("produce: %v", resp)
		}
	}

	// The new leader, broker 1, runs in the same system: its epoch 0 ended
	// at offset 2, so records 2 and 3 here diverge.
	fetches := make(chan int64, 16)
	leader := actor.PropsFromFunc(func(ctx actor.Context) {
		switch m := ctx.Message().(type) {
		case *messages.OffsetForLeaderEpochRequest:
			ctx.Respond(&messages.OffsetForLeaderEpochResponse{Topic: m.Topic, Epoch: 0, EndOffset: 2})
		case *messages.ReplicaFetchRequest:
			fetches <- m.FetchOffset // unanswered: the follower waits
		}
	})
	if _, err := r.system.Root.SpawnNamed(leader, transport.BrokerActorName); err != nil {
		t.Fatal(err)
	}
	r.log.truncating, r.log.truncateGate = make(chan struct{}, 1), make(chan struct{})
	r.applyWith(1, 1, r.system.Address(), 0, 1)
	<-r.log.truncating
	asked := r.request(&messages.ListOffsetsRequest{Topic: testTopic, Timestamp: -1})
	// The request waits behind the truncation; the replica answers it once
	// the log is whole again.
	if asked.answered() {
		t.Fatal("a request was handled while the log was being truncated")
	}
	close(r.log.truncateGate)
	if resp := answer[*messages.ListOffsetsResponse](t, asked); resp.Error != messages.ErrorCode_NOT_LEADER {
		t.Fatalf("ListOffsets on a follower: %v", resp)
	}
	select {
	case off := <-fetches:
		if off != 2 {
			t.Fatalf("the follower fetches from %d, want 2", off)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the follower did not fetch after truncating")
	}

	// Leading again: the cut batch (sequence 2) is written anew, not taken
	// for a duplicate of what was truncated.
	r.apply(0, 2, 0)
	if resp := answer[*messages.ProduceResponse](t, r.produce(1, batch(2, "c2", "d2"))); resp.Error != messages.ErrorCode_NONE || resp.BaseOffset != 2 {
		t.Fatalf("the cut batch again: %v, want it written at 2", resp)
	}
	if end := r.latest(); end != 4 {
		t.Fatalf("the log ends at %d, want 4", end)
	}
}

// A stopping replica closes its log beside the actor: the stop does not
// wait for the close (which fsyncs), and whoever uses the directory next
// waits for it through the broker's Closings. What was acknowledged is
// in the log opened again.
func TestStopClosesTheLogBesideTheActor(t *testing.T) {
	r := startReplica(t, true)
	r.log.started, r.log.gate = nil, nil // fsyncs pass; only the close is gated
	r.apply(0, 0, 0)
	if resp := answer[*messages.ProduceResponse](t, r.produce(1, batchOf(record.NoProducer, "a", "b"))); resp.Error != messages.ErrorCode_NONE {
		t.Fatalf("produce: %v", resp)
	}
	r.log.closing, r.log.closeGate = make(chan struct{}, 1), make(chan struct{})
	if err := r.system.Root.StopFuture(r.parent).Wait(); err != nil {
		t.Fatalf("the partition actor did not stop while its log was closing: %v", err)
	}
	<-r.log.closing
	reopened := make(chan struct{})
	go func() {
		r.cfg.Broker.Closings.Wait(r.cfg.Dir)
		close(reopened)
	}()
	select {
	case <-reopened:
		t.Fatal("the directory was handed on before its log was closed")
	case <-time.After(50 * time.Millisecond):
	}
	close(r.log.closeGate)
	<-reopened
	if end := r.reopenedEnd(); end != 2 {
		t.Fatalf("the log reopened ends at %d, want 2", end)
	}
}

// reopenedEnd opens the stopped replica's log and returns where it ends.
func (r *replicaUnderTest) reopenedEnd() int64 {
	r.t.Helper()
	l, err := storage.OpenWAL(replicadir.Dir(r.cfg.Dir).Log(), storage.WALOptions{}, r.cfg.Logger)
	if err != nil {
		r.t.Fatal(err)
	}
	defer l.Close()
	return l.LogEndOffset()
}

// A write that waits on the disk (here, one that starts a new segment,
// whose roll fsyncs the segment it ends) runs beside the actor: a stop
// goes through while it runs, and the log is closed only after it.
func TestSegmentRollRunsBesideTheActor(t *testing.T) {
	r := startReplica(t, true, func(c *Config) { c.Topic.SegmentBytes = 64 << 10 })
	r.log.started, r.log.gate = nil, nil // fsyncs pass; only the rolling write is gated
	r.apply(0, 0, 0)
	r.log.writing, r.log.writeGate = make(chan struct{}, 1), make(chan struct{})
	prod := r.produce(1, batchOf(record.NoProducer, strings.Repeat("x", 70<<10)))
	<-r.log.writing
	if err := r.system.Root.StopFuture(r.parent).Wait(); err != nil {
		t.Fatalf("the partition actor did not stop while a write ran: %v", err)
	}
	if resp := answer[*messages.ProduceResponse](t, prod); resp.Error != messages.ErrorCode_NOT_LEADER {
		t.Fatalf("the produce in flight at the stop: %v, want NOT_LEADER", resp)
	}
	close(r.log.writeGate)
	r.cfg.Broker.Closings.WaitAll()
	if end := r.reopenedEnd(); end != 1 {
		t.Fatalf("the log reopened ends at %d, want 1: the close did not wait for the write", end)
	}
}

// Followers copy what the leader has written before its fsync ends (the
// fsyncs of leader and followers overlap), but an acks=all request is
// answered only once the leader's own fsync has ended too: the HW counts
// the leader's durable end.
func TestFollowersFetchWhatTheLeaderHasNotSyncedYet(t *testing.T) {
	r := startReplica(t, true)
	r.apply(0, 0, 0, 1)
	fetch := func(offset int64, waitMs int32) inbox {
		return r.request(&messages.ReplicaFetchRequest{Topic: testTopic, ReplicaId: 1, BrokerEpoch: 1, FetchOffset: offset,
			MaxBytes: 1 << 20, MaxWaitMs: waitMs})
	}
	parked := fetch(0, 10_000)
	prod := r.produce(-1, batchOf(record.NoProducer, "a"))
	<-r.log.started // the leader's fsync runs (and waits)
	got := answer[*messages.ReplicaFetchResponse](t, parked)
	if got.Error != messages.ErrorCode_NONE || len(got.Batches) != 1 {
		t.Fatalf("follower fetch while the leader syncs: %v", got)
	}
	// The follower has it; the leader not yet on disk.
	if resp := answer[*messages.ReplicaFetchResponse](t, fetch(1, 0)); resp.HighWatermark != 0 {
		t.Fatalf("HW %d before the leader's fsync ended, want 0", resp.HighWatermark)
	}
	if prod.answered() {
		t.Fatal("acks=all answered before the leader's fsync ended")
	}
	r.log.gate <- struct{}{}
	if resp := answer[*messages.ProduceResponse](t, prod); resp.Error != messages.ErrorCode_NONE || resp.BaseOffset != 0 {
		t.Fatalf("answer %v", resp)
	}
	if hw := r.latest(); hw != 1 {
		t.Fatalf("HW %d, want 1", hw)
	}
}
