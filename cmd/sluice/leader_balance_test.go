package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sluicemq/sluice/client"
)

// After a broker restarts, the controller gives it back the leadership of
// the partitions it is the preferred replica of, once it is in their ISRs
// again; records produced with acks=all before and after stay readable.
func TestPreferredLeadersReturnAfterARestart(t *testing.T) {
	c := startCluster(t, 3, "--leader-imbalance-check-interval", "1s")
	const topic, partitions = "balance", 6
	c.createTopic(topic, partitions, 3, nil)
	balanced := func() bool {
		md, err := c.metadata(topic)
		if err != nil || len(md.Topics) != 1 || len(md.Topics[0].Partitions) != partitions {
			return false
		}
		for _, p := range md.Topics[0].Partitions {
			if p.Leader != p.Replicas[0] || len(p.Isr) != 3 {
				return false
			}
		}
		return true
	}
	c.waitFor("every partition led by its preferred replica", 30*time.Second, balanced)

	p, err := client.NewProducer(c.seeds(), sharedOpts(), client.Acks(client.AllAcks))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	produce := func(from int) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for i := from; i < from+120; i++ {
			if _, _, err := p.ProduceSync(ctx, &client.Record{Topic: topic, Partition: int32(i % partitions), Value: []byte(fmt.Sprint(i))}); err != nil {
				t.Fatalf("record %d: %v", i, err)
			}
		}
	}
	produce(0)

	victim := int32(1)
	if c.controller() == victim {
		victim = 2
	}
	c.brokers[victim].stop()
	c.waitFor(fmt.Sprintf("no partition led by stopped broker %d", victim), time.Minute, func() bool {
		md, err := c.metadata(topic)
		if err != nil || len(md.Topics) != 1 {
			return false
		}
		for _, p := range md.Topics[0].Partitions {
			if p.Leader == victim || p.Leader < 0 {
				return false
			}
		}
		return true
	})
	produce(120)
	c.brokers[victim].start()
	c.waitFor(fmt.Sprintf("broker %d leading its preferred partitions again", victim), 90*time.Second, balanced)
	produce(240)

	total := 0
	for part := int32(0); part < partitions; part++ {
		total += len(c.consumeAll(topic, part))
	}
	if total != 360 {
		t.Fatalf("read %d records back, want the 360 acknowledged", total)
	}
}
