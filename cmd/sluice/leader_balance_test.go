package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluicemq/sluice/client"
)

const balanceTopic, balancePartitions = "balance", 6

// balanced reports whether every partition of balanceTopic is led by its
// preferred replica with all three replicas in sync.
func (c *testCluster) balanced() bool {
	md, err := c.metadata(balanceTopic)
	if err != nil || len(md.Topics) != 1 || len(md.Topics[0].Partitions) != balancePartitions {
		return false
	}
	for _, p := range md.Topics[0].Partitions {
		if p.Leader != p.Replicas[0] || len(p.Isr) != 3 {
			return false
		}
	}
	return true
}

// restartABroker stops a broker other than the controller, waits until
// others lead all its partitions and starts it again; it returns the
// broker's id.
func (c *testCluster) restartABroker() int32 {
	c.t.Helper()
	victim := int32(1)
	if c.controller() == victim {
		victim = 2
	}
	c.restartBroker(victim)
	return victim
}

// restartBroker stops broker victim, waits until others lead all its
// partitions and starts it again.
func (c *testCluster) restartBroker(victim int32) {
	c.t.Helper()
	c.brokers[victim].stop()
	c.waitFor(fmt.Sprintf("no partition led by stopped broker %d", victim), time.Minute, func() bool {
		md, err := c.metadata(balanceTopic)
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
	c.brokers[victim].start()
}

// After a rolling restart of every broker (the controller too), the
// controller gives each broker back the leadership of the partitions it is
// the preferred replica of, once it is in their ISRs again; records
// produced with acks=all before, during and after stay readable.
func TestPreferredLeadersReturnAfterARollingRestart(t *testing.T) {
	c := startCluster(t, 3, "--leader-imbalance-check-interval", "1s")
	c.createTopic(balanceTopic, balancePartitions, 3, nil)
	c.waitFor("every partition led by its preferred replica", 30*time.Second, c.balanced)

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
			if _, _, err := p.ProduceSync(ctx, &client.Record{Topic: balanceTopic, Partition: int32(i % balancePartitions), Value: []byte(fmt.Sprint(i))}); err != nil {
				t.Fatalf("record %d: %v", i, err)
			}
		}
	}
	produce(0)
	produced := 120
	for _, id := range c.ids() {
		c.restartBroker(id)
		produce(produced) // with one broker restarted, before it is back in sync
		produced += 120
		c.waitFor(fmt.Sprintf("broker %d back in every ISR", id), 90*time.Second, func() bool {
			md, err := c.metadata(balanceTopic)
			if err != nil || len(md.Topics) != 1 {
				return false
			}
			for _, p := range md.Topics[0].Partitions {
				if len(p.Isr) != 3 {
					return false
				}
			}
			return true
		})
	}
	c.waitFor("every broker leading its preferred partitions again", 90*time.Second, c.balanced)
	produce(produced)
	produced += 120

	total := 0
	for part := int32(0); part < balancePartitions; part++ {
		total += len(c.consumeAll(balanceTopic, part))
	}
	if total != produced {
		t.Fatalf("read %d records back, want the %d acknowledged", total, produced)
	}
}

// restartABrokerAndWait is restartABroker, then waits until the broker is
// in every ISR again, and checks that it did not get its partitions back
// by itself.
func (c *testCluster) restartABrokerAndWait() {
	c.t.Helper()
	victim := c.restartABroker()
	c.waitFor(fmt.Sprintf("broker %d in every ISR again", victim), 90*time.Second, func() bool {
		md, err := c.metadata(balanceTopic)
		if err != nil || len(md.Topics) != 1 {
			return false
		}
		for _, p := range md.Topics[0].Partitions {
			if len(p.Isr) != 3 {
				return false
			}
		}
		return true
	})
	if c.balanced() {
		c.t.Fatalf("broker %d leads its preferred partitions again without an election", victim)
	}
}

