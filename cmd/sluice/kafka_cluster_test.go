package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// kafkaSeeds lists the Kafka listeners of the cluster's live brokers.
func kafkaSeeds(t *testing.T, c *testCluster) []string {
	t.Helper()
	var seeds []string
	for _, id := range c.ids() {
		if b := c.brokers[id]; b.alive() {
			// A restarted broker logs a second ready line, with its new port.
			all := kafkaReady.FindAllStringSubmatch(b.logs.String(), -1)
			seeds = append(seeds, all[len(all)-1][1])
		}
	}
	return seeds
}

// franz-go's idempotent acks=all producer writes through the Kafka door
// while partition leaders are killed with SIGKILL: every acknowledged
// record is there once, in the order it was sent.
func TestKafkaIdempotentProducerThroughLeaderKills(t *testing.T) {
	c := startCluster(t, 3, "--kafka-addr", "127.0.0.1:0")
	const topic, parts, kills = "kafka-exactly-once", 3, 2
	c.createTopic(topic, parts, 3, map[string]string{"min.insync.replicas": "2"})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	p := newKgo(t, strings.Join(kafkaSeeds(t, c), ","), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RecordDeliveryTimeout(3*time.Minute), kgo.RetryTimeout(3*time.Minute), kgo.MaxBufferedRecords(20_000))

	var acked [parts]atomic.Int64
	var failed atomic.Int64
	var firstErr atomic.Value
	var sent atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			part := int32(i % parts)
			v := fmt.Sprintf("%d-%07d", part, i/parts)
			sent.Store(int64(i + 1))
			p.Produce(ctx, &kgo.Record{Topic: topic, Partition: part, Value: []byte(v)}, func(_ *kgo.Record, err error) {
				if err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err)
					return
				}
				acked[part].Add(1)
			})
		}
	}()
	ackedAll := func() (n int64) {
		for i := range acked {
			n += acked[i].Load()
		}
		return n
	}
	for k := 0; k < kills; k++ {
		part := int32(k % parts)
		target := ackedAll() + 20_000
		c.waitFor(fmt.Sprintf("kill %d: %d records acknowledged", k, target), 2*time.Minute, func() bool { return ackedAll() >= target })
		var leader int32
		c.waitFor(fmt.Sprintf("kill %d: partition %d fully in sync", k, part), time.Minute, func() bool {
			pm := c.partitionState(topic, part)
			if pm == nil || pm.Leader <= 0 || len(pm.Isr) != 3 {
				return false
			}
			leader = pm.Leader
			return true
		})
		c.brokers[leader].kill9()
		t.Logf("kill %d: broker %d, leader of partition %d; %d records acknowledged", k, leader, part, ackedAll())
		c.waitFor(fmt.Sprintf("kill %d: a new leader for partition %d", k, part), time.Minute, func() bool {
			l := c.leaderOf(topic, part)
			return l > 0 && l != leader
		})
		c.brokers[leader].start()
	}
	target := ackedAll() + 10_000
	c.waitFor("records acknowledged after the last kill", 2*time.Minute, func() bool { return ackedAll() >= target })
	close(stop)
	wg.Wait()
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if failed.Load() > 0 {
		t.Fatalf("%d records failed, first: %v", failed.Load(), firstErr.Load())
	}
	c.waitFullyReplicated(topic, 2*time.Minute)
	n := int(sent.Load())
	lost, dups := 0, 0
	for part := 0; part < parts; part++ {
		want := 0
		seen := map[string]bool{}
		for _, r := range c.consumeAll(topic, int32(part)) {
			v := string(r.Value)
			if seen[v] {
				dups++
				continue
			}
			seen[v] = true
			got, _ := strconv.Atoi(v[strings.IndexByte(v, '-')+1:])
			if got < want {
				t.Fatalf("partition %d: %s out of send order (expected %d)", part, v, want)
			}
			lost += got - want
			want = got + 1
		}
		lost += (n/parts + boolInt(part < n%parts)) - want
	}
	t.Logf("%d records acknowledged through %d leader kills: %d lost, %d duplicated", ackedAll(), kills, lost, dups)
	if lost > 0 || dups > 0 {
		t.Fatalf("%d lost, %d duplicated", lost, dups)
	}

	// ListOffsets gives, as Kafka, the epoch of the batch at the offset
	// found (the start's was written before the kills) and the current
	// leader's epoch with the end.
	adm := kadm.NewClient(p)
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	for part := int32(0); part < kills; part++ {
		first := c.consumeAll(topic, part)[0]
		current := c.partitionState(topic, part).LeaderEpoch
		start, _ := starts.Lookup(topic, part)
		end, _ := ends.Lookup(topic, part)
		if start.Err != nil || start.Offset != 0 || start.LeaderEpoch != first.LeaderEpoch {
			t.Errorf("partition %d: start %+v, want offset 0 in epoch %d", part, start, first.LeaderEpoch)
		}
		if end.Err != nil || end.LeaderEpoch != current || current == first.LeaderEpoch {
			t.Errorf("partition %d: end %+v, want the current epoch %d, not the first record's %d", part, end, current, first.LeaderEpoch)
		}
	}
}
