package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// natsServer returns the nats-server binary of version, building it from
// the Go module proxy in a scratch module on first use and caching it under
// cacheDir (no NATS code lives in this repository).
func natsServer(ctx context.Context, cacheDir, version string) (string, error) {
	bin := filepath.Join(cacheDir, "nats-server-"+version, "nats-server")
	if out, err := runCmd(ctx, "", nil, bin, "--version"); err == nil && strings.Contains(out, version) {
		return bin, nil
	}
	logf("building nats-server v%s from the Go module proxy into %s (once; about a minute)", version, filepath.Dir(bin))
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		return "", err
	}
	work, err := os.MkdirTemp("", "nats-server-build-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(work)
	files := map[string]string{
		"go.mod":   "module natsserverbuild\n\ngo 1.26\n",
		"tools.go": "//go:build tools\n\npackage tools\n\nimport _ \"github.com/nats-io/nats-server/v2\"\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(work, name), []byte(body), 0o644); err != nil {
			return "", err
		}
	}
	env := []string{"GOWORK=off", "GOFLAGS=-mod=mod"}
	steps := [][]string{
		{"go", "get", "github.com/nats-io/nats-server/v2@v" + version},
		{"go", "mod", "tidy"},
		{"go", "build", "-o", bin + ".tmp", "github.com/nats-io/nats-server/v2"},
	}
	for _, s := range steps {
		if _, err := runCmd(ctx, work, env, s[0], s[1:]...); err != nil {
			return "", err
		}
	}
	if err := os.Rename(bin+".tmp", bin); err != nil {
		return "", err
	}
	return bin, nil
}

// natsConfig is the server's configuration file. Every listener is on
// 127.0.0.1 (no monitoring, cluster, gateway or leaf ports are opened);
// JetStream keeps its file store in storeDir. syncAlways sets
// `sync_interval: always` (fsync after every write, durable like Sluice);
// otherwise the default applies: data goes to the page cache on every write
// and is fsync'd every 2 minutes.
func natsConfig(port int, storeDir string, syncAlways bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "server_name: sluice_bench\nlisten: \"127.0.0.1:%d\"\n", port)
	fmt.Fprintf(&b, "jetstream {\n  store_dir: %q\n  max_memory_store: 256MB\n", storeDir)
	if syncAlways {
		b.WriteString("  sync_interval: always\n")
	}
	b.WriteString("}\n")
	return b.String()
}

type natsDeployment struct {
	url      string
	procs    []*proc
	config   string // the first server's
	command  string
	replicas int // of the streams it gets
}

func startNATS(ctx context.Context, bin, dir string, syncAlways bool) (*natsDeployment, error) {
	ports, err := freePorts(1)
	if err != nil {
		return nil, err
	}
	conf := natsConfig(ports[0], filepath.Join(dir, "jetstream"), syncAlways)
	confPath := filepath.Join(dir, "nats.conf")
	if err := os.WriteFile(confPath, []byte(conf), 0o644); err != nil {
		return nil, err
	}
	p, err := startProc("nats-server", dir, bin, "-c", confPath)
	if err != nil {
		return nil, err
	}
	if err := p.waitLog(ctx, "Server is ready", 30*time.Second); err != nil {
		p.stop(10 * time.Second)
		return nil, err
	}
	return &natsDeployment{url: "nats://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0])), procs: []*proc{p},
		config: conf, command: "nats-server -c nats.conf", replicas: 1}, nil
}

// natsClusterConfig is the configuration of node i of a JetStream cluster
// of len(clientPorts) servers on 127.0.0.1: its client port, its route
// port, and routes to every node; each has its own store directory.
func natsClusterConfig(i int, clientPorts, routePorts []int, storeDir string, syncAlways bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "server_name: sluice_bench_%d\nlisten: \"127.0.0.1:%d\"\n", i+1, clientPorts[i])
	fmt.Fprintf(&b, "jetstream {\n  store_dir: %q\n  max_memory_store: 256MB\n", storeDir)
	if syncAlways {
		b.WriteString("  sync_interval: always\n")
	}
	b.WriteString("}\n")
	fmt.Fprintf(&b, "cluster {\n  name: sluice_bench\n  listen: \"127.0.0.1:%d\"\n  routes: [\n", routePorts[i])
	for _, port := range routePorts {
		fmt.Fprintf(&b, "    \"nats-route://127.0.0.1:%d\"\n", port)
	}
	b.WriteString("  ]\n}\n")
	return b.String()
}

