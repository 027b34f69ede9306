package main

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sluicemq/sluice/client"
)

// sluiceBuild is the broker binary under test and where it came from.
type sluiceBuild struct {
	bin     string
	rev     string // what was asked for: a git revision or "worktree"
	commit  string // full hash the binary was built from
	subject string // its commit message's first line
	dirty   string // work-tree changes the harness's own client code was compiled with
}

// buildSluice builds cmd/sluice from rev of the repository at root into
// dir/sluice. rev "worktree" builds the files as they are; any other value
// is exported with git archive first, so edits in progress elsewhere in
// the tree cannot break or skew the broker being measured.
func buildSluice(ctx context.Context, root, rev, dir string) (*sluiceBuild, error) {
	b := &sluiceBuild{bin: filepath.Join(dir, "sluice"), rev: rev}
	head := rev
	if rev == "worktree" {
		head = "HEAD"
	}
	out, err := runCmd(ctx, root, nil, "git", "log", "-1", "--format=%H %s", head)
	if err != nil {
		return nil, err
	}
	b.commit, b.subject, _ = strings.Cut(strings.TrimSpace(out), " ")
	if st, err := runCmd(ctx, root, nil, "git", "status", "--porcelain", "--untracked-files=all", "--", "client", "messages", "transport", "acl", "go.mod", "go.sum"); err == nil {
		b.dirty = strings.TrimSpace(st)
	}
	src := root
	if rev != "worktree" {
		src = filepath.Join(dir, "sluice-src")
		if err := gitExport(ctx, root, b.commit, src); err != nil {
			return nil, err
		}
	}
	if _, err := runCmd(ctx, src, []string{"GOWORK=off", "GOFLAGS=-mod=readonly"}, "go", "build", "-o", b.bin, "./cmd/sluice"); err != nil {
		return nil, fmt.Errorf("building sluice at %s: %w", rev, err)
	}
	return b, nil
}

// gitExport writes the tree of commit into dst (git archive | untar).
func gitExport(ctx context.Context, root, commit, dst string) error {
	cmd := exec.CommandContext(ctx, "git", "archive", "--format=tar", commit)
	cmd.Dir = root
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	tr := tar.NewReader(stdout)
	var extractErr error
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			extractErr = err
			break
		}
		name := filepath.Join(dst, filepath.FromSlash(h.Name))
		if !strings.HasPrefix(name, filepath.Clean(dst)+string(os.PathSeparator)) {
			continue
		}
		switch h.Typeflag {
		case tar.TypeDir:
			extractErr = os.MkdirAll(name, 0o755)
		case tar.TypeReg:
			if extractErr = os.MkdirAll(filepath.Dir(name), 0o755); extractErr == nil {
				var f *os.File
				if f, extractErr = os.OpenFile(name, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, os.FileMode(h.Mode)&0o777|0o600); extractErr == nil {
					_, extractErr = io.Copy(f, tr)
					f.Close()
				}
			}
		case tar.TypeSymlink:
			extractErr = os.Symlink(h.Linkname, name)
		}
		if extractErr != nil {
			break
		}
	}
	_, _ = io.Copy(io.Discard, stdout)
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("git archive %s: %w: %s", commit, err, stderr.String())
	}
	return extractErr
}

// sluiceOptions are the client settings of every Sluice producer.
type sluiceOptions struct {
	linger      time.Duration
	batchBytes  int
	maxInFlight int
	// security is given to every client (admin, producer, consumer):
	// client.TLS for the TLS suite's runs with TLS on, Sessions(false) for
	// the dial-back run.
	security []client.Opt
}

// sluiceCluster is a running Sluice deployment: one broker on its embedded
// metadata store, or Consul plus n brokers.
type sluiceCluster struct {
	addrs    []string
	procs    []*proc
	commands []string
}

func (c *sluiceCluster) stop() {
	for i := len(c.procs) - 1; i >= 0; i-- {
		c.procs[i].stop(15 * time.Second)
	}
}

// startSluiceSingle starts one broker with a fresh data directory.
func startSluiceSingle(ctx context.Context, bin, dir string) (*sluiceCluster, error) {
	return startSluiceSingleWith(ctx, bin, dir, nil)
}

// startSluiceSingleWith is startSluiceSingle with more broker flags (before
// extraBrokerFlags).
func startSluiceSingleWith(ctx context.Context, bin, dir string, flags []string) (*sluiceCluster, error) {
	ports, err := freePorts(1)
	if err != nil {
		return nil, err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0]))
	args := append([]string{"broker", "--data", filepath.Join(dir, "data"), "--addr", addr}, flags...)
	args = append(args, extraBrokerFlags...)
	c := &sluiceCluster{addrs: []string{addr}, commands: []string{"sluice " + strings.Join(args, " ")}}
	p, err := startProc("sluice-broker", dir, bin, args...)
	if err != nil {
		return nil, err
	}
	c.procs = append(c.procs, p)
	if err := p.waitLog(ctx, "sluice broker ready", 30*time.Second); err != nil {
		c.stop()
		return nil, err
	}
	return c, nil
}

