package broker

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/proto"

	"github.com/sluicemq/sluice/actors"
	"github.com/sluicemq/sluice/cluster"
	"github.com/sluicemq/sluice/internal/testutil"
	"github.com/sluicemq/sluice/messages"
	"github.com/sluicemq/sluice/messages/record"
	"github.com/sluicemq/sluice/storage"
	"github.com/sluicemq/sluice/transport"
)

// testBroker is a broker actor on an actor system without remote, so tests
// run in one process under -race.
type testBroker struct {
	t      testing.TB
	system *actor.ActorSystem
	broker *Broker
	pid    *actor.PID
	dir    string

	backend *cluster.Embedded
	stopped bool
}

func startTestBroker(t testing.TB, dir string, tweak func(*actors.BrokerConfig)) *testBroker {
	t.Helper()
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	system := transport.NewSystem(logger, slog.LevelError)
	cfg := actors.DefaultBrokerConfig()
	cfg.DataDir = dir
	cfg.Logger = logger
	cfg.HWCheckpointInterval = 50 * time.Millisecond
	if tweak != nil {
		tweak(&cfg)
	}
	backend, err := cluster.OpenEmbedded(filepath.Join(dir, "meta"), cluster.Broker{ID: 0, Addr: system.Address()})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Start(system, cfg, backend, system.Address())
	if err != nil {
		t.Fatal(err)
	}
	tb := &testBroker{t: t, system: system, broker: b, pid: b.PID, dir: dir, backend: backend}
	t.Cleanup(tb.stop)
	return tb
}

// stop stops the broker and its actor system; it may be called twice.
func (tb *testBroker) stop() {
	if tb.stopped {
		return
	}
	tb.stopped = true
	tb.broker.Stop()
	tb.backend.Close()
	tb.system.Shutdown()
}

func (tb *testBroker) ask(msg proto.Message) proto.Message {
	tb.t.Helper()
	res, err := tb.system.Root.RequestFuture(tb.pid, msg, 10*time.Second).Result()
	if err != nil {
		tb.t.Fatalf("request %T: %v", msg, err)
	}
	return res.(proto.Message)
}

