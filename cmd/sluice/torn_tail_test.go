package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/sluicemq/sluice/client"
	"github.com/sluicemq/sluice/storage"
)

// A power failure takes both replicas down, and the follower's last
// segment comes back without its tail, below the high watermark it had
// checkpointed (a disk that did not keep what it acknowledged). The
// follower comes back first: it says at ERROR how many records it lost,
// reports itself to the controller while it is listed in the ISR, and does
// not lead without them: the partition waits offline for the leader. Once the leader is back, the follower fetches
// the records again and rejoins the ISR. Every acknowledged record is on
// both replicas at the end.
func TestFaultTornFollowerNeverLeads(t *testing.T) {
	c := startCluster(t, 2)
	const topic, n = "torn", 3000
	c.createTopic(topic, 1, 2, nil)
	p, err := client.NewProducer(c.seeds(), sharedOpts(), client.Acks(client.AllAcks))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for i := 0; i < n; i++ {
		p.Produce(ctx, &client.Record{Topic: topic, Value: []byte(fmt.Sprintf("%04d %s", i, strings.Repeat("x", 100)))}, nil)
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	p.Close()
	c.waitFullyReplicated(topic, time.Minute)
	st := c.partitionState(topic, 0)
	leader := st.Leader
	follower := otherReplica(st, leader)
	fb := c.brokers[follower]
	checkpoint := filepath.Join(fb.Data, "topics", topic+"-0", "high-watermark")
	c.waitFor("the follower's HW checkpoint", time.Minute, func() bool {
		hw, ok, err := storage.ReadCheckpoint(checkpoint)
		return err == nil && ok && hw == n
	})
	fb.kill9()
	c.brokers[leader].kill9()
	segs, _ := filepath.Glob(filepath.Join(fb.Data, "topics", topic+"-0", "log", "0*"))
	sort.Strings(segs)
	if len(segs) == 0 {
		t.Fatal("no log segments")
	}
	last := segs[len(segs)-1]
	info, err := os.Stat(last)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(last, info.Size()/2); err != nil {
		t.Fatal(err)
	}
	fb.start()
	c.waitFor("the follower reporting its lost records", time.Minute, func() bool {
		return strings.Contains(fb.logs.String(), "the log lost records below its high watermark")
	})
	c.waitFor("the controller deciding without the dead leader", time.Minute, func() bool {
		pm := c.partitionState(topic, 0)
		return pm != nil && pm.Leader != leader
	})
	t.Logf("follower %d: %s", follower, strings.TrimSpace(grepLines(fb.logs.String(), "lost records below")))
	if pm := c.partitionState(topic, 0); pm == nil || pm.Leader == follower {
		t.Errorf("the follower that lost records leads: %v", pm)
	}
	for _, rs := range c.replicaStates(topic)[follower] {
		if rs.Leader {
			t.Errorf("the follower that lost records leads with LEO %d of %d", rs.LogEndOffset, n)
		}
	}
	c.brokers[leader].start()
	c.waitFor("the follower back in the ISR", 2*time.Minute, func() bool {
		pm := c.partitionState(topic, 0)
		return pm != nil && pm.Leader >= 0 && slices.Contains(pm.Isr, follower) && len(pm.Isr) == 2
	})
	c.waitFullyReplicated(topic, time.Minute)
	recs := c.consumeAll(topic, 0)
	if len(recs) != n {
		t.Fatalf("%d records after the repair, want %d", len(recs), n)
	}
	for i, r := range recs {
		if !strings.HasPrefix(string(r.Value), fmt.Sprintf("%04d ", i)) {
			t.Fatalf("offset %d holds %.10q", i, r.Value)
		}
	}
	for _, rs := range c.replicaStates(topic)[follower] {
		if rs.LogEndOffset != n {
			t.Fatalf("the follower's LEO is %d, want %d", rs.LogEndOffset, n)
		}
	}
}
