package consul

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/sluicemq/sluice/cluster"
	"github.com/sluicemq/sluice/cluster/storetest"
	"github.com/sluicemq/sluice/messages"
)

func TestConfigValidate(t *testing.T) {
	good := Config{Addr: "127.0.0.1:8500", Cluster: "prod-1"}
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		field string
		edit  func(*Config)
	}{
		{"Addr", func(c *Config) { c.Addr = "" }},
		{"Addr", func(c *Config) { c.Addr = "no-port" }},
		{"Cluster", func(c *Config) { c.Cluster = "" }},
		{"Cluster", func(c *Config) { c.Cluster = "a/b" }},
		{"CheckTTL", func(c *Config) { c.CheckTTL = 100 * time.Millisecond }},
		{"SessionTTL", func(c *Config) { c.SessionTTL = 5 * time.Second }},
	} {
		c := good
		tc.edit(&c)
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), "consul.Config."+tc.field) {
			t.Errorf("%+v: error %v, want one naming %s", c, err, tc.field)
		}
		if _, err := Open(c); err == nil {
			t.Errorf("Open(%+v) accepted it", c)
		}
	}
	if err := (Config{Addr: "https://consul:8501", Cluster: "x"}).Validate(); err != nil {
		t.Errorf("URL address: %v", err)
	}
}

func TestIndexMapGoesOnlyForward(t *testing.T) {
	var m indexMap
	wait, base := m.wait(0)
	first, regressed := m.observe(wait, base, 100)
	if regressed {
		t.Fatal("the first index counted as a regression")
	}
	wait, base = m.wait(first)
	if wait != 100 {
		t.Fatalf("waits on %d, want 100", wait)
	}
	// Consul was reset: it answers 7 to a query that waited on 100.
	reset, regressed := m.observe(wait, base, 7)
	if !regressed {
		t.Fatal("Consul's index going from 100 to 7 was not reported")
	}
	if reset <= first {
		t.Fatalf("index after reset %d, not above %d", reset, first)
	}
	if wait, _ = m.wait(reset); wait != 7 {
		t.Fatalf("after the reset waits on %d, want Consul's 7", wait)
	}
	// Consul still at 7 after a timeout: the same index, no change.
	wait, base = m.wait(reset)
	if got, regressed := m.observe(wait, base, 7); got != reset || regressed {
		t.Fatalf("no change gave index %d, want %d", got, reset)
	}
	// A caller with an index from before the reset gets news at once.
	if wait, _ = m.wait(first); wait != 0 {
		t.Fatalf("an index from before the reset waits on %d, want 0", wait)
	}
}

// A wiped store that climbed back to the very index a watcher waits on
// answers that index as if nothing had changed: the store's mark (its
// cluster id key's index) changing is what makes it news.
func TestIndexMapSeesAStoreReplacedAtTheSameIndex(t *testing.T) {
	var m indexMap
	// A new store: no cluster id key yet, then its first one.
	wait, base := m.wait(0)
	empty, _ := m.observeMarked(wait, base, 3, 0)
	wait, base = m.wait(empty)
	first, regressed := m.observeMarked(wait, base, 100, 5)
	if regressed || first <= empty {
		t.Fatalf("the store's first cluster id: index %d after %d, regressed %v; want a larger index, no regression", first, empty, regressed)
	}
	// The store is wiped and climbs back to 100: Consul answers 100 to a
	// query that waited on 100, without the key.
	wait, base = m.wait(first)
	wiped, regressed := m.observeMarked(wait, base, 100, 0)
	if !regressed || wiped <= first {
		t.Fatalf("a store without its key at the same index: index %d after %d, regressed %v; want a larger index, regressed", wiped, first, regressed)
	}
	// Still wiped after a timeout: no change, and the next query blocks.
	wait, base = m.wait(wiped)
	if got, regressed := m.observeMarked(wait, base, 100, 0); got != wiped || regressed {
		t.Fatalf("the wiped store unchanged: index %d (want %d), regressed %v", got, wiped, regressed)
	}
	if wait != 100 {
		t.Fatalf("waits on %d after the wipe, want 100", wait)
	}
	// Restored (the key at its old index) at the same index again.
	wait, base = m.wait(wiped)
	if got, _ := m.observeMarked(wait, base, 100, 5); got <= wiped {
		t.Fatalf("the restored store at the same index: index %d, not above %d", got, wiped)
	}
}