func (tb *testBroker) createTopic(name string, partitions int32, configs map[string]string) {
	tb.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp := tb.ask(&messages.CreateTopicsRequest{Topics: []*messages.TopicSpec{{Name: name, Partitions: partitions, Configs: configs}}}).(*messages.CreateTopicsResponse)
		code := resp.Results[0].Error
		if code == messages.ErrorCode_NONE {
			return
		}
		if code != messages.ErrorCode_NOT_CONTROLLER || time.Now().After(deadline) {
			tb.t.Fatalf("create %s: %v %s", name, code, resp.Results[0].ErrorMessage)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// produce sends one batch of values and retries retriable errors until the
// deadline, as a client would.
func (tb *testBroker) produce(topic string, partition int32, acks int32, values ...string) *messages.ProduceResponse {
	tb.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp := tb.ask(&messages.ProduceRequest{Topic: topic, Partition: partition, Acks: acks, Records: makeBatch(values...)}).(*messages.ProduceResponse)
		if resp.Error == messages.ErrorCode_NONE || !resp.Error.Retriable() || time.Now().After(deadline) {
			return resp
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (tb *testBroker) fetch(topic string, partition int32, offset int64) *messages.FetchResponse {
	tb.t.Helper()
	return tb.ask(&messages.FetchRequest{Topic: topic, Partition: partition, Offset: offset, MaxBytes: 1 << 20, CurrentLeaderEpoch: -1}).(*messages.FetchResponse)
}

func makeBatch(values ...string) []byte {
	var b record.Builder
	b.Reset(record.NoProducer)
	for _, v := range values {
		b.Append(time.Now().UnixMilli(), nil, []byte(v), nil)
	}
	return append([]byte(nil), b.Finish()...)
}

// readAll returns every value below the HW from offset 0, in order, with
// their offsets checked to be contiguous.
func (tb *testBroker) readAll(topic string, partition int32) []string {
	tb.t.Helper()
	var out []string
	var next int64
	for {
		resp := tb.fetch(topic, partition, next)
		if resp.Error != messages.ErrorCode_NONE {
			tb.t.Fatalf("fetch %s-%d@%d: %v %s", topic, partition, next, resp.Error, resp.ErrorMessage)
		}
		if len(resp.Batches) == 0 {
			return out
		}
		for _, b := range resp.Batches {
			h, err := record.Validate(b, 0)
			if err != nil {
				tb.t.Fatal(err)
			}
			it := record.Records(b)
			for {
				r, ok, err := it.Next()
				if err != nil {
					tb.t.Fatal(err)
				}
				if !ok {
					break
				}
				off := h.BaseOffset + int64(r.OffsetDelta)
				if off < next {
					continue
				}
				if off != next {
					tb.t.Fatalf("gap: offset %d after %d", off, next-1)
				}
				out = append(out, string(r.Value))
				next++
			}
		}
	}
}

// panickingLog panics in Write when armed; it stands for any bug or fault
// that takes a partition actor down mid-stream.
type panickingLog struct {
	storage.Log
	armed *atomic.Bool
}

func (l panickingLog) Write(batches ...[]byte) error {
	if l.armed.CompareAndSwap(true, false) {
		panic("injected partition failure")
	}
	return l.Log.Write(batches...)
}

func TestPartitionPanicKeepsAckedDataAndOtherPartitions(t *testing.T) {
	var armed atomic.Bool
	var opens atomic.Int32
	tb := startTestBroker(t, t.TempDir(), func(c *actors.BrokerConfig) {
		c.OpenLog = func(dir string, tc actors.TopicConfig) (storage.Log, error) {
			l, err := storage.OpenWAL(dir, storage.WALOptions{SegmentBytes: int(tc.SegmentBytes)}, c.Logger)
			if err != nil {
				return nil, err
			}
			if filepath.Base(filepath.Dir(dir)) == "t-0" {
				opens.Add(1)
				return panickingLog{Log: l, armed: &armed}, nil
			}
			return l, nil
		}
	})
	tb.createTopic("t", 2, nil)
	// Producers write to partition 0 concurrently; the panic strikes while
	// requests are queued, being written and waiting for their fsync.
	const producers, each = 4, 150
	var mu sync.Mutex
	acked := map[int64]string{} // offset -> value
	failed := 0
	var done atomic.Int32
	var wg sync.WaitGroup
	for g := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				v := fmt.Sprintf("g%d-%d", g, i)
				res, err := tb.system.Root.RequestFuture(tb.pid, &messages.ProduceRequest{Topic: "t", Partition: 0, Acks: 1,
					Records: makeBatch(v)}, 10*time.Second).Result()
				if err != nil {
					t.Errorf("%s: no answer: %v", v, err)
					return
				}
				r := res.(*messages.ProduceResponse)
				mu.Lock()
				if r.Error == messages.ErrorCode_NONE {
					acked[r.BaseOffset] = v
				} else {
					failed++
				}
				mu.Unlock()
				if done.Add(1) == producers*each/3 {
					armed.Store(true)
				}
			}
		}()
	}
	// Partition 1 keeps serving meanwhile.
	for i := range 20 {
		if r := tb.produce("t", 1, 1, fmt.Sprint("p1-", i)); r.Error != messages.ErrorCode_NONE {
			t.Fatalf("partition 1 affected: %v", r.Error)
		}
	}
	wg.Wait()
	if armed.Load() || opens.Load() < 2 {
		t.Fatalf("partition log opened %d times (armed %v); the actor did not restart", opens.Load(), armed.Load())
	}
	if failed == 0 {
		t.Fatal("no request failed: the panic hit nothing in flight")
	}
	t.Logf("%d acknowledged, %d failed by the restart", len(acked), failed)
	// readAll checks the offsets are contiguous: no gap below the LEO.
	got := tb.readAll("t", 0)
	for off, v := range acked {
		if off >= int64(len(got)) || got[off] != v {
			t.Fatalf("offset %d: acknowledged %q, the log has %d records", off, v, len(got))
		}
	}
	if p1 := tb.readAll("t", 1); len(p1) != 20 {
		t.Fatalf("partition 1 has %d records, want 20", len(p1))
	}
}

// Every actor the broker routes to serves again after it failed (restarted
// in place by the supervisor strategy: same PID) or was stopped (started
// again by the broker): a partition and the controller. A request addressed by name then reaches it.
func TestFailedAndStoppedActorsServeAgain(t *testing.T) {
	tb := startTestBroker(t, t.TempDir(), nil)
	tb.createTopic("s", 1, nil)
	if r := tb.produce("s", 0, 1, "before"); r.Error != messages.ErrorCode_NONE {
		t.Fatal(r.Error)
	}
	partition := actor.NewPID(tb.pid.Address, transport.BrokerActorName+"/p/s/0")
	controller := actor.NewPID(tb.pid.Address, transport.ControllerActorName)
	created := 0
	servesAgain := func(what string) {
		t.Helper()
		// The request is retried until the actor answers it.
		waitFor(t, what+" serving again", func() bool {
			res, err := tb.system.Root.RequestFuture(tb.pid, &messages.ProduceRequest{Topic: "s", Acks: 1,
				Records: makeBatch("after " + what)}, time.Second).Result()
			return err == nil && res.(*messages.ProduceResponse).Error == messages.ErrorCode_NONE
		})
		waitFor(t, "a controller", func() bool {
			res := tb.ask(&messages.MetadataRequest{}).(*messages.MetadataResponse)
			return res.ControllerId == 0
		})
		// The controller knows the live brokers again: it places a topic.
		created++
		tb.createTopic(fmt.Sprintf("after-%d", created), 1, nil)
	}
	// A failure reaches the parent as protoactor's Failure, as a panic
	// in the child's Receive would send it.
	fail := func(parent, child *actor.PID) {
		proc, _ := tb.system.ProcessRegistry.GetLocal(parent.Id)
		proc.SendSystemMessage(parent, &actor.Failure{Who: child, Reason: "injected failure", RestartStats: actor.NewRestartStatistics()})
	}
	for _, target := range []*actor.PID{partition, controller} {
		fail(tb.pid, target)
		servesAgain("failed " + target.Id)
		if err := tb.system.Root.PoisonFuture(target).Wait(); err != nil {
			t.Fatalf("poison %s: %v", target.Id, err)
		}
		servesAgain("stopped " + target.Id)
	}
	if got := tb.readAll("s", 0); len(got) < 5 || got[0] != "before" {
		t.Fatalf("log after the restarts: %q", got)
	}
	tb.createTopic("s2", 1, nil) // the controller works
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testutil.WaitFor(t, 10*time.Second, what, cond)
}

// A topic deleted and created again under its name: the old replica's
// actor stops and its files go before the new replica starts in the same
// directory under the same actor name.
func TestTopicCreatedAgainUnderItsName(t *testing.T) {
	tb := startTestBroker(t, t.TempDir(), nil)
	for round := range 3 {
		tb.createTopic("again", 2, nil)
		for p := range int32(2) {
			v := fmt.Sprintf("round %d partition %d", round, p)
			if r := tb.produce("again", p, 1, v); r.Error != messages.ErrorCode_NONE {
				t.Fatalf("%s: %v %s", v, r.Error, r.ErrorMessage)
			}
			if got := tb.readAll("again", p); len(got) != 1 || got[0] != v {
				t.Fatalf("round %d partition %d holds %q, want only %q", round, p, got, v)
			}
		}
		resp := tb.ask(&messages.DeleteTopicsRequest{Names: []string{"again"}}).(*messages.DeleteTopicsResponse)
		if resp.Results[0].Error != messages.ErrorCode_NONE {
			t.Fatalf("delete: %v %s", resp.Results[0].Error, resp.Results[0].ErrorMessage)
		}
		// Created again at once: the new replicas start once the old
		// ones' files are gone.
	}
	waitFor(t, "the topic's directories removed", func() bool {
		dirs, _ := filepath.Glob(filepath.Join(tb.dir, "topics", "again-*"))
		return len(dirs) == 0
	})
}

// The data of a topic deleted while this broker was down goes when it
// starts again (found and removed beside the broker actor); a directory
// whose deletion the metadata does not record stays; and the topic
// created again under its name at once gets a fresh replica.
func TestDataOfATopicDeletedWhileDownIsRemoved(t *testing.T) {
	dir := t.TempDir()
	tb := startTestBroker(t, dir, nil)
	ids := map[string][]byte{} // partition directory -> its topic id
	for _, topic := range []string{"gone", "again"} {
		tb.createTopic(topic, 1, nil)
		if r := tb.produce(topic, 0, 1, "old"); r.Error != messages.ErrorCode_NONE {
			t.Fatalf("produce: %v", r.Error)
		}
		d := filepath.Join(dir, "topics", topic+"-0")
		id, err := os.ReadFile(filepath.Join(d, "topic-id"))
		if err != nil {
			t.Fatal(err)
		}
		ids[d] = id
		resp := tb.ask(&messages.DeleteTopicsRequest{Names: []string{topic}}).(*messages.DeleteTopicsResponse)
		if resp.Results[0].Error != messages.ErrorCode_NONE {
			t.Fatalf("delete: %v", resp.Results[0].Error)
		}
		waitFor(t, "the deleted topic's directory removed", func() bool {
			_, err := os.Stat(d)
			return os.IsNotExist(err)
		})
	}
	tb.stop()
	// As a broker that was down when the topics were deleted finds them:
	// their directories still there. Beside them, one no deletion
	// accounts for.
	unknownDir := filepath.Join(dir, "topics", "unknown-0")
	ids[unknownDir] = []byte("not-a-known-id")
	for d, topicID := range ids {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "topic-id"), topicID, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tb = startTestBroker(t, dir, nil)
	tb.createTopic("again", 1, nil)
	if r := tb.produce("again", 0, 1, "new"); r.Error != messages.ErrorCode_NONE {
		t.Fatalf("produce to the topic created again: %v %s", r.Error, r.ErrorMessage)
	}
	if got := tb.readAll("again", 0); len(got) != 1 || got[0] != "new" {
		t.Fatalf("the topic created again holds %q, want only the new record", got)
	}
	goneDir := filepath.Join(dir, "topics", "gone-0")
	waitFor(t, "the directory of the topic deleted while down removed", func() bool {
		_, err := os.Stat(goneDir)
		return os.IsNotExist(err)
	})
	if _, err := os.Stat(unknownDir); err != nil {
		t.Fatalf("a directory with no deletion recorded was removed: %v", err)
	}
}

// Requests that reach a replica's mailbox just before its broker removes
// it (its topic deleted, or the partition moved away) are answered, not
// dropped: a client waiting on one would otherwise stall for its whole
// request timeout.
func TestRequestsQueuedAtARemovedReplicaAreAnswered(t *testing.T) {
	tb := startTestBroker(t, t.TempDir(), nil)
	tb.createTopic("going", 1, nil)
	if r := tb.produce("going", 0, 1, "first"); r.Error != messages.ErrorCode_NONE {
		t.Fatal(r.Error, r.ErrorMessage)
	}
	// Produce requests go on being sent while the deletion is made, so
	// some are queued at the replica when its broker removes it.
	var futures []*actor.Future
	sent := make(chan struct{})
	stop := make(chan struct{})
	go func() {
		defer close(sent)
		for {
			select {
			case <-stop:
				return
			default:
			}
			// A batch each: the replica writes offsets into the bytes it
			// is given (over the network each request has its own).
			futures = append(futures, tb.system.Root.RequestFuture(tb.pid, &messages.ProduceRequest{Topic: "going", Partition: 0, Acks: 1, Records: makeBatch("queued")}, 8*time.Second))
			if len(futures)%64 == 0 {
				runtime.Gosched()
			}
		}
	}()
	del := tb.system.Root.RequestFuture(tb.pid, &messages.DeleteTopicsRequest{Names: []string{"going"}}, 8*time.Second)
	if _, err := del.Result(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the replica removed", func() bool {
		dirs, _ := filepath.Glob(filepath.Join(tb.dir, "topics", "going-*"))
		return len(dirs) == 0
	})
	close(stop)
	<-sent
	n, unanswered := len(futures), 0
	for _, f := range futures {
		if _, err := f.Result(); err != nil {
			unanswered++
		}
	}
	if unanswered > 0 {
		t.Fatalf("%d of %d produce requests sent before the deletion were never answered", unanswered, n)
	}
}
