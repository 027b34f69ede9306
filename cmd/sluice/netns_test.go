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
)

// netns is a network namespace of the test's own, joined to this one by a
// veth pair: this side is hostIP, the namespace's side peerIP. From the
// host, 127.0.0.1 is the host's loopback, not the namespace's: a process
// in the namespace that listens there cannot be reached from the host, as
// a client behind NAT or in a container cannot be from a broker.
type netns struct {
	name           string
	hostIP, peerIP string
}

// newNetns creates the namespace, or skips the test where this process may
// not (no root, no ip(8)); it is removed when the test ends.
func newNetns(t *testing.T) *netns {
	t.Helper()
	ipBin, err := exec.LookPath("ip")
	if err != nil {
		t.Skip("no ip(8) to create a network namespace")
	}
	n := rand.IntN(200) + 20
	ns := &netns{name: fmt.Sprintf("sluice-t%d-%d", os.Getpid(), n), hostIP: fmt.Sprintf("10.213.%d.1", n), peerIP: fmt.Sprintf("10.213.%d.2", n)}
	hostIf, peerIf := fmt.Sprintf("slc%dh", n), fmt.Sprintf("slc%dp", n)
	run := func(args ...string) error {
		out, err := exec.Command(ipBin, args...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	if err := run("netns", "add", ns.name); err != nil {
		t.Skipf("cannot create a network namespace here: %v", err)
	}
	t.Cleanup(func() {
		_ = run("link", "del", hostIf)
		_ = run("netns", "del", ns.name)
	})
	for _, args := range [][]string{
		{"link", "add", hostIf, "type", "veth", "peer", "name", peerIf},
		{"link", "set", peerIf, "netns", ns.name},
		{"addr", "add", ns.hostIP + "/24", "dev", hostIf},
		{"link", "set", hostIf, "up"},
		{"-n", ns.name, "addr", "add", ns.peerIP + "/24", "dev", peerIf},
		{"-n", ns.name, "link", "set", peerIf, "up"},
		{"-n", ns.name, "link", "set", "lo", "up"},
	} {
		if err := run(args...); err != nil {
			t.Fatal(err)
		}
	}
	return ns
}

// cli runs a sluice command inside the namespace.
func (ns *netns) cli(t *testing.T, stdin string, args ...string) (string, string, int, time.Duration) {
	t.Helper()
	cmd := exec.Command("ip", append([]string{"netns", "exec", ns.name, cliBin}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut lockedBuffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	start := time.Now()
	err := cmd.Run()
	code := 0
	if err != nil {
		code = -1
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
	}
	return out.String(), errOut.String(), code, time.Since(start)
}

// netnsChildEnv carries, to the child test run inside the namespace, the
// broker's address and the mode ("sessions" or "dial-back").
const netnsChildEnv = "SLUICE_TEST_NETNS_CHILD"

// goClient runs TestGoClientFromAnotherNetworkChild inside the namespace.
func (ns *netns) goClient(t *testing.T, brokerAddr, mode string) (string, error) {
	t.Helper()
	cmd := exec.Command("ip", "netns", "exec", ns.name, os.Args[0], "-test.run=^TestGoClientFromAnotherNetworkChild$", "-test.v", "-test.timeout=3m")
	cmd.Env = append(os.Environ(), netnsChildEnv+"="+mode+","+brokerAddr, testBinEnv+"="+sluiceBin)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// startBrokerOn starts a broker that listens at addr only.
func startBrokerOn(t *testing.T, addr string) *brokerProc {
	b := &brokerProc{t: t, Data: t.TempDir(), Addr: addr, logs: &lockedBuffer{}}
	b.args = []string{"broker", "--data", b.Data, "--addr", addr, "--http", "127.0.0.1:0", "--group-initial-rebalance-delay", "100ms"}
	b.start()
	t.Cleanup(func() {
		b.kill()
		if t.Failed() {
			t.Logf("broker log:\n%s", tail(b.logs.String(), 40))
		}
	})
	return b
}

// A Go client in a network namespace the broker cannot connect into: over
// sessions, the default, admin, an idempotent producer, a consumer, a
// group member and a push subscriber all work; with Sessions(false) the
// first request fails in seconds, naming the address the broker cannot
// reach.
func TestGoClientFromAnotherNetwork(t *testing.T) {
	if os.Getenv(netnsChildEnv) != "" {
		t.Skip("in the child")
	}
	ns := newNetns(t)
	b := startBrokerOn(t, fmt.Sprintf("%s:%d", ns.hostIP, freePort(t)))
	for _, mode := range []string{"sessions", "dial-back"} {
		out, err := ns.goClient(t, b.Addr, mode)
		if err != nil || !strings.Contains(out, "--- PASS: TestGoClientFromAnotherNetworkChild") {
			t.Fatalf("%s: child test: %v\n%s", mode, err, out)
		}
	}
}

func TestGoClientFromAnotherNetworkChild(t *testing.T) {
	mode, addr, ok := strings.Cut(os.Getenv(netnsChildEnv), ",")
	if !ok {
		t.Skip("run by TestGoClientFromAnotherNetwork")
	}
	if mode == "sessions" {
		exerciseClient(t, addr, client.Options(), false)
		return
	}
	admin, err := client.NewAdmin(addr, client.Sessions(false))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err = admin.ListTopics(ctx)
	if err == nil || !strings.Contains(err.Error(), "which they cannot reach") || time.Since(start) > 30*time.Second {
		t.Fatalf("dial-back from behind: %v after %v", err, time.Since(start).Round(time.Millisecond))
	}
	t.Logf("dial-back from behind: %v after %v", err, time.Since(start).Round(time.Millisecond))
}

// The CLI in a network namespace the broker cannot connect into (its
// listener is the namespace's own 127.0.0.1): over sessions, the default,
// every command works; answers over connections the broker opens
// (--listen) fail in seconds, naming the address the broker cannot reach.
func TestCLIFromAnotherNetwork(t *testing.T) {
	ns := newNetns(t)
	// The broker listens on its side of the veth pair only.
	b := startBrokerOn(t, fmt.Sprintf("%s:%d", ns.hostIP, freePort(t)))
	broker := []string{"--broker", b.Addr}
	for _, c := range []struct {
		stdin string
		args  []string
		want  string
	}{
		{"", []string{"topic", "create", "far", "--partitions", "2"}, "created topic far"},
		{"a\nb\nc\n", []string{"produce", "far"}, ""},
		{"", []string{"consume", "far", "--from-beginning", "--max", "3"}, "a\n"},
		{"", []string{"consume", "far", "--group", "g", "--from-beginning", "--to-end"}, "b\n"},
		{"", []string{"group", "describe", "g"}, "far"},
		{"", []string{"topic", "list"}, "far"},
	} {
		out, errOut, code, took := ns.cli(t, c.stdin, append(c.args, broker...)...)
		if code != 0 || !strings.Contains(out, c.want) {
			t.Fatalf("%s: exit %d after %v, output %q\n%s", strings.Join(c.args, " "), code, took.Round(time.Millisecond), out, errOut)
		}
	}
	_, errOut, code, took := ns.cli(t, "", append([]string{"topic", "list", "--listen", "127.0.0.1:0"}, broker...)...)
	if code == 0 || !strings.Contains(errOut, "which they cannot reach") || took > 30*time.Second {
		t.Fatalf("dial-back from behind: exit %d after %v\n%s", code, took.Round(time.Millisecond), errOut)
	}
}
