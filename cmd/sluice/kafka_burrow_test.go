package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Burrow, LinkedIn's consumer lag monitor (Debian's build), follows a
// group's commits by reading __consumer_offsets through the Kafka
// listener and computes its lag from the partitions' end offsets, as it
// does against Kafka; it keeps doing so beside a group of Kafka's consumer
// protocol, whose records it does not know. (Burrow keeps its own state in
// a ZooKeeper, which the test runs; it reads Kafka's group metadata values
// only up to version 2, older than what Kafka writes since 2.3, so it
// shows no owners.)
func TestBurrowComputesLag(t *testing.T) {
	burrow := needTool(t, "Burrow")
	zk := startZooKeeper(t)
	b := startBroker(t, "--kafka-addr", "127.0.0.1:0", "--group-consumer-heartbeat-interval", "200ms")
	addr := kafkaAddr(t, b)
	b.cli("", "topic", "create", "lagged", "--partitions", "2")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	producer := newKgo(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for i := range 100 {
		if err := producer.ProduceSync(ctx, &kgo.Record{Topic: "lagged", Partition: int32(i % 2), Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	adm := kadm.NewClient(newKgo(t, addr))
	commit := func(p0, p1 int64) {
		t.Helper()
		var o kadm.Offsets
		o.AddOffset("lagged", 0, p0, -1)
		o.AddOffset("lagged", 1, p1, -1)
		if err := adm.CommitAllOffsets(ctx, "burrowed", o); err != nil {
			t.Fatal(err)
		}
	}
	commit(20, 35) // lag 30 + 15
	// A consumer-protocol group writes its own kind of record beside.
	newKgo(t, addr, kgo.ConsumerGroup("modern"), kgo.ConsumeTopics("lagged"), kgo.ServerSideBalancer(),
		kgo.Balancers(kgo.RangeBalancer())).PollFetches(ctx)

	httpAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	dir := t.TempDir()
	config := fmt.Sprintf(`[general]
pidfile=%q
[logging]
level="info"
[zookeeper]
servers=[%q]
timeout=6
root-path="/burrow"
[client-profile.sluice]
client-id="burrow"
kafka-version="2.0.0"
[cluster.local]
class-name="kafka"
servers=[%q]
client-profile="sluice"
topic-refresh=2
offset-refresh=1
[consumer.local]
class-name="kafka"
cluster="local"
servers=[%q]
client-profile="sluice"
offsets-topic="__consumer_offsets"
start-latest=false
[httpserver.default]
address=%q
[storage.default]
class-name="inmemory"
workers=4
intervals=10
expire-group=604800
min-distance=1
`, filepath.Join(dir, "burrow.pid"), zk, addr, addr, httpAddr)
	if err := os.WriteFile(filepath.Join(dir, "burrow.toml"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	logs := &lockedBuffer{}
	cmd := exec.Command(burrow, "--config-dir", dir)
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("Burrow's log:\n%s", tail(logs.String(), 30))
		}
	})

	type lagStatus struct {
		Status struct {
			TotalLag   int64 `json:"totallag"`
			Partitions []struct {
				Topic      string `json:"topic"`
				Partition  int32  `json:"partition"`
				CurrentLag int64  `json:"current_lag"`
			} `json:"partitions"`
		} `json:"status"`
	}
	lagOf := func(want map[int32]int64) func() string {
		return func() string {
			resp, err := http.Get("http://" + httpAddr + "/v3/kafka/local/consumer/burrowed/lag")
			if err != nil {
				return err.Error()
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			var s lagStatus
			if err := json.Unmarshal(body, &s); err != nil || len(s.Status.Partitions) != 2 {
				return fmt.Sprintf("Burrow answered %s", body)
			}
			var total int64
			for _, p := range s.Status.Partitions {
				if p.Topic != "lagged" || p.CurrentLag != want[p.Partition] {
					return fmt.Sprintf("Burrow answered %s", body)
				}
				total += want[p.Partition]
			}
			if s.Status.TotalLag != total {
				return fmt.Sprintf("total lag %d, want %d", s.Status.TotalLag, total)
			}
			return ""
		}
	}
	eventually(t, 60*time.Second, lagOf(map[int32]int64{0: 30, 1: 15}))
	commit(50, 40) // Burrow follows new commits
	eventually(t, 60*time.Second, lagOf(map[int32]int64{0: 0, 1: 10}))
}

// startZooKeeper runs a standalone ZooKeeper (Debian's zookeeper package)
// on a free port of 127.0.0.1 and returns its address.
func startZooKeeper(t *testing.T) string {
	t.Helper()
	java := needTool(t, "java")
	const jar = "/usr/share/java/zookeeper.jar"
	if _, err := os.Stat(jar); err != nil {
		if os.Getenv("SLUICE_REQUIRE_TOOLS") != "" {
			t.Fatalf("zookeeper is not installed: %v", err)
		}
		t.Skipf("zookeeper is not installed: %v", err)
	}
	dir := t.TempDir()
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	_, port, _ := net.SplitHostPort(addr)
	config := fmt.Sprintf("tickTime=2000\ndataDir=%s\nclientPort=%s\nclientPortAddress=127.0.0.1\nadmin.enableServer=false\n",
		filepath.Join(dir, "data"), port)
	if err := os.WriteFile(filepath.Join(dir, "zoo.cfg"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	logs := &lockedBuffer{}
	cmd := exec.Command(java, "-Xmx256m", "-cp", jar, "org.apache.zookeeper.server.quorum.QuorumPeerMain", filepath.Join(dir, "zoo.cfg"))
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	eventually(t, 60*time.Second, func() string {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return fmt.Sprintf("ZooKeeper not listening: %v\n%s", err, tail(logs.String(), 10))
		}
		c.Close()
		return ""
	})
	return addr
}
