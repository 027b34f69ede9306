package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/proto"

	"github.com/sluicemq/sluice/actors/transport"
	"github.com/sluicemq/sluice/client"
	"github.com/sluicemq/sluice/messages"
)

// replyDropper stands in front of a broker: clients talk to it as if it
// were the broker (metadata points them back at it), it forwards every
// request and throws away a share of the produce answers, as a lost reply
// would. It runs as the "broker" actor of the test process's actor system.
type replyDropper struct {
	target  string
	self    string
	share   float64
	dropped atomic.Int64
	rng     *rand.Rand
	mu      sync.Mutex
}

func (d *replyDropper) Receive(ctx actor.Context) {
	msg, ok := ctx.Message().(proto.Message)
	if !ok {
		return
	}
	sender := ctx.Sender()
	fut := ctx.RequestFuture(transport.BrokerPID(d.target), msg, 10*time.Second)
	ctx.ReenterAfter(fut, func(res any, err error) {
		if err != nil || sender == nil {
			return
		}
		switch r := res.(type) {
		case *messages.MetadataResponse:
			for _, b := range r.Brokers {
				b.Address = d.self
			}
		case *messages.ProduceResponse:
			d.mu.Lock()
			drop := d.rng.Float64() < d.share
			d.mu.Unlock()
			if drop {
				d.dropped.Add(1)
				return
			}
		}
		ctx.Send(sender, res)
	})
}

// A producer whose answers are lost retries, and the log holds each record
// exactly once, in the order it was sent.
func TestIdempotentProducerWithLostReplies(t *testing.T) {
	b := startBroker(t)
	a := newAdmin(t, b.Addr)
	createTopic(t, a, "idem", 2, nil)
	system, err := client.System()
	if err != nil {
		t.Fatal(err)
	}
	d := &replyDropper{target: b.Addr, self: system.Address(), share: 0.3, rng: rand.New(rand.NewPCG(1, 2))}
	if _, err := system.Root.SpawnNamed(actor.PropsFromProducer(func() actor.Actor { return d }), transport.BrokerActorName); err != nil {
		t.Fatal(err)
	}
	p, err := client.NewProducer(system.Address(), client.Acks(client.AllAcks), client.RequestTimeout(300*time.Millisecond),
		client.RetryBackoff(20*time.Millisecond), client.Linger(time.Millisecond), client.BatchBytes(1024),
		client.WithPartitioner(client.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const n = 20000
	var failed atomic.Int64
	for i := 0; i < n; i++ {
		v := strconv.Itoa(i)
		p.Produce(ctx, &client.Record{Topic: "idem", Partition: int32(i % 2), Value: []byte(v)}, func(_ *client.Record, err error) {
			if err != nil {
				failed.Add(1)
			}
		})
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	p.Close()
	if failed.Load() > 0 {
		t.Fatalf("%d records failed", failed.Load())
	}
	if d.dropped.Load() == 0 {
		t.Fatal("no answer was dropped: the test tested nothing")
	}
	for part := int32(0); part < 2; part++ {
		recs := consumeAll(t, b.Addr, "idem", part)
		if len(recs) != n/2 {
			t.Fatalf("partition %d holds %d records, %d were sent (%d answers dropped)", part, len(recs), n/2, d.dropped.Load())
		}
		for i, r := range recs {
			if want := strconv.Itoa(2*i + int(part)); string(r.Value) != want {
				t.Fatalf("partition %d offset %d: %q, want %q: out of order or duplicated", part, i, r.Value, want)
			}
		}
	}
	t.Logf("%d records, %d answers dropped, each record written once in order", n, d.dropped.Load())
}

// kill -9 the leader repeatedly while an idempotent acks=all producer writes
// 200k records with unique values: none lost, none duplicated, and every
// partition holds its records in the order they were sent.
func TestIdempotentProducerThroughLeaderKills(t *testing.T) {
	c := startCluster(t, 3)
	const topic, parts, total = "exactly-once", 3, 200_000
	c.createTopic(topic, parts, 3, map[string]string{"min.insync.replicas": "2"})
	p, err := client.NewProducer(c.seeds(), client.Acks(client.AllAcks), client.Linger(2*time.Millisecond),
		client.BatchBytes(64<<10), client.RequestTimeout(3*time.Second), client.RetryBackoff(50*time.Millisecond),
		client.DeliveryTimeout(5*time.Minute), client.WithPartitioner(client.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	var acked, failed atomic.Int64
	var firstErr atomic.Value
	done := make(chan struct{})
	go func() {
		defer close(done)
		ctx := context.Background()
		for i := 0; i < total; i++ {
			part := i % parts
			v := fmt.Sprintf("%d-%07d", part, i/parts) // per-partition send order
			p.Produce(ctx, &client.Record{Topic: topic, Partition: int32(part), Value: []byte(v)}, func(_ *client.Record, err error) {
				if err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err)
					return
				}
				acked.Add(1)
			})
		}
	}()
	kills := 0
	for kills < 4 {
		time.Sleep(2 * time.Second)
		leader := c.leaderOf(topic, int32(kills%parts))
		if leader <= 0 {
			continue
		}
		c.brokers[leader].kill9()
		kills++
		time.Sleep(time.Duration(500+rand.IntN(1500)) * time.Millisecond)
		c.brokers[leader].start()
	}
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
		lost += (total/parts + boolInt(part < total%parts)) - want
	}
	t.Logf("%d records acknowledged through %d leader kills: %d lost, %d duplicated", acked.Load(), kills, lost, dups)
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
