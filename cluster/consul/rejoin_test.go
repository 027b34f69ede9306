package consul

import (
	"context"
	"testing"
	"time"

	"github.com/sluicemq/sluice/cluster"
	"github.com/sluicemq/sluice/cluster/consultest"
)

// TestConsulRejoin takes Consul away under two brokers (frozen, restarted,
// restarted without its local state, dropping one registration) and checks
// they come back on their own, with the same backends, and can elect a
// controller again.
func TestConsulRejoin(t *testing.T) {
	agent := consultest.Start(t)
	name := clusterName(t)
	const ttl = 2 * time.Second
	a, alog := openConsul(t, agent, name, ttl)
	b, blog := openConsul(t, agent, name, ttl)
	register(t, a, 1)
	register(t, b, 2)
	waitBrokers(t, a, []int32{1, 2}, 10*time.Second)
	lead := campaign(t, a, 1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := createTopic(ctx, a, lead.Fence, "kept"); err != nil {
		t.Fatal(err)
	}
	rejoined := func(l *logBuffer) int { return l.count("broker rejoined Consul") }
	// settled: every time the broker dropped out it has rejoined.
	settled := func(l *logBuffer) bool { return l.count("broker lost its Consul registration") == rejoined(l) }

	// Frozen for longer than the check TTL: the controller steps down
	// while Consul cannot hear it, and both brokers rejoin afterwards.
	if err := agent.Pause(); err != nil {
		t.Fatal(err)
	}
	took := waitClosed(t, lead.Lost, ttl+3*time.Second, "controller stepping down while Consul is frozen")
	t.Logf("controller stepped down %v after Consul froze", took.Round(time.Millisecond))
	if err := agent.Resume(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 15*time.Second, "both brokers rejoining", func() bool { return rejoined(alog) > 0 && rejoined(blog) > 0 })
	waitBrokers(t, b, []int32{1, 2}, 15*time.Second)
	lead = campaign(t, a, 1)

	// Restarted with its data: the agent kept the registrations (the
	// keepalive need not notice at all), the KV data is there, and a new
	// controller can be elected.
	if err := agent.Restart(); err != nil {
		t.Fatal(err)
	}
	waitBrokers(t, b, []int32{1, 2}, 20*time.Second)
	snap, err := b.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := snap.Topics["kept"]; !ok {
		t.Fatalf("topics after the restart: %v", snap.Topics)
	}
	won := make(chan *cluster.Leadership, 1)
	go func() {
		l, err := b.Campaign(ctx, 2)
		if err != nil {
			t.Error(err)
		}
		won <- l
	}()
	_ = a.Resign(ctx) // the restart may have ended the term already
	start := time.Now()
	leadB := <-won
	if leadB == nil {
		t.FailNow()
	}
	t.Logf("broker 2 won %v after broker 1 resigned", time.Since(start).Round(time.Millisecond))
	if leadB.Epoch <= lead.Epoch {
		t.Fatalf("epoch %d after %d", leadB.Epoch, lead.Epoch)
	}

	// Restarted without its local state: the agent forgot both brokers. The
	// keepalives register them again (whether or not the agent synced their
	// absence to the catalog first, ending broker 2's session), and broker 1
	// can take over.
	waitFor(t, 10*time.Second, "both brokers joined", func() bool { return settled(alog) && settled(blog) })
	before1, before2 := rejoined(alog), rejoined(blog)
	if err := agent.RestartForgetting(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "both brokers re-registering", func() bool {
		return rejoined(alog) > before1 && rejoined(blog) > before2
	})
	waitBrokers(t, b, []int32{1, 2}, 10*time.Second)
	_ = b.Resign(ctx)
	lead = campaign(t, a, 1)
	if lead.Epoch <= leadB.Epoch {
		t.Fatalf("epoch %d after %d", lead.Epoch, leadB.Epoch)
	}

	// The agent drops broker 2 alone (as when it reaps a service that stayed
	// critical): its keepalive registers it again.
	waitFor(t, 10*time.Second, "broker 2 joined", func() bool { return settled(blog) })
	before2 = rejoined(blog)
	if err := agent.Client().Agent().ServiceDeregister(b.serviceOf()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "broker 2 re-registering", func() bool { return rejoined(blog) > before2 })
	waitBrokers(t, a, []int32{1, 2}, 10*time.Second)
}
