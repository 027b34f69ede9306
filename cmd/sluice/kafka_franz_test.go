package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func newKgo(t *testing.T, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.RetryTimeout(20 * time.Second)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// franz-go's admin client manages topics through the Kafka door, and its
// idempotent producer and consumer move records through it unchanged.
func TestKafkaFranzGo(t *testing.T) {
	b := startBroker(t, "--kafka-addr", "127.0.0.1:0")
	addr := kafkaAddr(t, b)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	adm := kadm.NewClient(newKgo(t, addr))

	created, err := adm.CreateTopics(ctx, 3, 1, map[string]*string{"retention.ms": kadm.StringPtr("3600000")}, "fz")
	if err != nil || created["fz"].Err != nil {
		t.Fatalf("create: %v %+v", err, created)
	}
	if again, _ := adm.CreateTopics(ctx, 3, 1, nil, "fz"); again["fz"].Err == nil || !strings.Contains(again["fz"].Err.Error(), "TOPIC_ALREADY_EXISTS") {
		t.Errorf("creating it again: %+v", again["fz"])
	}
	details, err := adm.ListTopics(ctx, "fz")
	if err != nil || len(details["fz"].Partitions) != 3 {
		t.Fatalf("list: %v %+v", err, details)
	}
	configs, err := adm.DescribeTopicConfigs(ctx, "fz")
	if err != nil {
		t.Fatal(err)
	}
	rc, err := configs.On("fz", nil)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]kadm.Config{}
	for _, c := range rc.Configs {
		byName[c.Key] = c
	}
	if c := byName["retention.ms"]; c.Value == nil || *c.Value != "3600000" || c.Source != kmsg.ConfigSourceDynamicTopicConfig {
		t.Errorf("retention.ms: %+v", c)
	}
	if c := byName["min.insync.replicas"]; c.Value == nil || *c.Value != "1" || c.Source != kmsg.ConfigSourceDefaultConfig {
		t.Errorf("min.insync.replicas: %+v", c)
	}
	if _, err := adm.CreatePartitions(ctx, 1, "fz"); err != nil {
		t.Fatal(err)
	}
	if d := decodeLines[topicDescJSON](t, b.cli("", "topic", "describe", "fz", "--format", "json"))[0]; len(d.Partitions) != 4 {
		t.Fatalf("after CreatePartitions: %d partitions", len(d.Partitions))
	}

	// franz-go's producer is idempotent by default: InitProducerId, then
	// sequenced batches. Compression is off until the broker takes it.
	p := newKgo(t, addr, kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.DefaultProduceTopic("fz"))
	const n = 1000
	var records []*kgo.Record
	for i := 0; i < n; i++ {
		records = append(records, &kgo.Record{Key: []byte(fmt.Sprintf("k%d", i)), Value: []byte(fmt.Sprintf("v%d", i)),
			Headers: []kgo.RecordHeader{{Key: "i", Value: []byte(fmt.Sprint(i))}}})
	}
	if err := p.ProduceSync(ctx, records...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	for _, r := range records {
		if r.ProducerID < 0 || r.Offset < 0 {
			t.Fatalf("record %s: producer id %d, offset %d", r.Key, r.ProducerID, r.Offset)
		}
	}

	c := newKgo(t, addr, kgo.ConsumeTopics("fz"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	seen := map[string]bool{}
	for len(seen) < n {
		fetches := c.PollFetches(ctx)
		if err := fetches.Err(); err != nil {
			t.Fatalf("after %d records: %v", len(seen), err)
		}
		fetches.EachRecord(func(r *kgo.Record) {
			k := string(r.Key)
			if string(r.Value) != "v"+k[1:] || len(r.Headers) != 1 || string(r.Headers[0].Value) != k[1:] {
				t.Fatalf("record %+v", r)
			}
			if seen[k] {
				t.Fatalf("%s twice", k)
			}
			seen[k] = true
		})
	}
	// Sluice's own consumer reads the same records.
	total := 0
	for _, line := range strings.Split(strings.TrimSpace(b.cli("", "consume", "fz", "--offset", "start", "--to-end", "--format", "%k=%v")), "\n") {
		if k, v, _ := strings.Cut(line, "="); v != "v"+k[1:] {
			t.Fatalf("sluice consume: %q", line)
		}
		total++
	}
	if total != n {
		t.Fatalf("sluice consume read %d records", total)
	}

	req := kmsg.NewPtrDescribeClusterRequest()
	res, err := req.RequestWith(ctx, p)
	if err != nil || res.ErrorCode != 0 || len(res.Brokers) != 1 || res.ControllerID != 0 || res.ClusterID == "" {
		t.Fatalf("DescribeCluster: %v %+v", err, res)
	}

	deleted, err := adm.DeleteTopics(ctx, "fz")
	if err != nil || deleted["fz"].Err != nil {
		t.Fatalf("delete: %v %+v", err, deleted)
	}
	if out := b.cli("", "topic", "list"); strings.Contains(out, "fz") {
		t.Fatalf("fz still listed: %s", out)
	}
}
