package consul

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicemq/sluice/cluster"
	"github.com/sluicemq/sluice/cluster/consultest"
	"github.com/sluicemq/sluice/internal/testutil"
)

// One agent serves every test that does not stop or pause it; each test
// works under its own cluster name.
var shared struct {
	once  sync.Once
	agent *consultest.Agent
	err   error
}

func sharedAgent(t testing.TB) *consultest.Agent {
	t.Helper()
	shared.once.Do(func() { shared.agent, shared.err = consultest.New(consultest.Options{}) })
	if shared.err != nil {
		t.Fatalf("consultest: %v", shared.err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("shared consul agent log:\n%s", shared.agent.LogTail(100))
		}
	})
	return shared.agent
}

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(runChild())
	}
	code := m.Run()
	if shared.agent != nil {
		shared.agent.Close()
	}
	os.Exit(code)
}

// clusterName returns a cluster name no other test (or earlier run) uses.
func clusterName(t testing.TB) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	name := regexp.MustCompile(`[^A-Za-z0-9_-]+`).ReplaceAllString(t.Name(), "-")
	return strings.Trim(name[max(0, len(name)-40):], "-") + "-" + hex.EncodeToString(b[:])
}

// logBuffer collects a backend's log lines, and echoes them to the test
// while it runs.
type logBuffer struct {
	mu   sync.Mutex
	t    testing.TB
	done bool
	buf  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Write(p)
	if !l.done {
		l.t.Log(strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

// count returns how many times s was logged.
func (l *logBuffer) count(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return bytes.Count(l.buf.Bytes(), []byte(s))
}

// openConsul opens a backend of cluster on agent, closed when t ends.
func openConsul(t testing.TB, agent *consultest.Agent, cluster string, checkTTL time.Duration) (*Backend, *logBuffer) {
	t.Helper()
	c, logs := openConsulWithoutID(t, agent, cluster, checkTTL)
	// As a broker's start does: the store's cluster id, which every
	// controller write checks.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.CreateClusterID(ctx); err != nil {
		t.Fatal(err)
	}
	return c, logs
}

// openConsulWithoutID is openConsul without reading (or creating) the
// store's cluster id: its controller writes are refused.
func openConsulWithoutID(t testing.TB, agent *consultest.Agent, cluster string, checkTTL time.Duration) (*Backend, *logBuffer) {
	t.Helper()
	logs := &logBuffer{t: t}
	// Registered first, so it runs last: no t.Log after the test ends.
	t.Cleanup(func() { logs.mu.Lock(); logs.done = true; logs.mu.Unlock() })
	c, err := Open(Config{Addr: agent.Addr(), Cluster: cluster, CheckTTL: checkTTL,
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Logf("close: %v", err)
		}
	})
	return c, logs
}

// register registers broker id on c.
func register(t testing.TB, c *Backend, id int32) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b, err := c.Register(ctx, cluster.Broker{ID: id, Addr: brokerAddr(id)})
	if err != nil {
		t.Fatal(err)
	}
	if b.Epoch <= 0 {
		t.Fatalf("broker %d registered with epoch %d", id, b.Epoch)
	}
}

// serviceOf is the agent service id of c's registration.
func (c *Backend) serviceOf() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.member.reg.ID
}

func brokerAddr(id int32) string { return fmt.Sprintf("127.0.0.1:%d", 9470+id) }

// campaign wins the controller lock on c or fails t.
func campaign(t testing.TB, c *Backend, id int32) *cluster.Leadership {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	lead, err := c.Campaign(ctx, id)
	if err != nil {
		t.Fatalf("campaign of broker %d: %v", id, err)
	}
	return lead
}

// crash stops every goroutine of c without telling Consul, as if the
// process had been killed: no deregistration, no session destroyed.
func (c *Backend) crash() {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.closeFn()
	c.mu.Lock()
	m := c.member
	c.mu.Unlock()
	if m != nil {
		<-m.done
	}
}

// waitBrokers watches until the live set is exactly want.
func waitBrokers(t testing.TB, m cluster.Membership, want []int32, timeout time.Duration) []cluster.Broker {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var index uint64
	var last []cluster.Broker
	for {
		brokers, next, err := m.WatchBrokers(ctx, index)
		if err != nil {
			if errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("live brokers are %v after %v, want ids %v", last, timeout, want)
			}
			t.Logf("watch brokers: %v", err)
			time.Sleep(100 * time.Millisecond)
			continue
		}
		index, last = next, brokers
		var ids []int32
		for _, b := range brokers {
			ids = append(ids, b.ID)
		}
		if slices.Equal(ids, want) {
			return brokers
		}
	}
}

// waitClosed fails t unless ch closes within timeout; it returns how long
// that took.
func waitClosed(t testing.TB, ch <-chan struct{}, timeout time.Duration, what string) time.Duration {
	t.Helper()
	start := time.Now()
	select {
	case <-ch:
		return time.Since(start)
	case <-time.After(timeout):
		t.Fatalf("%s: not after %v", what, timeout)
		return 0
	}
}

// waitFor polls cond until it holds, failing t after timeout.
func waitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	testutil.WaitFor(t, timeout, what, cond)
}
