package main

// Kafka clients other than kcat and franz-go: sarama, confluent-kafka for
// Python and kafkajs, each against a broker process.

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
)

// saramaHandler collects the values a sarama group member consumes and
// marks them consumed.
type saramaHandler struct {
	mu   sync.Mutex
	seen map[string]bool
}

func (h *saramaHandler) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (h *saramaHandler) Cleanup(sarama.ConsumerGroupSession) error { return nil }
func (h *saramaHandler) ConsumeClaim(s sarama.ConsumerGroupSession, c sarama.ConsumerGroupClaim) error {
	for m := range c.Messages() {
		h.mu.Lock()
		h.seen[string(m.Value)] = true
		h.mu.Unlock()
		s.MarkMessage(m, "")
	}
	return nil
}

func (h *saramaHandler) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.seen)
}

// sarama, at its default protocol version and at Kafka 0.11's, produces
// with acks=all and consumes in a group through the Kafka door.
func TestKafkaSarama(t *testing.T) {
	b := startBroker(t, "--kafka-addr", "127.0.0.1:0", "--group-initial-rebalance-delay", "100ms")
	addr := kafkaAddr(t, b)
	for _, v := range []struct {
		name    string
		version sarama.KafkaVersion
	}{{"default", sarama.NewConfig().Version}, {"0.11", sarama.V0_11_0_0}} {
		t.Run(v.name, func(t *testing.T) {
			topic := "sarama-" + v.name
			b.cli("", "topic", "create", topic, "--partitions", "2")
			cfg := sarama.NewConfig()
			cfg.Version = v.version
			cfg.Producer.RequiredAcks = sarama.WaitForAll
			cfg.Producer.Return.Successes = true
			cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
			prod, err := sarama.NewSyncProducer([]string{addr}, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer prod.Close()
			for i := 0; i < 40; i++ {
				if _, _, err := prod.SendMessage(&sarama.ProducerMessage{Topic: topic, Key: sarama.StringEncoder(fmt.Sprint(i)),
					Value: sarama.StringEncoder(fmt.Sprintf("v%d", i))}); err != nil {
					t.Fatalf("record %d: %v", i, err)
				}
			}
			group, err := sarama.NewConsumerGroup([]string{addr}, "sarama-"+v.name, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer group.Close()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			h := &saramaHandler{seen: map[string]bool{}}
			done := make(chan error, 1)
			go func() {
				for ctx.Err() == nil {
					if err := group.Consume(ctx, []string{topic}, h); err != nil {
						done <- err
						return
					}
				}
				done <- nil
			}()
			eventually(t, 50*time.Second, func() string {
				if n := h.count(); n < 40 {
					return fmt.Sprintf("%d of 40 records consumed", n)
				}
				return ""
			})
			cancel()
			if err := <-done; err != nil && ctx.Err() == nil {
				t.Fatal(err)
			}
			// The offsets as sarama finds them, and as it did before Kafka
			// 0.10.1's protocol (ListOffsets v0, which Burrow's sarama sends too).
			for _, old := range []sarama.KafkaVersion{v.version, sarama.V0_10_0_0} {
				cfg := sarama.NewConfig()
				cfg.Version = old
				cl, err := sarama.NewClient([]string{addr}, cfg)
				if err != nil {
					t.Fatal(err)
				}
				total := int64(0)
				for p := int32(0); p < 2; p++ {
					newest, err := cl.GetOffset(topic, p, sarama.OffsetNewest)
					oldest, err2 := cl.GetOffset(topic, p, sarama.OffsetOldest)
					if err != nil || err2 != nil || oldest != 0 {
						t.Fatalf("protocol of %s: partition %d: newest %d %v, oldest %d %v", old, p, newest, err, oldest, err2)
					}
					total += newest
				}
				cl.Close()
				if total != 40 {
					t.Fatalf("protocol of %s: the newest offsets add up to %d, want 40", old, total)
				}
			}
		})
	}
}

// confluent-kafka for Python (Debian's, on librdkafka) runs its admin
// (topics created with Kafka's default configs set explicitly, topic and
// broker configs described and altered, a static broker setting refused),
// idempotent lz4 producer, group consumer, commits and group listing
// against the Kafka door.
func TestKafkaConfluentPython(t *testing.T) {
	// Debian's interpreter, which the Debian package is installed for.
	python := "/usr/bin/python3"
	if err := exec.Command(python, "-c", "import confluent_kafka").Run(); err != nil {
		if os.Getenv("SLUICE_REQUIRE_TOOLS") != "" {
			t.Fatalf("/usr/bin/python3 with python3-confluent-kafka is not installed: %v", err)
		}
		t.Skip("python3-confluent-kafka is not installed")
	}
	b := startBroker(t, "--kafka-addr", "127.0.0.1:0", "--group-initial-rebalance-delay", "100ms")
	cmd := exec.Command(python, filepath.Join("testdata", "kafka-clients", "confluent_kafka_check.py"), kafkaAddr(t, b))
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "OK") {
		t.Fatalf("%v\n%s", err, out)
	}
}

// kafkajs 2.2.4 (npm, with its committed lockfile; CI runs npm ci) runs a
// node --test script: create a topic, produce, consume in a group from the
// beginning, committed offsets, list and describe groups.
func TestKafkaJS(t *testing.T) {
	node := needTool(t, "node")
	dir := filepath.Join("testdata", "kafkajs")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "kafkajs")); err != nil {
		if os.Getenv("SLUICE_REQUIRE_TOOLS") != "" {
			t.Fatalf("kafkajs is not installed (npm ci in %s): %v", dir, err)
		}
		t.Skipf("kafkajs is not installed: run npm ci in %s", dir)
	}
	b := startBroker(t, "--kafka-addr", "127.0.0.1:0", "--group-initial-rebalance-delay", "100ms")
	cmd := exec.Command(node, "--test", "kafkajs_check.test.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "SLUICE_KAFKA="+kafkaAddr(t, b))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
}
