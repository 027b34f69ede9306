package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/sluicemq/sluice/client"
	"github.com/sluicemq/sluice/cluster/consultest"
)

// splitNet puts each broker in a network namespace of its own with two
// links: one to a bridge the brokers (and this test's clients) talk over,
// one to a bridge where Consul listens. Taking a broker's first link down
// cuts it off from the other brokers and the clients but not from Consul.
type splitNet struct {
	t                      *testing.T
	n                      int
	ns                     map[int32]string
	brokerHost, storeHost  string // this side's addresses on the two bridges
	brokerBridge, storeBr  string
	brokerNet, storeSubnet string
}

func (s *splitNet) ip(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return nil
}

// newSplitNet builds the namespaces of brokers 1..count, or skips the test
// where this process may not (no root, no ip(8)); all of it is removed
// when the test ends.
func newSplitNet(t *testing.T, count int) *splitNet {
	t.Helper()
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("no ip(8) to create network namespaces")
	}
	n := rand.IntN(200) + 20
	s := &splitNet{t: t, n: n, ns: map[int32]string{},
		brokerBridge: fmt.Sprintf("slb%db", n), storeBr: fmt.Sprintf("slb%ds", n),
		brokerNet: fmt.Sprintf("10.215.%d", n), storeSubnet: fmt.Sprintf("10.216.%d", n)}
	s.brokerHost, s.storeHost = s.brokerNet+".1", s.storeSubnet+".1"
	if err := s.ip("link", "add", s.brokerBridge, "type", "bridge"); err != nil {
		t.Skipf("cannot create a bridge here: %v", err)
	}
	t.Cleanup(func() {
		for _, ns := range s.ns {
			_ = s.ip("netns", "del", ns)
		}
		_ = s.ip("link", "del", s.brokerBridge)
		_ = s.ip("link", "del", s.storeBr)
	})
	steps := [][]string{
		{"link", "add", s.storeBr, "type", "bridge"},
		{"addr", "add", s.brokerHost + "/24", "dev", s.brokerBridge},
		{"addr", "add", s.storeHost + "/24", "dev", s.storeBr},
		{"link", "set", s.brokerBridge, "up"},
		{"link", "set", s.storeBr, "up"},
	}
	for id := 1; id <= count; id++ {
		ns := fmt.Sprintf("sluice-split-%d-%d-%d", os.Getpid(), n, id)
		s.ns[int32(id)] = ns
		hb, hs := fmt.Sprintf("sl%di%db", n, id), fmt.Sprintf("sl%di%ds", n, id)
		steps = append(steps,
			[]string{"netns", "add", ns},
			[]string{"-n", ns, "link", "set", "lo", "up"},
			[]string{"link", "add", hb, "type", "veth", "peer", "name", "eb", "netns", ns},
			[]string{"link", "add", hs, "type", "veth", "peer", "name", "es", "netns", ns},
			[]string{"link", "set", hb, "master", s.brokerBridge, "up"},
			[]string{"link", "set", hs, "master", s.storeBr, "up"},
			[]string{"-n", ns, "addr", "add", fmt.Sprintf("%s.%d/24", s.brokerNet, 10+id), "dev", "eb"},
			[]string{"-n", ns, "addr", "add", fmt.Sprintf("%s.%d/24", s.storeSubnet, 10+id), "dev", "es"},
			[]string{"-n", ns, "link", "set", "eb", "up"},
			[]string{"-n", ns, "link", "set", "es", "up"},
		)
	}
	for _, args := range steps {
		if err := s.ip(args...); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// brokerAddr is broker id's address on the brokers' bridge.
func (s *splitNet) brokerAddr(id int32) string { return fmt.Sprintf("%s.%d:9470", s.brokerNet, 10+id) }

// cut takes broker id off the brokers' bridge; heal puts it back.
func (s *splitNet) cut(id int32) {
	if err := s.ip("-n", s.ns[id], "link", "set", "eb", "down"); err != nil {
		s.t.Fatal(err)
	}
}

func (s *splitNet) heal(id int32) {
	if err := s.ip("-n", s.ns[id], "link", "set", "eb", "up"); err != nil {
		s.t.Fatal(err)
	}
}

// startSplitCluster runs Consul here and brokers 1..3 in their namespaces.
func startSplitCluster(t *testing.T, net *splitNet, extra ...string) *testCluster {
	t.Helper()
	c := &testCluster{t: t, consul: consultest.StartWith(t, consultest.Options{ClientAddrs: []string{net.storeHost}}),
		brokers: map[int32]*brokerProc{}, name: fmt.Sprintf("t%d-%d", os.Getpid(), clusterSeq.Add(1)), extra: extra}
	for id := int32(1); id <= int32(len(net.ns)); id++ {
		c.brokers[id] = startBrokerAt(t, &brokerProc{t: t, Addr: net.brokerAddr(id), netns: net.ns[id]},
			append([]string{"--consul", c.consul.AddrOn(net.storeHost), "--cluster", c.name, "--id", fmt.Sprint(id),
				"--check-ttl", checkTTL}, extra...)...)
	}
	var err error
	if c.admin, err = client.NewAdmin(c.seeds(), sharedOpts(), client.RequestTimeout(5*time.Second)); err != nil {
		t.Fatal(err)
	}
	c.waitFor("every broker registered", time.Minute, func() bool {
		md, err := c.metadata()
		return err == nil && len(md.Brokers) == len(net.ns) && md.ControllerId > 0
	})
	return c
}

// The controller's broker is cut off from the other two brokers but not
// from Consul. It gives up the controller's lock, one of the two others
// takes it and takes the cut-off broker out of leadership and the ISRs,
// and every partition takes acks=all writes again on the majority side
// within seconds, not for as long as the split lasts. Healed, the cut-off
// broker rejoins every ISR and nothing acknowledged is lost.
func TestControllerCutOffFromTheBrokersStepsDown(t *testing.T) {
	net := newSplitNet(t, 3)
	// The session timeout below the replica lag time: the controller
	// steps down before its partitions' leaders could shrink their ISRs
	// to themselves.
	c := startSplitCluster(t, net, "--broker-session-timeout", "2s", "--replica-lag-time-max", "6s")
	const topic = "split"
	c.createTopic(topic, 3, 3, nil)
	c.waitFullyReplicated(topic, time.Minute)
	ctl := c.controller()
	var majority []string
	for _, id := range c.ids() {
		if id != ctl {
			majority = append(majority, c.brokers[id].Addr)
		}
	}
	prod, err := client.NewProducer(strings.Join(majority, ","), sharedOpts(), client.Acks(client.AllAcks),
		client.WithPartitioner(client.ManualPartitioner()), client.RequestTimeout(2*time.Second),
		client.RetryBackoff(100*time.Millisecond), client.DeliveryTimeout(90*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	produce := func(p int32, v string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		if _, _, err := prod.ProduceSync(ctx, &client.Record{Topic: topic, Partition: p, Value: []byte(v)}); err != nil {
			t.Fatalf("partition %d: %v", p, err)
		}
	}
	for p := int32(0); p < 3; p++ {
		produce(p, "before")
	}

	split := time.Now()
	net.cut(ctl)
	healed := false
	defer func() {
		if !healed {
			net.heal(ctl)
		}
	}()
	for p := int32(0); p < 3; p++ {
		produce(p, "during")
		t.Logf("partition %d took acks=all again %v after the split", p, time.Since(split).Round(time.Millisecond))
	}
	// Within seconds: the session timeout (2 s here), the controller's
	// step-down and elections, with room for a slow machine; a split left
	// as it was would stall every partition for as long as it lasts.
	if took := time.Since(split); took > 25*time.Second {
		t.Fatalf("acks=all writes came back %v after the split", took)
	}
	if now := c.controller(); now == ctl || now <= 0 {
		t.Fatalf("controller %d after the split (was %d)", now, ctl)
	}

	net.heal(ctl)
	healed = true
	c.waitFullyReplicated(topic, 2*time.Minute)
	for p := int32(0); p < 3; p++ {
		produce(p, "after")
		if got := len(c.consumeAll(topic, p)); got != 3 {
			t.Fatalf("partition %d holds %d records, want the 3 acknowledged", p, got)
		}
	}
}
