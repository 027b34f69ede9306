// Package consultest runs a real Consul agent for tests: a one-server
// cluster on free loopback ports with its own data directory.
//
//	agent := consultest.Start(t) // stopped on t.Cleanup
//	backend, err := consul.Open(consul.Config{Addr: agent.Addr(), Cluster: "t"})
//
// The agent is a persistent server (-server -bootstrap-expect 1 -data-dir),
// not -dev: a dev agent keeps everything in memory, so Restart would wipe
// the KV store and sessions, which is not what a real Consul restart does.
// It costs about a second more at start (a real Raft election).
//
// The binary is $SLUICE_CONSUL_BIN, else ~/.cache/sluice/consul-1.14.11/consul
// (built by .ci/install-consul.sh), else consul on the PATH. Without one,
// Start fails the test: it never skips.
package consultest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"
)

// Version is the Consul version the tests are written against.
const Version = "1.14.11"

// Agent is a running (or stopped) Consul agent.
type Agent struct {
	bin     string
	dir     string // the agent's data dir and log live here
	ownDir  bool   // dir was made by New and is removed by Close
	ports   ports
	logPath string
	// clientAddrs are the HTTP API's addresses beside 127.0.0.1.
	clientAddrs []string

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{} // closed when cmd has exited
	paused bool
}

type ports struct{ http, serfLAN, serfWAN, server int }

// Options configures New. The zero value is fine.
type Options struct {
	// Binary overrides the lookup of the consul binary.
	Binary string
	// Dir holds the data directory and the log; default a new temporary
	// directory, removed by Close.
	Dir string
	// ClientAddrs are more addresses the HTTP API listens on, beside
	// 127.0.0.1 (for processes in other network namespaces).
	ClientAddrs []string
}

// Start starts an agent for t, waits until it has a leader, and stops it
// when t ends; the agent's log is printed if t failed.
func Start(t testing.TB) *Agent {
	t.Helper()
	return StartWith(t, Options{})
}

// StartWith is Start with options (Dir is t's own).
func StartWith(t testing.TB, opts Options) *Agent {
	t.Helper()
	opts.Dir = t.TempDir()
	a, err := New(opts)
	if err != nil {
		t.Fatalf("consultest: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("consul agent log (%s):\n%s", a.logPath, a.LogTail(200))
		}
		a.Close()
	})
	return a
}

// New starts an agent without a testing.T (for TestMain, or a parent of
// test processes); call Close when done.
func New(opts Options) (*Agent, error) {
	bin := opts.Binary
	if bin == "" {
		var err error
		if bin, err = Binary(); err != nil {
			return nil, err
		}
	}
	a := &Agent{bin: bin, dir: opts.Dir, clientAddrs: opts.ClientAddrs}
	if a.dir == "" {
		dir, err := os.MkdirTemp("", "consultest-")
		if err != nil {
			return nil, err
		}
		a.dir, a.ownDir = dir, true
	}
	a.logPath = filepath.Join(a.dir, "consul.log")
	// Free ports can be taken between the probe and the agent's bind: try
	// a few sets.
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		if a.ports, err = freePorts(); err != nil {
			continue
		}
		if err = a.start(); err == nil {
			return a, nil
		}
		a.kill()
		_ = os.RemoveAll(filepath.Join(a.dir, "data"))
	}
	if a.ownDir {
		_ = os.RemoveAll(a.dir)
	}
	return nil, err
}

// Binary returns the consul binary to run, or an error saying how to get one.
func Binary() (string, error) {
	if p := os.Getenv("SLUICE_CONSUL_BIN"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("SLUICE_CONSUL_BIN=%s: %v", p, err)
		}
		return p, nil
	}
	if home, err := os.UserHomeDir(); err == nil {
		p := filepath.Join(home, ".cache", "sluice", "consul-"+Version, "consul")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	if p, err := exec.LookPath("consul"); err == nil {
		return p, nil
	}
	return "", errors.New("no consul binary: run .ci/install-consul.sh (it builds Consul " + Version +
		" into ~/.cache/sluice and prints its path) or set SLUICE_CONSUL_BIN to a consul binary")
}

// Addr is the agent's HTTP API address, host:port.
func (a *Agent) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(a.ports.http)) }

// AddrOn is the agent's HTTP API address on ip, one of Options.ClientAddrs.
func (a *Agent) AddrOn(ip string) string { return net.JoinHostPort(ip, strconv.Itoa(a.ports.http)) }

// Client returns a consul/api client of the agent.
func (a *Agent) Client() *api.Client {
	cfg := api.DefaultConfig()
	cfg.Address = a.Addr()
	c, err := api.NewClient(cfg)
	if err != nil {
		panic(err) // only fails on a bad TLS config, which we do not set
	}
	return c
}

func (a *Agent) args() []string {
	p := a.ports
	return []string{"agent", "-server", "-bootstrap-expect", "1",
		"-data-dir", filepath.Join(a.dir, "data"), "-node", fmt.Sprintf("consultest-%d", p.http),
		"-bind", "127.0.0.1", "-client", strings.Join(append([]string{"127.0.0.1"}, a.clientAddrs...), " "), "-disable-host-node-id",
		"-http-port", strconv.Itoa(p.http), "-server-port", strconv.Itoa(p.server),
		"-serf-lan-port", strconv.Itoa(p.serfLAN), "-serf-wan-port", strconv.Itoa(p.serfWAN),
		// Consul 1.14 servers listen on gRPC-TLS 8503 unless told not to,
		// which would clash between agents running side by side.
		"-dns-port", "-1", "-grpc-port", "-1", "-grpc-tls-port", "-1",
		"-hcl", "performance { raft_multiplier = 1 }",
		"-hcl", "disable_update_check = true",
		"-log-level", "debug",
	}
}