// startSluiceCluster starts a Consul agent and n brokers on 127.0.0.1 as
// `sluice dev-cluster` does, on free ports (so a dev-cluster already
// running is left alone), each broker with its own fresh data directory.
func startSluiceCluster(ctx context.Context, bin, consulBin, dir string, n int) (*sluiceCluster, error) {
	cp, consulAddr, command, err := startConsul(ctx, consulBin, dir)
	if err != nil {
		return nil, err
	}
	c := &sluiceCluster{procs: []*proc{cp}, commands: []string{command}}
	if err := startSluiceBrokers(ctx, c, bin, consulAddr, "bench", dir, n); err != nil {
		c.stop()
		return nil, err
	}
	return c, nil
}

// startConsul starts a single-server Consul agent with its data in dir,
// on free ports, and waits until it has elected itself leader. It returns
// the process, its HTTP address and its command line.
func startConsul(ctx context.Context, consulBin, dir string) (*proc, string, string, error) {
	ports, err := freePorts(4)
	if err != nil {
		return nil, "", "", err
	}
	consulAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0]))
	cargs := []string{"agent", "-server", "-bootstrap-expect", "1", "-data-dir", filepath.Join(dir, "consul"),
		"-bind", "127.0.0.1", "-client", "127.0.0.1", "-http-port", strconv.Itoa(ports[0]),
		"-server-port", strconv.Itoa(ports[1]), "-serf-lan-port", strconv.Itoa(ports[2]), "-serf-wan-port", strconv.Itoa(ports[3]),
		"-dns-port", "-1", "-grpc-port", "-1", "-grpc-tls-port", "-1"}
	cp, err := startProc("consul", dir, consulBin, cargs...)
	if err != nil {
		return nil, "", "", err
	}
	if err := waitConsul(ctx, consulAddr, 60*time.Second); err != nil {
		cp.stop(15 * time.Second)
		return nil, "", "", fmt.Errorf("consul did not elect a leader (log tail:\n%s): %w", cp.tail(20), err)
	}
	return cp, consulAddr, "consul " + strings.Join(cargs, " "), nil
}

// startSluiceBrokers adds n brokers of cluster name to c, registered with
// the Consul agent at consulAddr, each with a fresh data directory in dir,
// and waits until every one is ready. On error c holds what was started.
func startSluiceBrokers(ctx context.Context, c *sluiceCluster, bin, consulAddr, name, dir string, n int) error {
	return startSluiceBrokersWith(ctx, c, bin, consulAddr, name, dir, n, nil)
}

// startSluiceBrokersWith is startSluiceBrokers with more flags for broker
// id (1..n) from flags, if not nil (before extraBrokerFlags).
func startSluiceBrokersWith(ctx context.Context, c *sluiceCluster, bin, consulAddr, name, dir string, n int, flags func(id int) []string) error {
	ports, err := freePorts(n)
	if err != nil {
		return err
	}
	var started []*proc
	for i := 1; i <= n; i++ {
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[i-1]))
		broker := fmt.Sprintf("broker-%d", i)
		args := []string{"broker", "--consul", consulAddr, "--cluster", name, "--id", strconv.Itoa(i),
			"--data", filepath.Join(dir, broker), "--addr", addr}
		if flags != nil {
			args = append(args, flags(i)...)
		}
		args = append(args, extraBrokerFlags...)
		c.commands = append(c.commands, "sluice "+strings.Join(args, " "))
		p, err := startProc("sluice-"+broker, dir, bin, args...)
		if err != nil {
			return err
		}
		c.procs = append(c.procs, p)
		c.addrs = append(c.addrs, addr)
		started = append(started, p)
	}
	for _, p := range started {
		if err := p.waitLog(ctx, "sluice broker ready", 60*time.Second); err != nil {
			return err
		}
	}
	return nil
}

