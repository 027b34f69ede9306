package consul

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicemq/sluice/cluster"
)

// childEnv makes the test binary a broker process (see runChild).
const childEnv = "SLUICE_CLUSTER_TEST_CHILD"

// runChild is a broker process for TestConsulFailoverAfterKill: it
// registers, wins the controller lock, says "LEADER <epoch>" and waits to
// be killed (a minute at most, should the parent die first).
func runChild() int {
	id, _ := strconv.Atoi(os.Getenv("SLUICE_CHILD_BROKER"))
	c, err := Open(Config{Addr: os.Getenv("SLUICE_CHILD_ADDR"), Cluster: os.Getenv("SLUICE_CHILD_CLUSTER"),
		Logger: slog.New(slog.NewTextHandler(os.Stderr, nil))})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.Register(ctx, cluster.Broker{ID: int32(id), Addr: brokerAddr(int32(id))}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	lead, err := c.Campaign(ctx, int32(id))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Printf("LEADER %d\n", lead.Epoch)
	time.Sleep(time.Minute)
	return 0
}

// TestConsulFailoverAfterKill kills -9 the controller's process and
// measures how long the waiting broker takes to win the lock.
func TestConsulFailoverAfterKill(t *testing.T) {
	agent := sharedAgent(t)
	name := clusterName(t)
	child := exec.Command(os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), childEnv+"=1", "SLUICE_CHILD_BROKER=1",
		"SLUICE_CHILD_ADDR="+agent.Addr(), "SLUICE_CHILD_CLUSTER="+name)
	child.Stderr = &testWriter{t: t, prefix: "child: "}
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	t.Cleanup(func() { _ = child.Process.Kill(); <-exited })
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			default:
			}
		}
		_ = child.Wait()
		close(exited)
	}()
	var childEpoch int64
	select {
	case line := <-lines:
		if _, err := fmt.Sscanf(line, "LEADER %d", &childEpoch); err != nil {
			t.Fatalf("child said %q", line)
		}
	case <-exited:
		t.Fatal("child exited before winning")
	case <-time.After(30 * time.Second):
		t.Fatal("child did not win the lock")
	}

	b, _ := openConsul(t, agent, name, 0)
	register(t, b, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if id, _, ok, err := b.Controller(ctx); err != nil || !ok || id != 1 {
		t.Fatalf("Controller() = %d, %v, %v; want the child, 1", id, ok, err)
	}
	won := make(chan *cluster.Leadership, 1)
	go func() {
		lead, err := b.Campaign(ctx, 2)
		if err != nil {
			t.Error(err)
		}
		won <- lead
	}()
	// B waits on the held lock; its session exists once it does.
	waitFor(t, 10*time.Second, "broker 2 campaigning", func() bool {
		sessions, _, err := agent.Client().Session().List(nil)
		n := 0
		for _, s := range sessions {
			if strings.HasPrefix(s.Name, b.serviceName()+"-controller-") {
				n++
			}
		}
		return err == nil && n == 2
	})
	select {
	case <-won:
		t.Fatal("broker 2 won while the child held the lock")
	default:
	}

	killed := time.Now()
	if err := child.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	lead := <-won
	took := time.Since(killed)
	if lead == nil {
		t.FailNow()
	}
	// Consul frees the lock CheckTTL after the victim's last heartbeat, so
	// this is CheckTTL minus the time since then, plus a few milliseconds.
	t.Logf("failover after kill -9: broker 2 won %v after the kill (CheckTTL %v)", took.Round(time.Millisecond), DefaultCheckTTL)
	if limit := DefaultCheckTTL + 2*time.Second; took > limit {
		t.Errorf("failover took %v, want at most %v", took, limit)
	}
	if lead.Epoch <= childEpoch {
		t.Errorf("epoch %d after the child's %d", lead.Epoch, childEpoch)
	}
	if id, epoch, ok, err := b.Controller(ctx); err != nil || !ok || id != 2 || epoch != lead.Epoch {
		t.Fatalf("Controller() = %d, %d, %v, %v; want 2, %d", id, epoch, ok, err, lead.Epoch)
	}
}

// testWriter logs a child's output lines while the test runs.
type testWriter struct {
	t      testing.TB
	prefix string
}

func (w *testWriter) Write(p []byte) (int, error) {
	for _, line := range strings.Split(strings.TrimRight(string(p), "\n"), "\n") {
		w.t.Log(w.prefix + line)
	}
	return len(p), nil
}