// start runs the agent and waits until it is ready.
func (a *Agent) start() error {
	logf, err := os.OpenFile(a.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close() // the child has its own descriptor
	fmt.Fprintf(logf, "==== consultest: %s %s\n", a.bin, strings.Join(a.args(), " "))
	cmd := exec.Command(a.bin, a.args()...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", a.bin, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	a.mu.Lock()
	a.cmd, a.exited, a.paused = cmd, exited, false
	a.mu.Unlock()
	if err := a.waitReady(30*time.Second, exited); err != nil {
		return fmt.Errorf("%w\nconsul log:\n%s", err, a.LogTail(60))
	}
	return nil
}

// waitReady polls until the agent has a Raft leader and its own node is
// in the catalog with a passing serfHealth (sessions need both).
func (a *Agent) waitReady(timeout time.Duration, exited <-chan struct{}) error {
	c := a.Client()
	node := fmt.Sprintf("consultest-%d", a.ports.http)
	deadline := time.Now().Add(timeout)
	for {
		select {
		case <-exited:
			return errors.New("consul agent exited during start")
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		q := (&api.QueryOptions{}).WithContext(ctx)
		leader, err := c.Status().LeaderWithQueryOptions(q)
		if err == nil && leader != "" {
			var checks api.HealthChecks
			checks, _, err = c.Health().Node(node, q)
			if err == nil && checks.AggregatedStatus() == api.HealthPassing && len(checks) > 0 {
				cancel()
				return nil
			}
		}
		cancel()
		if time.Now().After(deadline) {
			return fmt.Errorf("consul agent at %s not ready after %v (last error: %v)", a.Addr(), timeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Stop stops the agent (SIGTERM, SIGKILL after 10s); the data stays for
// Restart. Stopping a stopped agent does nothing.
func (a *Agent) Stop() {
	a.mu.Lock()
	cmd, exited, paused := a.cmd, a.exited, a.paused
	a.cmd, a.paused = nil, false
	a.mu.Unlock()
	if cmd == nil {
		return
	}
	if paused {
		_ = cmd.Process.Signal(syscall.SIGCONT)
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		<-exited
	}
}

// kill ends the agent at once (failed starts).
func (a *Agent) kill() {
	a.mu.Lock()
	cmd, exited := a.cmd, a.exited
	a.cmd = nil
	a.mu.Unlock()
	if cmd != nil {
		_ = cmd.Process.Kill()
		<-exited
	}
}

// Restart stops the agent and starts it again on the same ports with the
// same data, and waits until it is ready.
func (a *Agent) Restart() error {
	a.Stop()
	return a.start()
}

// RestartForgetting restarts the agent without the services and checks it
// registered (its local state, as an agent whose volume was lost comes
// back); the servers' data, such as KV and sessions, stays.
func (a *Agent) RestartForgetting() error {
	a.Stop()
	for _, d := range []string{"services", "checks"} {
		if err := os.RemoveAll(filepath.Join(a.dir, "data", d)); err != nil {
			return err
		}
	}
	return a.start()
}

// RestartEmpty stops the agent and starts it again on the same ports with
// no data at all, as a -dev agent (which keeps everything in memory) comes
// back from a restart, or a server whose disk was lost: no KV, no
// sessions, no services.
func (a *Agent) RestartEmpty() error {
	a.Stop()
	if err := os.RemoveAll(filepath.Join(a.dir, "data")); err != nil {
		return err
	}
	return a.start()
}

// Pause freezes the agent (SIGSTOP): connections hang as if the agent were
// unreachable, and its timers, such as TTL checks, stand still.
func (a *Agent) Pause() error { return a.signal(syscall.SIGSTOP, true) }

// Resume continues a paused agent (SIGCONT).
func (a *Agent) Resume() error { return a.signal(syscall.SIGCONT, false) }

func (a *Agent) signal(sig syscall.Signal, paused bool) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.cmd == nil {
		return errors.New("consul agent is not running")
	}
	if err := a.cmd.Process.Signal(sig); err != nil {
		return err
	}
	a.paused = paused
	return waitStopped(a.cmd.Process.Pid, paused)
}

// Close stops the agent and removes the directory New made.
func (a *Agent) Close() {
	a.Stop()
	if a.ownDir {
		_ = os.RemoveAll(a.dir)
	}
}

// LogTail returns the last n lines of the agent's log.
func (a *Agent) LogTail(n int) string {
	data, err := os.ReadFile(a.logPath)
	if err != nil {
		return err.Error()
	}
	lines := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// freePorts picks four loopback ports free for TCP and UDP (Serf uses both).
func freePorts() (ports, error) {
	var got []int
	var closers []func()
	defer func() {
		for _, c := range closers {
			c()
		}
	}()
	for len(got) < 4 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return ports{}, err
		}
		closers = append(closers, func() { l.Close() })
		port := l.Addr().(*net.TCPAddr).Port
		u, err := net.ListenPacket("udp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			continue
		}
		closers = append(closers, func() { u.Close() })
		got = append(got, port)
	}
	return ports{http: got[0], serfLAN: got[1], serfWAN: got[2], server: got[3]}, nil
}
