package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/proto"

	"github.com/sluicemq/sluice/client"
	"github.com/sluicemq/sluice/internal/reply"
	"github.com/sluicemq/sluice/messages"
	"github.com/sluicemq/sluice/messages/record"
	"github.com/sluicemq/sluice/transport"
)

// ---- a broker proxy with faults ---------------------------------------------

// verdict is what a brokerProxy does with one produce request.
type verdict struct {
	// forward sends the request on to the broker.
	forward bool
	// answer, unless NONE, is the error the client gets instead of the
	// broker's answer (or of an answer at all, when not forwarded).
	answer messages.ErrorCode
	// lose throws the broker's answer away, as a lost reply.
	lose bool
}

var pass = verdict{forward: true}

// brokerProxy stands in front of a broker: clients talk to it as if it
// were the broker (metadata points them back at it); it forwards every
// request, and decide says what becomes of each produce request and its
// answer. It runs as the "broker" actor of the test process's actor system
// until the test ends. decide and answered run on the proxy's actor, one
// call at a time.
type brokerProxy struct {
	target, self string
	decide       func(h record.Header, req *messages.ProduceRequest) verdict
	// answered, if set, sees every answer of the broker to a forwarded
	// produce request, and whether the client gets it.
	answered func(h record.Header, resp *messages.ProduceResponse, delivered bool)
	// bumps counts InitProducerId requests for the next epoch of an id.
	bumps atomic.Int64
}

// startProxy runs px in front of the broker at target and returns the
// address clients should use.
func startProxy(t *testing.T, target string, px *brokerProxy) string {
	t.Helper()
	system, err := client.System()
	if err != nil {
		t.Fatal(err)
	}
	px.target, px.self = target, system.Address()
	pid, err := system.Root.SpawnNamed(actor.PropsFromProducer(func() actor.Actor { return px }), transport.BrokerActorName)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = system.Root.StopFuture(pid).Wait() })
	return px.self
}

func (px *brokerProxy) Receive(ctx actor.Context) {
	msg, ok := ctx.Message().(proto.Message)
	if !ok {
		return
	}
	sender := ctx.Sender()
	v := pass
	var h record.Header
	switch m := msg.(type) {
	case *messages.ProduceRequest:
		h, _ = record.ParseHeader(m.Records)
		v = px.decide(h, m)
	case *messages.InitProducerIdRequest:
		if m.ProducerId > 0 {
			px.bumps.Add(1)
		}
	}
	refusal := func() *messages.ProduceResponse {
		req := msg.(*messages.ProduceRequest)
		return &messages.ProduceResponse{Topic: req.Topic, Partition: req.Partition, Error: v.answer, BaseOffset: -1,
			ErrorMessage: "injected by the test's proxy"}
	}
	if !v.forward {
		if v.answer != messages.ErrorCode_NONE && sender != nil {
			ctx.Send(sender, refusal())
		}
		return
	}
	reply.Ask(ctx, transport.BrokerPID(px.target), msg, 10*time.Second, func(res any, err error) {
		if err != nil || sender == nil {
			return
		}
		switch r := res.(type) {
		case *messages.MetadataResponse:
			for _, b := range r.Brokers {
				b.Address = px.self
			}
		case *messages.ProduceResponse:
			if px.answered != nil {
				px.answered(h, r, !v.lose && v.answer == messages.ErrorCode_NONE)
			}
			if v.lose {
				return
			}
			if v.answer != messages.ErrorCode_NONE {
				res = refusal()
			}
		}
		ctx.Send(sender, res)
	})
}

// ---- acknowledgements ----------------------------------------------------------

// acks records what a producer was told about each record, by value.
type acks struct {
	mu     sync.Mutex
	at     map[string][2]int64 // value -> partition, offset
	failed map[string]error
}

func newAcks() *acks { return &acks{at: map[string][2]int64{}, failed: map[string]error{}} }

func (a *acks) promise(r *client.Record, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if err != nil {
		a.failed[string(r.Value)] = err
		return
	}
	a.at[string(r.Value)] = [2]int64{int64(r.Partition), r.Offset}
}

