package main

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/messages/record"
)

// Attacks on the Kafka listener, each from 127.0.0.2 while a normal client
// on 127.0.0.1 keeps producing: the broker's RSS must stay within a bound
// over the idle broker, and the normal client must be served throughout.

// attackerDialer dials from 127.0.0.2, a source address of its own.
var attackerDialer = net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}, Timeout: 5 * time.Second}

// attack opens n connections to addr from the attacker's address and runs
// send on each, all at once; it returns when every send has, leaving the
// connections open for the caller to close (closeAll).
func attack(t *testing.T, addr string, n int, send func(c net.Conn)) []net.Conn {
	conns := make([]net.Conn, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := attackerDialer.Dial("tcp", addr)
			if err != nil {
				t.Error(err)
				return
			}
			conns[i] = c
			send(c)
		}()
	}
	wg.Wait()
	return conns
}

func closeAll(conns []net.Conn) {
	for _, c := range conns {
		if c != nil {
			c.Close()
		}
	}
}

// kafkaFrame encodes req (a version without flexible headers) as one
// size-prefixed request frame.
func kafkaFrame(req kmsg.Request, version int16, correlationID int32) []byte {
	req.SetVersion(version)
	buf := make([]byte, 4, 1<<10)
	buf = binary.BigEndian.AppendUint16(buf, uint16(req.Key()))
	buf = binary.BigEndian.AppendUint16(buf, uint16(version))
	buf = binary.BigEndian.AppendUint32(buf, uint32(correlationID))
	buf = binary.BigEndian.AppendUint16(buf, uint16(len("attacker")))
	buf = append(buf, "attacker"...)
	buf = req.AppendTo(buf)
	binary.BigEndian.PutUint32(buf, uint32(len(buf)-4))
	return buf
}

// recordBatch is one RecordBatch v2 of n records of size bytes each.
func recordBatch(n, size int) []byte {
	var b record.Builder
	b.Reset(record.NoProducer)
	value := make([]byte, size)
	now := time.Now().UnixMilli()
	for range n {
		b.Append(now, nil, value, nil)
	}
	return append([]byte(nil), b.Finish()...)
}

// rssPeak samples pid's RSS until stop is called and returns the largest.
func rssPeak(t *testing.T, pid int) (stop func() int64) {
	var peak atomic.Int64
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			if r := rssBytes(t, pid); r > peak.Load() {
				peak.Store(r)
			}
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	return func() int64 {
		close(done)
		<-finished
		return peak.Load()
	}
}

// probeKafka produces one record at a time through the Kafka door from
// 127.0.0.1 until stop is called, and returns how many it produced and the
// longest any took; a failure fails the test.
func probeKafka(t *testing.T, addr, topic string) (stop func() (int, time.Duration)) {
	cl := newKgo(t, addr, kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DisableIdempotentWrite())
	ctx, cancel := context.WithCancel(context.Background())
	var n int
	var longest time.Duration
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		for ctx.Err() == nil {
			start := time.Now()
			pctx, pcancel := context.WithTimeout(ctx, 20*time.Second)
			err := cl.ProduceSync(pctx, &kgo.Record{Value: []byte("probe")}).FirstErr()
			pcancel()
			if ctx.Err() != nil {
				return
			}
			if err != nil {
				t.Errorf("the normal client's produce failed during the attack: %v", err)
				return
			}
			n++
			longest = max(longest, time.Since(start))
			time.Sleep(100 * time.Millisecond)
		}
	}()
	return func() (int, time.Duration) {
		cancel()
		<-finished
		return n, longest
	}
}

// kafkaAttack starts a broker with a Kafka listener and a topic "victim",
// runs attack against its Kafka address while a normal client produces,
// and checks the broker's RSS and that the client was served.
func kafkaAttack(t *testing.T, bound int64, attack func(b *brokerProc, addr string)) {
	if raceEnabled {
		// The race detector's shadow of every allocation: 545 MiB
		// measured for an attack that adds 124 MiB without it.
		bound *= 3
	}
	b := startBroker(t, "--kafka-addr", "127.0.0.1:0")
	addr := kafkaAddr(t, b)
	createTopic(t, newAdmin(t, b.Addr), "victim", 1, nil)
	produceN(t, b.Addr, "victim", 0, 5)
	before := rssBytes(t, b.pid())
	stopRSS := rssPeak(t, b.pid())
	stopProbe := probeKafka(t, addr, "victim")
	attack(b, addr)
	probes, longest := stopProbe()
	peak := stopRSS()
	t.Logf("broker RSS %d MiB before the attack, at most %d MiB during it; the normal client produced %d records, the slowest in %v",
		before>>20, peak>>20, probes, longest)
	if !b.alive() {
		t.Fatalf("broker died:\n%s", tail(b.logs.String(), 30))
	}
	if peak-before > bound {
		t.Errorf("RSS grew by %d MiB, more than %d MiB", (peak-before)>>20, bound>>20)
	}
	if probes == 0 {
		t.Errorf("the normal client produced nothing during the attack")
	}
}

// A producer floods acks=0 requests: they get no answers, but each holds
// its bytes until the partition took its batch, so the flood waits for the
// partition instead of piling up in the broker.
func TestKafkaAttackAcksZeroFlood(t *testing.T) {
	kafkaAttack(t, 256<<20, func(b *brokerProc, addr string) {
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = 0, 30000
		pt := kmsg.NewProduceRequestTopic()
		pt.Topic = "victim"
		pp := kmsg.NewProduceRequestTopicPartition()
		pp.Records = recordBatch(1000, 1000)
		pt.Partitions = append(pt.Partitions, pp)
		req.Topics = append(req.Topics, pt)
		frame := kafkaFrame(req, 7, 1)
		var sent atomic.Int64
		deadline := time.Now().Add(8 * time.Second)
		closeAll(attack(t, addr, 4, func(c net.Conn) {
			_ = c.SetWriteDeadline(deadline)
			for {
				n, err := c.Write(frame)
				sent.Add(int64(n))
				if err != nil {
					return
				}
			}
		}))
		t.Logf("the attacker sent %d MiB of acks=0 produce requests in 8 s", sent.Load()>>20)
	})
}