func TestConsulFencing(t *testing.T) {
	agent := sharedAgent(t)
	name := clusterName(t)
	a, _ := openConsul(t, agent, name, 0)
	b, _ := openConsul(t, agent, name, 0)
	register(t, a, 1)
	register(t, b, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	if err := createTopic(ctx, a, cluster.Fence{}, "nofence"); !errors.Is(err, cluster.ErrFenced) {
		t.Fatalf("write with the zero fence: %v, want an cluster.ErrFenced", err)
	}
	leadA := campaign(t, a, 1)
	if err := createTopic(ctx, a, leadA.Fence, "t"); err != nil {
		t.Fatal(err)
	}

	// A resigns, B takes over; A's fence is stale.
	bWon := make(chan *cluster.Leadership, 1)
	go func() {
		lead, err := b.Campaign(ctx, 2)
		if err != nil {
			t.Error(err)
		}
		bWon <- lead
	}()
	if err := a.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	waitClosed(t, leadA.Lost, time.Second, "Lost after Resign")
	leadB := <-bWon
	if leadB == nil {
		t.FailNow()
	}
	if leadB.Epoch <= leadA.Epoch {
		t.Fatalf("epoch %d after %d", leadB.Epoch, leadA.Epoch)
	}
	if id, epoch, ok, err := a.Controller(ctx); err != nil || !ok || id != 2 || epoch != leadB.Epoch {
		t.Fatalf("Controller() = %d, %d, %v, %v; want 2, %d", id, epoch, ok, err, leadB.Epoch)
	}
	snap, err := b.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	p0 := snap.PartitionsOf("t")[0]
	update := []cluster.PartitionUpdate{{State: p0.State, ExpectVersion: p0.Version}}
	// Fenced even where the write would also fail for its own reason.
	stale := map[string]error{
		"create existing": createTopic(ctx, a, leadA.Fence, "t"),
		"create":          createTopic(ctx, a, leadA.Fence, "u"),
		"delete":          a.DeleteTopic(ctx, leadA.Fence, "t"),
		"update":          a.UpdatePartitions(ctx, leadA.Fence, update),
		"allocate":        second(a.AllocateProducerIDs(ctx, leadA.Fence, 1, 0)),
		"security":        a.UpdateSecurity(ctx, leadA.Fence, &messages.SecurityRecord{}, 0),
		"stale security":  a.UpdateSecurity(ctx, leadA.Fence, &messages.SecurityRecord{}, 1<<40),
	}
	for what, err := range stale {
		if !errors.Is(err, cluster.ErrFenced) || errors.Is(err, cluster.ErrConflict) || errors.Is(err, cluster.ErrTopicExists) {
			t.Errorf("%s with the old fence: %v, want cluster.ErrFenced only", what, err)
		}
	}
	if err := b.UpdatePartitions(ctx, leadB.Fence, update); err != nil {
		t.Fatalf("update with the new fence: %v", err)
	}
	if err := b.UpdateSecurity(ctx, leadB.Fence, &messages.SecurityRecord{}, 0); err != nil {
		t.Fatalf("security write with the new fence: %v", err)
	}
	if err := createTopic(ctx, b, leadB.Fence, "u"); err != nil {
		t.Fatal(err)
	}

	// B's session is destroyed behind its back: B loses, A can win again.
	if _, err := agent.Client().Session().Destroy(leadB.Fence.Session, nil); err != nil {
		t.Fatal(err)
	}
	waitClosed(t, leadB.Lost, 5*time.Second, "Lost after the session was destroyed")
	if err := b.DeleteTopic(ctx, leadB.Fence, "u"); !errors.Is(err, cluster.ErrFenced) {
		t.Fatalf("write after losing the session: %v, want cluster.ErrFenced", err)
	}
	leadA2 := campaign(t, a, 1)
	if leadA2.Epoch <= leadB.Epoch {
		t.Fatalf("epoch %d after %d", leadA2.Epoch, leadB.Epoch)
	}
	if err := a.DeleteTopic(ctx, leadA2.Fence, "u"); err != nil {
		t.Fatal(err)
	}
}

// createTopic creates a two-partition topic on s.
func createTopic(ctx context.Context, s cluster.MetadataStore, f cluster.Fence, name string) error {
	topic, parts := storetest.Topic(name, 2)
	return s.CreateTopic(ctx, f, topic, parts)
}

func second[T any](_ T, err error) error { return err }

func TestConsulMembership(t *testing.T) {
	agent := sharedAgent(t)
	name := clusterName(t)
	const ttl = 2 * time.Second
	b1, _ := openConsul(t, agent, name, ttl)
	b2, _ := openConsul(t, agent, name, ttl)
	b3, _ := openConsul(t, agent, name, ttl)
	register(t, b1, 1)
	register(t, b2, 2)
	got := waitBrokers(t, b1, []int32{1, 2}, 10*time.Second)
	if got[0].Addr != brokerAddr(1) || got[1].Addr != brokerAddr(2) {
		t.Fatalf("brokers %v", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := b2.Deregister(ctx); err != nil {
		t.Fatal(err)
	}
	waitBrokers(t, b1, []int32{1}, 5*time.Second)

	// Broker 3 dies without deregistering: gone once its check's TTL passes.
	register(t, b3, 3)
	waitBrokers(t, b1, []int32{1, 3}, 10*time.Second)
	b3.crash()
	start := time.Now()
	waitBrokers(t, b1, []int32{1}, ttl+5*time.Second)
	t.Logf("a dead broker left the live set %v after its last chance to heartbeat (check TTL %v)", time.Since(start).Round(10*time.Millisecond), ttl)
}

func TestConsulCampaignHonoursContext(t *testing.T) {
	agent := sharedAgent(t)
	name := clusterName(t)
	a, _ := openConsul(t, agent, name, 0)
	b, _ := openConsul(t, agent, name, 0)
	if _, err := b.Campaign(context.Background(), 2); err == nil {
		t.Fatal("Campaign before Register succeeded")
	}
	register(t, a, 1)
	register(t, b, 2)
	campaign(t, a, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	if _, err := b.Campaign(ctx, 2); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("campaign against a held lock: %v, want the context's error", err)
	}
	// Closing the backend ends its blocked calls.
	done := make(chan error, 1)
	go func() {
		_, err := b.Campaign(context.Background(), 2)
		done <- err
	}()
	go func() {
		// Close itself changes the metadata (it releases broker 2's id
		// claim): watch until the call fails.
		snap, err := b.Load(context.Background())
		for err == nil {
			snap, err = b.Watch(context.Background(), snap.Index)
		}
		done <- err
	}()
	// Close once the campaign waits on the lock (its session exists); the
	// watch may or may not be blocked yet, ErrClosed either way.
	waitFor(t, 5*time.Second, "broker 2's campaign session", func() bool {
		sessions, _, err := agent.Client().Session().List(nil)
		return err == nil && slices.ContainsFunc(sessions, func(s *api.SessionEntry) bool {
			return s.Name == b.serviceName()+"-controller-2"
		})
	})
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		select {
		case err := <-done:
			if !errors.Is(err, cluster.ErrClosed) {
				t.Fatalf("blocked call after Close: %v, want cluster.ErrClosed", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("blocked call did not return after Close")
		}
	}
}

// TestConsulSessionIgnoresNode checks the session is tied to the broker's
// check only: deregistering broker 1 (same agent, same node as broker 2)
// frees the lock although the node is healthy.
func TestConsulSessionIgnoresNode(t *testing.T) {
	agent := sharedAgent(t)
	name := clusterName(t)
	a, _ := openConsul(t, agent, name, 0)
	register(t, a, 1)
	lead := campaign(t, a, 1)
	info, _, err := agent.Client().Session().Info(lead.Fence.Session, nil)
	if err != nil || info == nil {
		t.Fatalf("session info: %v, %v", info, err)
	}
	if len(info.NodeChecks) != 0 || len(info.ServiceChecks) != 1 || info.ServiceChecks[0] != (api.ServiceCheck{ID: "service:" + a.serviceOf()}) ||
		info.LockDelay != lockDelay || info.Behavior != api.SessionBehaviorRelease {
		t.Fatalf("session %+v", info)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.Deregister(ctx); err != nil {
		t.Fatal(err)
	}
	waitClosed(t, lead.Lost, 5*time.Second, "Lost after deregistering the controller")
	if _, _, ok, err := a.Controller(ctx); ok || err != nil {
		t.Fatalf("controller still held (%v, %v)", ok, err)
	}
}

// A second process registering a broker id that a live process holds is
// refused; once the holder is gone (killed: no deregistration) the id is
// free within about the check TTL, under a larger broker epoch.
func TestConsulBrokerIDClaim(t *testing.T) {
	agent := sharedAgent(t)
	name := clusterName(t)
	first, _ := openConsul(t, agent, name, time.Second)
	register(t, first, 1)
	epochs := waitBrokers(t, first, []int32{1}, 10*time.Second)
	second, _ := openConsul(t, agent, name, time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	_, err := second.Register(ctx, cluster.Broker{ID: 1, Addr: "127.0.0.1:1"})
	if !errors.Is(err, cluster.ErrBrokerIDInUse) || !strings.Contains(err.Error(), brokerAddr(1)) {
		t.Fatalf("second registration of broker 1: %v, want cluster.ErrBrokerIDInUse naming %s", err, brokerAddr(1))
	}
	t.Logf("refused after %v: %v", time.Since(start).Round(time.Millisecond), err)
	// The refused process left nothing behind: broker 1 is still the first.
	if got := waitBrokers(t, first, []int32{1}, 10*time.Second); got[0] != epochs[0] {
		t.Fatalf("broker 1 is %+v after the refused registration, was %+v", got[0], epochs[0])
	}
	first.crash()
	third, _ := openConsul(t, agent, name, time.Second)
	start = time.Now()
	b, err := third.Register(ctx, cluster.Broker{ID: 1, Addr: "127.0.0.1:2"})
	if err != nil {
		t.Fatalf("registration after the holder died: %v", err)
	}
	if b.Epoch <= epochs[0].Epoch {
		t.Fatalf("new broker epoch %d, not above %d", b.Epoch, epochs[0].Epoch)
	}
	t.Logf("claimed %v after the holder was killed", time.Since(start).Round(time.Millisecond))
	got := waitBrokers(t, third, []int32{1}, 10*time.Second)
	if got[0].Addr != "127.0.0.1:2" || got[0].Epoch != b.Epoch {
		t.Fatalf("live broker 1 is %+v, want the new process at epoch %d", got[0], b.Epoch)
	}
}

// A process whose id was taken over while its claim was gone (as when
// Consul invalidated the session of a process paused for longer than the
// check TTL) learns it through Evicted when it watches its claim again.
func TestConsulEvictedWhenReplaced(t *testing.T) {
	agent := sharedAgent(t)
	name := clusterName(t)
	old, _ := openConsul(t, agent, name, time.Second)
	register(t, old, 1)
	// Stop the old process's keepalive and claim.
	old.mu.Lock()
	m := old.member
	old.mu.Unlock()
	m.stop()
	<-m.done
	replacement, _ := openConsul(t, agent, name, time.Second)
	register(t, replacement, 1)
	// Resume: the old process watches its claim again.
	kctx, stop := context.WithCancel(old.closeCtx)
	t.Cleanup(stop)
	s, err := old.newSession(kctx, m, "broker")
	if err != nil {
		// Its check is critical: the session cannot even be made. The
		// claim watch must still see the id taken.
		s = &session{id: "gone", ctx: kctx, cancel: func() {}, done: make(chan struct{})}
		close(s.done)
	}
	go old.watchClaim(kctx, m, s)
	waitClosed(t, old.Evicted(), 10*time.Second, "Evicted of the replaced process")
	select {
	case <-replacement.Evicted():
		t.Fatal("the replacement was evicted")
	default:
	}
}

// When Consul drops the claim's session (a restarted agent invalidates it),
// the claim watch takes the id again under a new session: it logs the loss
// once, not at every attempt, and spaces its attempts instead of asking
// Consul as fast as it answers while the dead session is refused.
func TestConsulClaimLostIsTakenAgainCalmly(t *testing.T) {
	agent := sharedAgent(t)
	name := clusterName(t)
	c, logs := openConsul(t, agent, name, time.Second)
	register(t, c, 1)
	key := c.key(brokersPrefix + "1")
	kv, _, err := agent.Client().KV().Get(key, nil)
	if err != nil || kv == nil || kv.Session == "" {
		t.Fatalf("claim key %s: %v %v", key, kv, err)
	}
	first := kv.Session
	if _, err := agent.Client().Session().Destroy(first, nil); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		kv, _, err = agent.Client().KV().Get(key, nil)
		if err == nil && kv != nil && kv.Session != "" && kv.Session != first {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("claim not taken again: %v %v", kv, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if n := logs.count("broker id claim lost"); n != 1 {
		t.Errorf("the loss was logged %d times, want once", n)
	}
	// Each refused attempt doubles the pause (250 ms up to 5 s).
	if n := logs.count("broker id claim refused"); n > 10 {
		t.Errorf("%d refused attempts before the claim was taken again", n)
	}
	waitBrokers(t, c, []int32{1}, 10*time.Second)
}

// A controller writes nothing to a store that no longer holds the cluster
// id it started with: not after the key was removed, nor after a new
// cluster id took its place, nor from a process that never read one.
func TestConsulWritesNeedTheClusterID(t *testing.T) {
	agent := sharedAgent(t)
	name := clusterName(t)
	c, _ := openConsul(t, agent, name, time.Second)
	register(t, c, 1)
	lead := campaign(t, c, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := createTopic(ctx, c, lead.Fence, "before"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.AllocateProducerIDs(ctx, lead.Fence, 10, 0); err != nil {
		t.Fatal(err)
	}
	key := c.key(keyClusterID)
	if _, err := agent.Client().KV().Delete(key, nil); err != nil {
		t.Fatal(err)
	}
	refused := func(when string) {
		t.Helper()
		if err := createTopic(ctx, c, lead.Fence, "after"); !errors.Is(err, cluster.ErrClusterIDChanged) {
			t.Errorf("topic created %s: %v", when, err)
		}
		if first, err := c.AllocateProducerIDs(ctx, lead.Fence, 10, 0); !errors.Is(err, cluster.ErrClusterIDChanged) {
			t.Errorf("producer ids from %d allocated %s: %v", first, when, err)
		}
	}
	refused("after the cluster id was removed")
	if _, err := c.CreateClusterID(ctx); err != nil {
		t.Fatal(err)
	}
	refused("after another cluster id was created")
	fresh, _ := openConsulWithoutID(t, agent, clusterName(t)+"-fresh", time.Second)
	register(t, fresh, 1)
	freshLead := campaign(t, fresh, 1)
	if err := createTopic(ctx, fresh, freshLead.Fence, "t"); !errors.Is(err, cluster.ErrClusterIDChanged) {
		t.Errorf("a process that never read the cluster id wrote: %v", err)
	}
}