// Preferred leader elections on demand: through the Kafka door (franz-go's
// kadm) and with sluice topic elect-leaders, which says what it did to
// each partition and fails on a partition that does not exist.
func TestElectLeadersOnDemand(t *testing.T) {
	c := startCluster(t, 3, "--auto-leader-rebalance=false", "--kafka-addr", "127.0.0.1:0")
	c.createTopic(balanceTopic, balancePartitions, 3, nil)
	c.waitFor("every partition led by its preferred replica", 30*time.Second, c.balanced)

	c.restartABrokerAndWait()
	adm := kadm.NewClient(newKgo(t, strings.Join(kafkaSeeds(t, c), ",")))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, kadm.TopicsSet{balanceTopic: {}})
	if err != nil {
		t.Fatal(err)
	}
	elected := 0
	for _, r := range res[balanceTopic] {
		switch {
		case r.Err == nil:
			elected++
		case !errors.Is(r.Err, kerr.ElectionNotNeeded):
			t.Fatalf("partition %d: %v", r.Partition, r.Err)
		}
	}
	if elected == 0 || len(res[balanceTopic]) != balancePartitions {
		t.Fatalf("after a preferred election through the Kafka door (%d elected): %+v", elected, res)
	}
	// The answer comes once the controller recorded the new leaders; the
	// brokers' metadata shows them a moment later.
	c.waitFor("every partition led by its preferred replica after the election", 10*time.Second, c.balanced)

	c.restartABrokerAndWait()

	b := c.brokers[3] // never the one restarted
	out := b.cli("", "topic", "elect-leaders", balanceTopic)
	elected = strings.Count(out, "elected its preferred replica")
	if elected == 0 || elected+strings.Count(out, "its preferred replica leads already") != balancePartitions {
		t.Fatalf("elect-leaders said:\n%s", out)
	}
	if !c.balanced() {
		t.Fatalf("after elect-leaders answered, not every partition is led by its preferred replica:\n%s", out)
	}
	if out := b.cli("", "topic", "elect-leaders", balanceTopic+":0"); !strings.Contains(out, balanceTopic+" 0: its preferred replica leads already") {
		t.Fatalf("a second election of partition 0 said:\n%s", out)
	}

	stdout, stderr, code := runCLI(t, "", "topic", "elect-leaders", "missing", balanceTopic+":99", "--broker", b.Addr)
	if code == 0 || !strings.Contains(stdout, "missing: UNKNOWN_TOPIC_OR_PARTITION") ||
		!strings.Contains(stdout, balanceTopic+" 99: UNKNOWN_TOPIC_OR_PARTITION") || !strings.Contains(stderr, "2 of 2 partitions") {
		t.Fatalf("electing unknown partitions: exit %d\n%s%s", code, stdout, stderr)
	}
}

// Brokers started with --rack say where they run (cluster info, the Kafka
// door's metadata), and a new topic's replicas go to different racks.
func TestRackAwarePlacement(t *testing.T) {
	racks := map[int32]string{1: "zone-a", 2: "zone-a", 3: "zone-b", 4: "zone-b"}
	testBrokerArgs = func(id int32) []string { return []string{"--rack", racks[id]} }
	t.Cleanup(func() { testBrokerArgs = nil })
	c := startCluster(t, 4, "--kafka-addr", "127.0.0.1:0")
	const topic, partitions = "racked", 8
	c.createTopic(topic, partitions, 2, nil)
	md, err := c.metadata(topic)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range md.Topics[0].Partitions {
		if racks[p.Replicas[0]] == racks[p.Replicas[1]] {
			t.Fatalf("partition %d: replicas %v share rack %s", p.Partition, p.Replicas, racks[p.Replicas[0]])
		}
	}

	out := c.brokers[1].cli("", "cluster", "info", "--format", "json")
	info := decodeLines[clusterJSON](t, out)[0]
	for _, b := range info.Brokers {
		if b.Rack != racks[b.ID] {
			t.Fatalf("cluster info: broker %d in rack %q, want %q", b.ID, b.Rack, racks[b.ID])
		}
	}
	adm := kadm.NewClient(newKgo(t, strings.Join(kafkaSeeds(t, c), ",")))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	kmd, err := adm.BrokerMetadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range kmd.Brokers {
		if b.Rack == nil || *b.Rack != racks[b.NodeID] {
			t.Fatalf("Kafka metadata: broker %d in rack %v, want %q", b.NodeID, b.Rack, racks[b.NodeID])
		}
	}
}