// startNATSCluster starts a JetStream cluster of n servers and waits until
// it has a metadata leader (until then streams cannot be created).
func startNATSCluster(ctx context.Context, bin, dir string, n int, syncAlways bool) (*natsDeployment, error) {
	ports, err := freePorts(2 * n)
	if err != nil {
		return nil, err
	}
	clientPorts, routePorts := ports[:n], ports[n:]
	d := &natsDeployment{url: "nats://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(clientPorts[0])), replicas: n}
	stop := func() {
		for _, p := range d.procs {
			p.stop(10 * time.Second)
		}
	}
	var commands []string
	for i := range n {
		nodeDir := filepath.Join(dir, fmt.Sprintf("nats-%d", i+1))
		if err := os.MkdirAll(nodeDir, 0o755); err != nil {
			stop()
			return nil, err
		}
		conf := natsClusterConfig(i, clientPorts, routePorts, filepath.Join(nodeDir, "jetstream"), syncAlways)
		if i == 0 {
			d.config = conf
		}
		confPath := filepath.Join(nodeDir, "nats.conf")
		if err := os.WriteFile(confPath, []byte(conf), 0o644); err != nil {
			stop()
			return nil, err
		}
		p, err := startProc(fmt.Sprintf("nats-server-%d", i+1), nodeDir, bin, "-c", confPath)
		if err != nil {
			stop()
			return nil, err
		}
		d.procs = append(d.procs, p)
		commands = append(commands, fmt.Sprintf("nats-server -c nats-%d/nats.conf", i+1))
	}
	for _, p := range d.procs {
		if err := p.waitLog(ctx, "Server is ready", 30*time.Second); err != nil {
			stop()
			return nil, err
		}
	}
	if err := waitNATSMetaLeader(ctx, d.url); err != nil {
		stop()
		return nil, err
	}
	d.command = strings.Join(commands, "; ")
	return d, nil
}

// waitNATSMetaLeader waits until the cluster answers JetStream's account
// info, which needs a metadata leader.
func waitNATSMetaLeader(ctx context.Context, url string) error {
	nc, err := nats.Connect(url, nats.Name("sluice-bench-wait"))
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		actx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := js.AccountInfo(actx)
		cancel()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("the JetStream cluster elected no metadata leader: %w", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (d *natsDeployment) stop() {
	for _, p := range d.procs {
		p.stop(10 * time.Second)
	}
}

// natsTarget drives a JetStream server or cluster: one stream per topic,
// file storage, the deployment's replicas; the publisher is nats.go's JetStream PublishAsync.
type natsTarget struct {
	url      string
	replicas int
	nc       *nats.Conn
	js       jetstream.JetStream
}

func newNATSTarget(url string, replicas int) (*natsTarget, error) {
	nc, err := nats.Connect(url, nats.Name("sluice-bench-admin"))
	if err != nil {
		return nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, err
	}
	return &natsTarget{url: url, replicas: replicas, nc: nc, js: js}, nil
}

func (t *natsTarget) close() { t.nc.Close() }

func (t *natsTarget) createTopic(ctx context.Context, topic string) error {
	_, err := t.js.CreateStream(ctx, jetstream.StreamConfig{Name: topic, Subjects: []string{topic},
		Storage: jetstream.FileStorage, Replicas: t.replicas, Retention: jetstream.LimitsPolicy, Discard: jetstream.DiscardOld})
	return err
}

func (t *natsTarget) deleteTopic(ctx context.Context, topic string) error {
	return t.js.DeleteStream(ctx, topic)
}

type natsProducer struct {
	nc    *nats.Conn
	js    jetstream.JetStream
	topic string
	onAck func([]byte, error)
}

func (t *natsTarget) newProducer(ctx context.Context, topic string, window int, onAck func([]byte, error)) (producer, error) {
	nc, err := nats.Connect(t.url, nats.Name("sluice-bench-producer"))
	if err != nil {
		return nil, err
	}
	// The generator's window is the bound; the client's own cap on
	// outstanding async publishes is set to the same number, so it never
	// stalls first (it forgets a publish before calling the handlers).
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(window),
		jetstream.WithPublishAsyncAckHandler(func(_ jetstream.JetStream, m *nats.Msg, _ *jetstream.PubAck) { onAck(m.Data, nil) }),
		jetstream.WithPublishAsyncErrHandler(func(_ jetstream.JetStream, m *nats.Msg, err error) { onAck(m.Data, err) }))
	if err != nil {
		nc.Close()
		return nil, err
	}
	return &natsProducer{nc: nc, js: js, topic: topic, onAck: onAck}, nil
}

func (p *natsProducer) send(_ context.Context, v []byte) {
	if _, err := p.js.PublishAsync(p.topic, v); err != nil {
		p.onAck(v, err)
	}
}

func (p *natsProducer) flush(ctx context.Context) error {
	if err := p.nc.Flush(); err != nil {
		return err
	}
	select {
	case <-p.js.PublishAsyncComplete():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (p *natsProducer) close() { p.nc.Close() }

type natsConsumer struct {
	nc *nats.Conn
	cc jetstream.ConsumeContext
}

// newConsumer is an ordered consumer (ephemeral, no acks, flow-controlled
// pulls) from the stream's first message: like a Sluice consumer reading
// by offset.
func (t *natsTarget) newConsumer(ctx context.Context, topic string, onRecord func([]byte)) (consumer, error) {
	nc, err := nats.Connect(t.url, nats.Name("sluice-bench-consumer"))
	if err != nil {
		return nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, err
	}
	cons, err := js.OrderedConsumer(ctx, topic, jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverAllPolicy})
	if err != nil {
		nc.Close()
		return nil, err
	}
	cc, err := cons.Consume(func(m jetstream.Msg) { onRecord(m.Data()) })
	if err != nil {
		nc.Close()
		return nil, err
	}
	return &natsConsumer{nc: nc, cc: cc}, nil
}

func (c *natsConsumer) close() {
	c.cc.Stop()
	c.nc.Close()
}