// Connections each announce a 16 MiB frame and send all of it but the
// last byte: a frame's buffer grows as its bytes arrive, and frames wait
// for room in the in-flight budget before they are read, so the broker
// holds at most one source's share of the budget for them.
func TestKafkaAttackHalfSentFrames(t *testing.T) {
	kafkaAttack(t, 256<<20, func(b *brokerProc, addr string) {
		const size = 16 << 20
		body := make([]byte, 4+size-1)
		binary.BigEndian.PutUint32(body, size)
		var sent atomic.Int64
		deadline := time.Now().Add(8 * time.Second)
		conns := attack(t, addr, 60, func(c net.Conn) {
			_ = c.SetWriteDeadline(deadline)
			n, _ := c.Write(body)
			sent.Add(int64(n))
		})
		t.Logf("the attacker sent %d MiB of unfinished frames on 60 connections", sent.Load()>>20)
		// The connections stay open, their frames unfinished, while the
		// normal client goes on.
		time.Sleep(2 * time.Second)
		closeAll(conns)
	})
}

// Fetches that name one partition many times: 300,000 times in one 4.8 MB
// request, four connections at once, are refused for their size before
// anything is asked; 20 times, the partition is read once and the answer
// stays within the broker's fetch limit however much the client asks for.
func TestKafkaAttackFetchAmplification(t *testing.T) {
	kafkaAttack(t, 256<<20, func(b *brokerProc, addr string) {
		cl := newKgo(t, addr, kgo.DefaultProduceTopic("victim"), kgo.ProducerBatchMaxBytes(1<<20))
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		value := make([]byte, 100<<10)
		var records []*kgo.Record
		for range 100 {
			records = append(records, &kgo.Record{Value: value})
		}
		if err := cl.ProduceSync(ctx, records...).FirstErr(); err != nil {
			t.Fatal(err)
		}

		fetch := func(times int) *kmsg.FetchRequest {
			req := kmsg.NewPtrFetchRequest()
			req.MaxBytes, req.MinBytes, req.ReplicaID = 1<<30, 1, -1
			ft := kmsg.NewFetchRequestTopic()
			ft.Topic = "victim"
			for range times {
				fp := kmsg.NewFetchRequestTopicPartition()
				fp.PartitionMaxBytes, fp.CurrentLeaderEpoch = 16<<20, -1
				ft.Partitions = append(ft.Partitions, fp)
			}
			req.Topics = append(req.Topics, ft)
			return req
		}
		huge := kafkaFrame(fetch(300_000), 11, 1)
		t.Logf("a fetch naming the partition 300,000 times is %d bytes", len(huge))
		closeAll(attack(t, addr, 4, func(c net.Conn) {
			_ = c.SetDeadline(time.Now().Add(30 * time.Second))
			for i := range 4 { // pipelined
				if _, err := c.Write(huge); err != nil {
					if i == 0 {
						t.Errorf("sending the fetch: %v", err)
					}
					return
				}
			}
			if _, err := c.Read(make([]byte, 1)); err == nil {
				t.Errorf("the broker answered a fetch naming 300,000 partitions")
			}
		}))

		c, err := attackerDialer.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(30 * time.Second))
		if _, err := c.Write(kafkaFrame(fetch(20), 11, 2)); err != nil {
			t.Fatal(err)
		}
		var size [4]byte
		if _, err := io.ReadFull(c, size[:]); err != nil {
			t.Fatal(err)
		}
		n := binary.BigEndian.Uint32(size[:])
		t.Logf("a fetch naming a 10 MB partition (kgo batches of up to 1 MiB) 20 times got a %d-byte answer", n)
		if n > 9<<20 {
			t.Errorf("a %d-byte answer, more than the broker's 8 MiB fetch limit", n)
		}
	})
}

// Connections that never send a byte are pending, counted apart from the
// clients' connections: from one address beyond 32 they are closed at
// once, the others after 10 s, and a Kafka client connects and produces
// throughout.
func TestKafkaAttackSilentConnections(t *testing.T) {
	kafkaAttack(t, 100<<20, func(b *brokerProc, addr string) {
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		for range 1100 {
			c, err := attackerDialer.Dial("tcp", addr)
			if err != nil {
				continue
			}
			conns = append(conns, c)
		}
		// A new client connects while they are open.
		fresh := newKgo(t, addr, kgo.DefaultProduceTopic("victim"))
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := fresh.ProduceSync(ctx, &kgo.Record{Value: []byte("during")}).FirstErr(); err != nil {
			t.Fatalf("a new client during the attack: %v", err)
		}
		// Those over the limit are closed within 5 s (the first-request
		// timeout closes the others only after 10 s): a read ends.
		var closedCount atomic.Int64
		var wg sync.WaitGroup
		by := time.Now().Add(5 * time.Second)
		for _, c := range conns {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_ = c.SetReadDeadline(by)
				if _, err := c.Read(make([]byte, 1)); err != nil {
					if ne, ok := err.(net.Error); !ok || !ne.Timeout() {
						closedCount.Add(1)
					}
				}
			}()
		}
		wg.Wait()
		closed := int(closedCount.Load())
		t.Logf("%d silent connections opened, %d closed within 5 s", len(conns), closed)
		if closed < len(conns)-32 {
			t.Errorf("only %d of %d silent connections were closed; at most 32 may wait", closed, len(conns))
		}
	})
}