// checkLog fails unless partition part's log holds exactly want, in order,
// and every record of it acknowledged was acknowledged at its offset there.
func (a *acks) checkLog(t *testing.T, addr, topic string, part int32, want []string) {
	t.Helper()
	recs := consumeAll(t, addr, topic, part)
	var got []string
	for _, r := range recs {
		got = append(got, string(r.Value))
	}
	if !slices.Equal(got, want) {
		t.Fatalf("partition %d holds %d records, want %d in send order, each once; first difference at %d",
			part, len(got), len(want), firstDifference(got, want))
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, r := range recs {
		if at, ok := a.at[string(r.Value)]; ok && at != [2]int64{int64(part), r.Offset} {
			t.Fatalf("%q acknowledged at partition %d offset %d, but it is at partition %d offset %d", r.Value, at[0], at[1], part, r.Offset)
		}
	}
}

func firstDifference(a, b []string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// ---- tests ----------------------------------------------------------------------

// A producer whose answers are lost retries; the log holds each record
// exactly once, in the order it was sent, and each record was acknowledged
// at the offset it has there: a retry of a batch already written is
// answered with the original offsets.
func TestIdempotentProducerWithLostReplies(t *testing.T) {
	b := startBroker(t)
	createTopic(t, newAdmin(t, b.Addr), "idem", 2, nil)
	rng := rand.New(rand.NewPCG(1, 2))
	// The proxy's bookkeeping; a late answer to an attempt the client gave
	// up on may still come in while the test reads it.
	var mu sync.Mutex
	var dropped, dedupedAtOriginal int
	var mismatches []string
	droppedAt := map[string]int64{} // batch -> base offset of an answer thrown away
	px := &brokerProxy{
		decide: func(record.Header, *messages.ProduceRequest) verdict {
			return verdict{forward: true, lose: rng.Float64() < 0.3}
		},
		answered: func(h record.Header, r *messages.ProduceResponse, delivered bool) {
			if r.Error != messages.ErrorCode_NONE {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			key := fmt.Sprintf("%d/%d/%d", r.Partition, h.ProducerEpoch, h.BaseSequence)
			if !delivered {
				dropped++
				droppedAt[key] = r.BaseOffset
				return
			}
			if first, ok := droppedAt[key]; ok {
				if r.BaseOffset != first {
					mismatches = append(mismatches, fmt.Sprintf("batch %s: written at %d, retry answered with %d", key, first, r.BaseOffset))
				}
				dedupedAtOriginal++
			}
		},
	}
	addr := startProxy(t, b.Addr, px)
	p, err := client.NewProducer(addr, client.Acks(client.AllAcks), client.RequestTimeout(300*time.Millisecond),
		client.RetryBackoff(20*time.Millisecond), client.Linger(time.Millisecond), client.BatchBytes(1024),
		client.WithPartitioner(client.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const n = 20000
	a := newAcks()
	want := [2][]string{}
	for i := 0; i < n; i++ {
		v := strconv.Itoa(i)
		want[i%2] = append(want[i%2], v)
		p.Produce(ctx, &client.Record{Topic: "idem", Partition: int32(i % 2), Value: []byte(v)}, a.promise)
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	p.Close()
	if len(a.failed) > 0 {
		t.Fatalf("%d records failed", len(a.failed))
	}
	mu.Lock()
	defer mu.Unlock()
	if dropped == 0 || dedupedAtOriginal == 0 {
		t.Fatalf("%d answers dropped, %d retries of a written batch answered: the test tested nothing", dropped, dedupedAtOriginal)
	}
	if len(mismatches) > 0 {
		t.Fatalf("%d retries answered with other offsets than the original, first: %v", len(mismatches), mismatches[:min(len(mismatches), 5)])
	}
	for part := int32(0); part < 2; part++ {
		a.checkLog(t, b.Addr, "idem", part, want[part])
	}
	t.Logf("%d records, %d answers dropped, %d retries answered with the original offsets", n, dropped, dedupedAtOriginal)
}

// A numbered batch that fails for good leaves no gap the producer cannot
// get past: if a later batch shows it was written the sequence goes on,
// otherwise the producer bumps its epoch and renumbers the partition from
// sequence 0. Either way every other record gets through once, in order.
func TestIdempotentProducerRecoversFromALostBatch(t *testing.T) {
	b := startBroker(t)
	admin := newAdmin(t, b.Addr)
	for _, tc := range []struct {
		name string
		// fault is what the proxy does with every attempt of the lost batch.
		fault verdict
		// written: the lost batch is in the log (only its answers were lost).
		written bool
		wantErr error
	}{
		{"retries used up, never written", verdict{answer: messages.ErrorCode_REQUEST_TIMED_OUT}, false, client.ErrRequestTimedOut},
		{"non-retriable error", verdict{answer: messages.ErrorCode_CORRUPT_RECORD}, false, client.ErrCorruptRecord},
		{"written, every answer lost", verdict{forward: true, answer: messages.ErrorCode_REQUEST_TIMED_OUT}, true, client.ErrRequestTimedOut},
	} {
		t.Run(tc.name, func(t *testing.T) {
			topic := strings.ReplaceAll(tc.name, " ", "-")
			topic = strings.ReplaceAll(topic, ",", "")
			createTopic(t, admin, topic, 2, nil)
			var mu sync.Mutex
			var lost []string // values of the lost batch
			lostSeq := int32(-1)
			seen := map[int32]bool{} // base sequences of partition 0 under epoch 0
			restarted := false       // partition 0 sent a batch at sequence 0 of a newer epoch
			px := &brokerProxy{decide: func(h record.Header, req *messages.ProduceRequest) verdict {
				mu.Lock()
				defer mu.Unlock()
				if req.Partition != 0 {
					return pass
				}
				if h.ProducerEpoch > 0 {
					restarted = restarted || h.BaseSequence == 0
					return pass
				}
				if !seen[h.BaseSequence] {
					seen[h.BaseSequence] = true
					if len(seen) == 5 { // the fifth batch is lost
						lostSeq, lost = h.BaseSequence, batchValues(t, req.Records)
					}
				}
				if h.BaseSequence == lostSeq {
					return tc.fault
				}
				return pass
			}}
			addr := startProxy(t, b.Addr, px)
			p, err := client.NewProducer(addr, client.Acks(client.AllAcks), client.Retries(2), client.RetryBackoff(10*time.Millisecond),
				client.Linger(time.Millisecond), client.BatchBytes(1024), client.RequestTimeout(10*time.Second),
				client.WithPartitioner(client.ManualPartitioner()))
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			a := newAcks()
			var sent [2][]string
			for i := 0; i < 3000; i++ {
				v := fmt.Sprintf("%05d", i)
				sent[i%2] = append(sent[i%2], v)
				p.Produce(ctx, &client.Record{Topic: topic, Partition: int32(i % 2), Value: []byte(v)}, a.promise)
			}
			if err := p.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			p.Close()
			mu.Lock()
			defer mu.Unlock()
			if len(lost) == 0 {
				t.Fatal("no batch was lost: the test tested nothing")
			}
			// Exactly the lost batch's records failed, with its error.
			a.mu.Lock()
			failed := slices.Sorted(func(yield func(string) bool) {
				for v := range a.failed {
					if !yield(v) {
						return
					}
				}
			})
			for v, err := range a.failed {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("%s failed with %v, want %v", v, err, tc.wantErr)
				}
			}
			a.mu.Unlock()
			if !slices.Equal(failed, lost) {
				t.Fatalf("%d records failed, want the %d of the lost batch (%v)", len(failed), len(lost), lost)
			}
			want0 := sent[0]
			if !tc.written {
				want0 = slices.DeleteFunc(slices.Clone(want0), func(v string) bool { return slices.Contains(lost, v) })
			}
			a.checkLog(t, b.Addr, topic, 0, want0)
			a.checkLog(t, b.Addr, topic, 1, sent[1])
			// A written batch needs no new epoch; a missing one does.
			if bumped := px.bumps.Load() > 0; bumped != !tc.written || restarted != !tc.written {
				t.Fatalf("epoch bumps %d, partition 0 restarted at sequence 0: %v; want both only if the batch was not written",
					px.bumps.Load(), restarted)
			}
		})
	}
}

// batchValues returns the values of a record batch's records.
func batchValues(t *testing.T, batch []byte) []string {
	t.Helper()
	var out []string
	it := record.Records(batch)
	for {
		r, more, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		if !more {
			return out
		}
		out = append(out, string(r.Value))
	}
}

// retryCounter is a slog handler that counts the producer's "retrying
// produce" lines per partition: each is a batch sent again.
type retryCounter struct {
	mu sync.Mutex
	n  map[int64]int
}

func (h *retryCounter) Enabled(context.Context, slog.Level) bool { return true }
func (h *retryCounter) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *retryCounter) WithGroup(string) slog.Handler            { return h }

func (h *retryCounter) Handle(_ context.Context, r slog.Record) error {
	if r.Message != "retrying produce" {
		return nil
	}
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "partition" {
			h.mu.Lock()
			h.n[a.Value.Int64()]++
			h.mu.Unlock()
		}
		return true
	})
	return nil
}

func (h *retryCounter) count(part int32) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n[int64(part)]
}

func (h *retryCounter) String() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return fmt.Sprint(h.n)
}