// waitConsul waits until the agent at addr has elected a leader.
func waitConsul(ctx context.Context, addr string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		resp, err := http.Get("http://" + addr + "/v1/status/leader")
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 200 && len(body) > 2 {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return errors.New("no leader")
}

// findConsul returns the consul binary as `sluice dev-cluster` finds it.
func findConsul(flagValue string) (string, error) {
	candidates := []string{flagValue, os.Getenv("SLUICE_CONSUL_BIN")}
	if home, err := os.UserHomeDir(); err == nil {
		cache := os.Getenv("SLUICE_CACHE")
		if cache == "" {
			cache = filepath.Join(home, ".cache", "sluice")
		}
		candidates = append(candidates, filepath.Join(cache, "consul-1.14.11", "consul"))
	}
	for _, c := range candidates {
		if c == "" {
			continue
		}
		if _, err := os.Stat(c); err == nil {
			return c, nil
		}
	}
	if p, err := exec.LookPath("consul"); err == nil {
		return p, nil
	}
	return "", errors.New("no consul binary: pass -consul-bin, set SLUICE_CONSUL_BIN, or run .ci/install-consul.sh")
}

// sluiceTarget drives a Sluice cluster through the Go client.
type sluiceTarget struct {
	brokers string
	acks    client.AckLevel
	rf      int32
	configs map[string]string
	opts    sluiceOptions
	logger  *slog.Logger
	admin   *client.Admin
}

func newSluiceTarget(addrs []string, acks client.AckLevel, rf int32, configs map[string]string, opts sluiceOptions) (*sluiceTarget, error) {
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	t := &sluiceTarget{brokers: strings.Join(addrs, ","), acks: acks, rf: rf, configs: configs, opts: opts, logger: logger}
	a, err := client.NewAdmin(t.brokers, client.WithLogger(logger), client.Options(opts.security...))
	if err != nil {
		return nil, err
	}
	t.admin = a
	return t, nil
}

func (t *sluiceTarget) close() { t.admin.Close() }

func (t *sluiceTarget) createTopic(ctx context.Context, topic string) error {
	cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	for {
		err := t.admin.CreateTopic(cctx, client.TopicSpec{Name: topic, Partitions: 1, ReplicationFactor: t.rf, Configs: t.configs})
		if err == nil || errors.Is(err, client.ErrTopicAlreadyExists) {
			break
		}
		if cctx.Err() != nil {
			return fmt.Errorf("create topic %s: %w", topic, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	// Writable: a leader, and every replica in the ISR, so acks=all runs
	// with the full ISR from its first record.
	for {
		info, err := t.admin.DescribeTopic(cctx, topic)
		if err == nil && len(info.Partitions) == 1 {
			p := info.Partitions[0]
			if p.Leader >= 0 && p.Err == nil && len(p.ISR) >= int(max(1, t.rf)) && p.HighWatermark >= 0 {
				return nil
			}
		}
		if cctx.Err() != nil {
			return fmt.Errorf("topic %s not ready (last: %+v, %v)", topic, info, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (t *sluiceTarget) deleteTopic(ctx context.Context, topic string) error {
	return t.admin.DeleteTopic(ctx, topic)
}

type sluiceProducer struct {
	p       *client.Producer
	topic   string
	promise client.Promise
}

func (t *sluiceTarget) newProducer(ctx context.Context, topic string, window int, onAck func([]byte, error)) (producer, error) {
	opts := []client.ProducerOpt{client.Acks(t.acks), client.Linger(t.opts.linger), client.BatchBytes(t.opts.batchBytes),
		client.MaxInFlight(t.opts.maxInFlight), client.WithLogger(t.logger), client.Options(t.opts.security...)}
	// The generator's window is the only bound: the client's byte buffer
	// (64 MiB by default) must hold a full window of the largest records.
	if need := int64(window) * 1200 * 2; need > 64<<20 {
		opts = append(opts, client.MaxBufferedBytes(need))
	}
	p, err := client.NewProducer(t.brokers, opts...)
	if err != nil {
		return nil, err
	}
	return &sluiceProducer{p: p, topic: topic, promise: func(r *client.Record, err error) { onAck(r.Value, err) }}, nil
}

func (p *sluiceProducer) send(ctx context.Context, v []byte) {
	p.p.Produce(ctx, &client.Record{Topic: p.topic, Value: v}, p.promise)
}

func (p *sluiceProducer) flush(ctx context.Context) error { return p.p.Flush(ctx) }
func (p *sluiceProducer) close()                          { _ = p.p.Close() }

type sluiceConsumer struct {
	c      *client.Consumer
	cancel context.CancelFunc
	done   chan struct{}
}

func (t *sluiceTarget) newConsumer(ctx context.Context, topic string, onRecord func([]byte)) (consumer, error) {
	c, err := client.NewConsumer(t.brokers, client.WithLogger(t.logger), client.Options(t.opts.security...),
		client.ConsumePartitions(map[string]map[int32]client.Offset{topic: {0: client.AtStart()}}))
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithCancel(ctx)
	sc := &sluiceConsumer{c: c, cancel: cancel, done: make(chan struct{})}
	var reported sync.Once
	go func() {
		defer close(sc.done)
		for cctx.Err() == nil {
			f := c.PollFetches(cctx)
			for _, e := range f.Errors {
				if cctx.Err() == nil && !errors.Is(e.Err, client.ErrClosed) {
					reported.Do(func() { logf("sluice consumer %s-%d: %v", e.Topic, e.Partition, e.Err) })
				}
			}
			for _, r := range f.Records {
				onRecord(r.Value)
			}
		}
	}()
	return sc, nil
}

func (c *sluiceConsumer) close() {
	c.cancel()
	<-c.done
	_ = c.c.Close()
}
