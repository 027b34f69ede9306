package main

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicemq/sluice/client"
)

// A producer floods acks=0 records through the actor door: each request
// holds its bytes in the broker's in-flight budget until the partition
// has written it, and the stream reads on only when there is room, so the
// flood waits for the partition instead of piling up in the broker. A
// client in another process produces meanwhile.
func TestActorAttackAcksZeroFlood(t *testing.T) {
	bound := int64(256 << 20)
	if raceEnabled {
		bound *= 3 // the race detector's shadow of every allocation
	}
	b := startBroker(t)
	createTopic(t, newAdmin(t, b.Addr), "victim", 1, nil)
	produceN(t, b.Addr, "victim", 0, 5)
	before := rssBytes(t, b.pid())
	stopRSS := rssPeak(t, b.pid())
	// A small client buffer: the flood is what the connection carries, and
	// little is left to send when it ends.
	p, err := client.NewProducer(b.Addr, sharedOpts(), client.Acks(client.NoAck), client.WithPartitioner(client.ManualPartitioner()),
		client.MaxBufferedBytes(8<<20))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var sent atomic.Int64
	flooded := make(chan struct{})
	go func() {
		defer close(flooded)
		value := make([]byte, 1000)
		deadline := time.Now().Add(6 * time.Second)
		for time.Now().Before(deadline) {
			p.Produce(context.Background(), &client.Record{Topic: "victim", Value: value}, func(*client.Record, error) {})
			sent.Add(1)
		}
	}()
	time.Sleep(3 * time.Second) // the flood is under way
	start := time.Now()
	b.cli("during the flood\n", "produce", "victim", "--partition", "0", "--acks", "all")
	took := time.Since(start)
	<-flooded
	peak := stopRSS()
	t.Logf("%d records sent with acks=0 in 6 s; broker RSS %d MiB before, at most %d MiB during; a produce from another process took %v",
		sent.Load(), before>>20, peak>>20, took)
	if !b.alive() {
		t.Fatalf("broker died:\n%s", tail(b.logs.String(), 30))
	}
	if peak-before > bound {
		t.Errorf("RSS grew by %d MiB, more than %d MiB", (peak-before)>>20, bound>>20)
	}
}