// kill -9 the leader repeatedly while an idempotent acks=all producer writes
// at least 200k records with unique values: none lost, none duplicated, and every
// partition holds its records in the order they were sent. Each kill hits
// a partition with records unanswered, and the producer resends them.
func TestIdempotentProducerThroughLeaderKills(t *testing.T) {
	c := startCluster(t, 3)
	const topic, parts, total, kills = "exactly-once", 3, 200_000, 4
	// Production keeps this many records unanswered at most, so that it is
	// still going on at every kill.
	const window = 20_000
	c.createTopic(topic, parts, 3, map[string]string{"min.insync.replicas": "2"})
	ids := newProducerIDs(t)
	ids.collect(c, 3)
	retries := &retryCounter{n: map[int64]int{}}
	p, err := client.NewProducer(c.seeds(), client.Acks(client.AllAcks), client.Linger(2*time.Millisecond),
		client.BatchBytes(64<<10), client.RequestTimeout(3*time.Second), client.RetryBackoff(50*time.Millisecond),
		client.DeliveryTimeout(5*time.Minute), client.WithPartitioner(client.ManualPartitioner()), client.WithLogger(slog.New(retries)))
	if err != nil {
		t.Fatal(err)
	}
	var sent, acked [parts]atomic.Int64
	var failed atomic.Int64
	var firstErr atomic.Value
	unanswered := func(part int) int64 { return sent[part].Load() - acked[part].Load() }
	ackedAll := func() (n int64) {
		for i := range acked {
			n += acked[i].Load()
		}
		return n
	}
	inflight := make(chan struct{}, window)
	done := make(chan struct{})
	// The producer goes on past total until the last kill, so that a fast
	// run still has records in flight at every kill.
	var killsDone atomic.Bool
	var produced atomic.Int64
	go func() {
		defer close(done)
		ctx := context.Background()
		for i := 0; i < total || !killsDone.Load(); i++ {
			produced.Store(int64(i + 1))
			part := i % parts
			v := fmt.Sprintf("%d-%07d", part, i/parts) // per-partition send order
			inflight <- struct{}{}
			sent[part].Add(1)
			p.Produce(ctx, &client.Record{Topic: topic, Partition: int32(part), Value: []byte(v)}, func(_ *client.Record, err error) {
				<-inflight
				if err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err)
					return
				}
				acked[part].Add(1)
			})
		}
	}()
	for k := 0; k < kills; k++ {
		part := k % parts
		// Spread the kills over the run; each one while the partition is
		// fully replicated (so that min.insync.replicas holds after it) and
		// has records unanswered.
		c.waitFor(fmt.Sprintf("kill %d: %d records acknowledged", k, (k+1)*total/(kills+1)), 2*time.Minute, func() bool {
			return ackedAll() >= int64((k+1)*total/(kills+1))
		})
		var leader int32
		c.waitFor(fmt.Sprintf("kill %d: partition %d fully in sync with unanswered records", k, part), time.Minute, func() bool {
			pm := c.partitionState(topic, int32(part))
			if pm == nil || pm.Leader <= 0 || len(pm.Isr) != 3 {
				return false
			}
			leader = pm.Leader
			return unanswered(part) > 0
		})
		before := retries.count(int32(part))
		c.brokers[leader].kill9()
		t.Logf("kill %d: broker %d, leader of partition %d, with %d of its records unanswered; %d records acknowledged",
			k, leader, part, unanswered(part), ackedAll())
		c.waitFor(fmt.Sprintf("kill %d: a new leader for partition %d", k, part), time.Minute, func() bool {
			l := c.leaderOf(topic, int32(part))
			return l > 0 && l != leader
		})
		c.brokers[leader].start()
		// The killed leader's unanswered records are sent again.
		c.waitFor(fmt.Sprintf("kill %d: the producer resending partition %d's records", k, part), time.Minute, func() bool {
			return retries.count(int32(part)) > before
		})
	}
	killsDone.Store(true)
	<-done
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	p.Close()
	if failed.Load() > 0 {
		t.Fatalf("%d records failed, first: %v", failed.Load(), firstErr.Load())
	}
	c.waitFullyReplicated(topic, 2*time.Minute)
	// Restarted brokers reserved new blocks of producer ids.
	ids.collect(c, 3)
	lost, dups := 0, 0
	for part := 0; part < parts; part++ {
		recs := c.consumeAll(topic, int32(part))
		want := 0
		seen := map[string]bool{}
		for _, r := range recs {
			v := string(r.Value)
			if seen[v] {
				dups++
				continue
			}
			seen[v] = true
			exp := fmt.Sprintf("%d-%07d", part, want)
			if v != exp {
				i := strings.IndexByte(v, '-')
				got, _ := strconv.Atoi(v[i+1:])
				if got < want {
					t.Fatalf("partition %d: %s after %s: out of send order", part, v, exp)
				}
				lost += got - want
				want = got
			}
			want++
		}
		n := int(produced.Load())
		lost += (n/parts + boolInt(part < n%parts)) - want
	}
	t.Logf("%d records acknowledged through %d leader kills: %d lost, %d duplicated; retries per partition %v",
		ackedAll(), kills, lost, dups, retries)
	if lost > 0 || dups > 0 {
		t.Fatalf("%d lost, %d duplicated", lost, dups)
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// producerIDs collects the producer ids brokers hand out and fails the test
// on one handed out twice.
type producerIDs struct {
	t    *testing.T
	from map[int64]int32 // id -> broker
}

func newProducerIDs(t *testing.T) *producerIDs { return &producerIDs{t: t, from: map[int64]int32{}} }

// collect asks every broker of c for n new producer ids.
func (p *producerIDs) collect(c *testCluster, n int) {
	p.t.Helper()
	for _, id := range c.ids() {
		for range n {
			var resp *messages.InitProducerIdResponse
			c.waitFor(fmt.Sprintf("a producer id from broker %d", id), 30*time.Second, func() bool {
				ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
				defer cancel()
				res, err := c.admin.Request(ctx, c.brokers[id].Addr, &messages.InitProducerIdRequest{})
				resp, _ = res.(*messages.InitProducerIdResponse)
				return err == nil && resp != nil && resp.Error == messages.ErrorCode_NONE
			})
			if prev, ok := p.from[resp.ProducerId]; ok {
				p.t.Fatalf("producer id %d handed out by broker %d and broker %d", resp.ProducerId, prev, id)
			}
			p.from[resp.ProducerId] = id
		}
	}
}

// --producer-id-expiration makes a partition forget an idle producer: a
// batch that leaves a gap after its last one is refused until then, and
// taken as the first batch of an unknown producer after.
func TestProducerIDExpirationFlag(t *testing.T) {
	const expiration = 2 * time.Second
	b := startBroker(t, "--producer-id-expiration", expiration.String())
	a := newAdmin(t, b.Addr)
	createTopic(t, a, "expiry", 1, nil)
	produce := func(seq int32) *messages.ProduceResponse {
		t.Helper()
		var bld record.Builder
		bld.Reset(record.Producer{ID: 1 << 40, BaseSequence: seq})
		bld.Append(time.Now().UnixMilli(), nil, []byte(fmt.Sprint("seq ", seq)), nil)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		res, err := a.Request(ctx, b.Addr, &messages.ProduceRequest{Topic: "expiry", Acks: 1, Records: bld.Finish()})
		if err != nil {
			t.Fatal(err)
		}
		return res.(*messages.ProduceResponse)
	}
	start := time.Now()
	if r := produce(0); r.Error != messages.ErrorCode_NONE {
		t.Fatalf("first batch: %v %s", r.Error, r.ErrorMessage)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		r := produce(5)
		if r.Error == messages.ErrorCode_NONE {
			break
		}
		if r.Error != messages.ErrorCode_OUT_OF_ORDER_SEQUENCE || time.Now().After(deadline) {
			t.Fatalf("batch after the gap, %v after the first: %v %s", time.Since(start), r.Error, r.ErrorMessage)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// The producer was known until the expiration had passed.
	if elapsed := time.Since(start); elapsed < expiration {
		t.Fatalf("the gap was accepted %v after the first batch, before the %v expiration", elapsed, expiration)
	}
	if _, stderr, code := runCLI(t, "", "broker", "--data", t.TempDir(), "--producer-id-expiration", "0s"); code != 2 ||
		!strings.Contains(stderr, "producer id expiration") {
		t.Fatalf("--producer-id-expiration 0s: exit %d, %q", code, stderr)
	}
}
