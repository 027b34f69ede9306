package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// newKgo is a franz-go client of the Kafka listeners at addr (one address
// or several separated by commas), closed when the test ends.
func newKgo(t *testing.T, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(strings.Split(addr, ",")...), kgo.RetryTimeout(20 * time.Second)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// franz-go's admin client manages topics through the Kafka door, and its
// idempotent producer and consumer move records through it unchanged.
func TestKafkaFranzGo(t *testing.T) {
	b := startBroker(t, "--kafka-addr", "127.0.0.1:0", "--replica-lag-time-max", "20s")
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
	// Kafka's own defaults, which Connect, Streams and Terraform set
	// explicitly, are accepted and shown as the topic's; a value Sluice
	// cannot honour is INVALID_CONFIG saying why.
	kafkaDefaults := map[string]*string{"cleanup.policy": kadm.StringPtr("delete"), "compression.type": kadm.StringPtr("producer"),
		"message.timestamp.type": kadm.StringPtr("CreateTime"), "segment.ms": kadm.StringPtr("604800000"),
		"flush.messages": kadm.StringPtr("9223372036854775807"), "min.cleanable.dirty.ratio": kadm.StringPtr("0.5")}
	if created, err := adm.CreateTopics(ctx, 1, 1, kafkaDefaults, "fz-defaults"); err != nil || created["fz-defaults"].Err != nil {
		t.Fatalf("create with Kafka's defaults: %v %+v", err, created)
	}
	if configs, err := adm.DescribeTopicConfigs(ctx, "fz-defaults"); err != nil {
		t.Fatal(err)
	} else if rc, err := configs.On("fz-defaults", nil); err != nil {
		t.Fatal(err)
	} else {
		for _, c := range rc.Configs {
			if c.Key == "cleanup.policy" && (c.Value == nil || *c.Value != "delete" || c.Source != kmsg.ConfigSourceDynamicTopicConfig) {
				t.Errorf("cleanup.policy: %+v", c)
			}
		}
	}
	compact, _ := adm.CreateTopics(ctx, 1, 1, map[string]*string{"cleanup.policy": kadm.StringPtr("compact")}, "fz-compact")
	if err := compact["fz-compact"].Err; !errors.Is(err, kerr.InvalidConfig) || !strings.Contains(compact["fz-compact"].ErrMessage, "compaction is not implemented") {
		t.Errorf("cleanup.policy=compact: %v %q", err, compact["fz-compact"].ErrMessage)
	}
	// The broker's settings under Kafka's names, in Kafka's units (broker
	// 0; no broker named asks for the cluster's dynamic defaults).
	brokerConfigs, err := adm.DescribeBrokerConfigs(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	settings := map[string]kadm.Config{}
	for _, rc := range brokerConfigs {
		for _, c := range rc.Configs {
			settings[c.Key] = c
		}
	}
	if c := settings["replica.lag.time.max.ms"]; c.Value == nil || *c.Value != "20000" || c.Source != kmsg.ConfigSourceStaticBrokerConfig {
		t.Errorf("replica.lag.time.max.ms: %+v", c)
	}
	if c := settings["min.insync.replicas"]; c.Value == nil || *c.Value != "1" || c.Source != kmsg.ConfigSourceDefaultConfig {
		t.Errorf("min.insync.replicas: %+v", c)
	}

	// IncrementalAlterConfigs: set one config, append to a list; then
	// AlterConfigs replaces the whole configuration.
	if res, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{
		{Op: kadm.SetConfig, Name: "retention.ms", Value: kadm.StringPtr("7200000")},
		{Op: kadm.AppendConfig, Name: "leader.replication.throttled.replicas", Value: kadm.StringPtr("0:0")},
	}, "fz-defaults"); err != nil || res[0].Err != nil {
		t.Fatalf("incremental alter: %v %+v", err, res)
	}
	own := func() map[string]string {
		t.Helper()
		configs, err := adm.DescribeTopicConfigs(ctx, "fz-defaults")
		if err != nil {
			t.Fatal(err)
		}
		rc, err := configs.On("fz-defaults", nil)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for _, c := range rc.Configs {
			if c.Source == kmsg.ConfigSourceDynamicTopicConfig && c.Value != nil {
				out[c.Key] = *c.Value
			}
		}
		return out
	}
	if got := own(); got["retention.ms"] != "7200000" || got["leader.replication.throttled.replicas"] != "0:0" || got["cleanup.policy"] != "delete" {
		t.Errorf("after the incremental alter: %v", got)
	}
	if res, err := adm.AlterTopicConfigsState(ctx, []kadm.AlterConfig{{Name: "retention.ms", Value: kadm.StringPtr("60000")}}, "fz-defaults"); err != nil || res[0].Err != nil {
		t.Fatalf("alter: %v %+v", err, res)
	}
	if got := own(); len(got) != 1 || got["retention.ms"] != "60000" {
		t.Errorf("after AlterConfigs, which replaces the whole configuration: %v", got)
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
	// DescribeProducers: the producer, with its last sequence, on every
	// partition it wrote to.
	perPartition := map[int32]int{}
	asked := kadm.TopicsSet{}
	for _, r := range records {
		perPartition[r.Partition]++
		asked.Add("fz", r.Partition)
	}
	described, err := adm.DescribeProducers(ctx, asked)
	if err != nil {
		t.Fatal(err)
	}
	for part, count := range perPartition {
		dp := described["fz"].Partitions[part]
		ap, ok := dp.ActiveProducers[records[0].ProducerID]
		if dp.Err != nil || !ok || ap.LastSequence != int32(count-1) || ap.ProducerEpoch != records[0].ProducerEpoch || ap.LastTimestamp <= 0 {
			t.Errorf("partition %d (%d records): %+v %v", part, count, dp.ActiveProducers, dp.Err)
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

	// The first group request creates __consumer_offsets: the coordinator
	// is not available until its partitions lead.
	eventually(t, 30*time.Second, func() string {
		c := adm.FindGroupCoordinators(ctx, "billing")["billing"]
		if c.Err != nil || c.NodeID != 0 || fmt.Sprintf("%s:%d", c.Host, c.Port) != addr {
			return fmt.Sprintf("FindCoordinator: %+v", c)
		}
		return ""
	})

	deleted, err := adm.DeleteTopics(ctx, "fz")
	if err != nil || deleted["fz"].Err != nil {
		t.Fatalf("delete: %v %+v", err, deleted)
	}
	if out := b.cli("", "topic", "list"); slices.Contains(strings.Fields(out), "fz") {
		t.Fatalf("fz still listed: %s", out)
	}
}

// Compressed batches, from Kafka clients and from Sluice's producer, are
// stored as they arrive and read by both doors: kcat and franz-go with each
// codec, sluice produce --compression and sluice consume.
func TestKafkaCompression(t *testing.T) {
	kcat := needTool(t, "kcat")
	b := startBroker(t, "--kafka-addr", "127.0.0.1:0")
	addr := kafkaAddr(t, b)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	codecs := []struct {
		name  string
		codec kgo.CompressionCodec
		attr  int16
	}{{"gzip", kgo.GzipCompression(), 1}, {"snappy", kgo.SnappyCompression(), 2}, {"lz4", kgo.Lz4Compression(), 3}, {"zstd", kgo.ZstdCompression(), 4}}
	for _, c := range codecs {
		topic := "c-" + c.name
		b.cli("", "topic", "create", topic, "--partitions", "4")
		value := strings.Repeat(c.name+" ", 200) + "end" // compressible
		// Partition 0: kcat; 1: franz-go; 2: sluice produce.
		kcatRun(t, kcat, "kcat:"+value+"\n", "-P", "-b", addr, "-t", topic, "-p", "0", "-K:", "-z", c.name)
		p := newKgo(t, addr, kgo.ProducerBatchCompression(c.codec), kgo.RecordPartitioner(kgo.ManualPartitioner()))
		if err := p.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: 1, Key: []byte("franz"), Value: []byte(value)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		b.cli("sluice:"+value+"\n", "produce", topic, "--partition", "2", "--key-delimiter", ":", "--compression", c.name)

		// Each batch is stored and served with the codec it was sent with.
		for part := int32(0); part < 3; part++ {
			req := kmsg.NewPtrFetchRequest()
			req.MaxBytes = 1 << 20
			req.Topics = []kmsg.FetchRequestTopic{{Topic: topic, Partitions: []kmsg.FetchRequestTopicPartition{{Partition: part, PartitionMaxBytes: 1 << 20, CurrentLeaderEpoch: -1}}}}
			res, err := req.RequestWith(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			raw := res.Topics[0].Partitions[0].RecordBatches
			var batch kmsg.RecordBatch
			if err := batch.ReadFrom(raw); err != nil {
				t.Fatalf("%s partition %d: %v", c.name, part, err)
			}
			if batch.Attributes&7 != c.attr || len(raw) >= len(value) {
				t.Errorf("%s partition %d: attributes %d, %d bytes for a %d-byte value", c.name, part, batch.Attributes, len(raw), len(value))
			}
		}
		// Both doors read all three records back whole.
		want := []string{"franz=" + value, "kcat=" + value, "sluice=" + value}
		got := strings.Split(strings.TrimSpace(kcatRun(t, kcat, "", "-C", "-b", addr, "-t", topic, "-o", "beginning", "-e", "-q", "-f", `%k=%s\n`)), "\n")
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("%s: kcat read %d records: %.80q", c.name, len(got), got)
		}
		got = strings.Split(strings.TrimSpace(b.cli("", "consume", topic, "--offset", "start", "--to-end", "--format", "%k=%v")), "\n")
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("%s: sluice consume read %d records: %.80q", c.name, len(got), got)
		}
	}
}

// kafkaTLS is a franz-go TLS option with the certificate pair name,
// trusting the CA file ca.
func kafkaTLS(t *testing.T, certs testCerts, name, ca string) kgo.Opt {
	t.Helper()
	pair, err := tls.LoadX509KeyPair(certs.file(name+".crt"), certs.file(name+".key"))
	if err != nil {
		t.Fatal(err)
	}
	pem, err := os.ReadFile(certs.file(ca + ".crt"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	return kgo.DialTLSConfig(&tls.Config{Certificates: []tls.Certificate{pair}, RootCAs: pool, MinVersion: tls.VersionTLS12})
}

// With TLS on the broker the Kafka listener is mutual TLS with the same
// certificates, and every request passes the same ACLs as on the actor
// listener: alice may write and read only what she was granted, and sees
// only the topics she may describe.
func TestKafkaListenerTLS(t *testing.T) {
	certs := makeTestCerts(t)
	b := startBroker(t, append([]string{"--id", "1", "--kafka-addr", "127.0.0.1:0"}, certs.brokerFlags(1)...)...)
	addr := kafkaAddr(t, b)
	admin := certs.as("user-admin", "ca")
	run := func(args ...string) {
		t.Helper()
		if out, errOut, code := runCLI(t, "", append(args, append([]string{"--broker", b.Addr}, admin...)...)...); code != 0 {
			t.Fatalf("sluice %v: %s%s", args, out, errOut)
		}
	}
	run("topic", "create", "orders")
	run("topic", "create", "payments")
	run("acl", "add", "--allow-principal", "User:alice", "--operation", "write,read,describe", "--topic", "orders")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	alice := newKgo(t, addr, kafkaTLS(t, certs, "user-alice", "ca"), kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.RecordRetries(2), kgo.RetryTimeout(5*time.Second))
	eventually(t, 20*time.Second, func() string { // the ACL reaches the broker
		if err := alice.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte("by alice")}).FirstErr(); err != nil {
			return "alice writing orders: " + err.Error()
		}
		return ""
	})
	err := alice.ProduceSync(ctx, &kgo.Record{Topic: "payments", Value: []byte("by alice")}).FirstErr()
	if err == nil || !strings.Contains(err.Error(), "TOPIC_AUTHORIZATION_FAILED") {
		t.Errorf("alice writing payments: %v", err)
	}
	topics, err := kadm.NewClient(alice).ListTopics(ctx)
	if err != nil || len(topics) != 1 || !topics.Has("orders") {
		t.Errorf("alice lists %v (%v), want only orders", topics.Names(), err)
	}
	if res, err := kadm.NewClient(alice).CreateTopics(ctx, 1, 1, nil, "alices"); err == nil && res["alices"].Err == nil {
		t.Error("alice created a topic without the right to")
	}

	// The super user may do anything; records are where alice wrote them.
	adm := newKgo(t, addr, kafkaTLS(t, certs, "user-admin", "ca"))
	if res, err := kadm.NewClient(adm).CreateTopics(ctx, 1, 1, nil, "admins"); err != nil || res["admins"].Err != nil {
		t.Errorf("admin creating a topic: %v %+v", err, res)
	}
	if out, _, _ := runCLI(t, "", append([]string{"consume", "orders", "--offset", "start", "--to-end", "--broker", b.Addr}, admin...)...); strings.TrimSpace(out) != "by alice" {
		t.Errorf("orders holds %q", out)
	}

	// No certificate, another CA's certificate, or plaintext: refused at
	// the handshake.
	for name, opt := range map[string]kgo.Opt{
		"plaintext":         kgo.DialTimeout(5 * time.Second),
		"a foreign CA":      kafkaTLS(t, certs, "foreign-admin", "ca"),
		"an expired client": kafkaTLS(t, certs, "expired-alice", "ca"),
	} {
		cl := newKgo(t, addr, opt, kgo.RetryTimeout(3*time.Second))
		if _, err := kadm.NewClient(cl).ListTopics(ctx); err == nil {
			t.Errorf("%s: listed topics", name)
		}
	}
	if !strings.Contains(b.logs.String(), "kafka listener refused a TLS connection") {
		t.Error("refused TLS connections were not logged")
	}
}

// Group offsets and listings through the Kafka door: kadm commits and
// fetches standalone offsets (they are the offsets sluice group describe
// shows), lists groups and describes a Sluice group with its members'
// assignments in Kafka's encoding.
func TestKafkaGroupOffsetsAndListings(t *testing.T) {
	b := startBroker(t, "--kafka-addr", "127.0.0.1:0", "--group-initial-rebalance-delay", "100ms")
	addr := kafkaAddr(t, b)
	b.cli("", "topic", "create", "g-topic", "--partitions", "2")
	b.cli("a\nb\nc\n", "produce", "g-topic", "--partition", "0")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	adm := kadm.NewClient(newKgo(t, addr))

	// An unknown group has no offsets, and no error.
	var fetched kadm.OffsetResponses
	eventually(t, 30*time.Second, func() string { // the first group request creates __consumer_offsets
		var err error
		if fetched, err = adm.FetchOffsets(ctx, "standalone"); err != nil {
			return err.Error()
		}
		return ""
	})
	if len(fetched) != 0 {
		t.Errorf("offsets of an unknown group: %+v", fetched)
	}
	var toCommit kadm.Offsets
	toCommit.AddOffset("g-topic", 0, 2, -1)
	toCommit.AddOffset("g-topic", 1, 0, -1)
	committed, err := adm.CommitOffsets(ctx, "standalone", toCommit)
	if err != nil || committed.Error() != nil {
		t.Fatalf("commit: %v %v", err, committed.Error())
	}
	fetched, err = adm.FetchOffsets(ctx, "standalone")
	if err != nil || fetched.Error() != nil {
		t.Fatalf("fetch: %v %v", err, fetched.Error())
	}
	if o, _ := fetched.Lookup("g-topic", 0); o.At != 2 {
		t.Errorf("fetched %+v", fetched)
	}
	g := decodeLines[groupDescJSON](t, b.cli("", "group", "describe", "standalone", "--format", "json"))[0]
	for _, p := range g.Partitions {
		if want := map[int32]int64{0: 2, 1: 0}[p.Partition]; p.Committed != want || p.Topic != "g-topic" {
			t.Errorf("sluice group describe: %+v", p)
		}
	}

	// A Sluice group with a live member, described through the Kafka door.
	member := exec.Command(cliBin, "consume", "g-topic", "--group", "live", "--from-beginning", "--broker", b.Addr)
	if err := member.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { member.Process.Kill(); member.Wait() }()
	eventually(t, 30*time.Second, func() string {
		described, err := adm.DescribeGroups(ctx, "live")
		if err != nil {
			return err.Error()
		}
		d := described["live"]
		if d.State != "Stable" || len(d.Members) != 1 {
			return fmt.Sprintf("live: %s with %d members", d.State, len(d.Members))
		}
		a, ok := d.Members[0].Assigned.AsConsumer()
		if !ok || len(a.Topics) != 1 || a.Topics[0].Topic != "g-topic" || len(a.Topics[0].Partitions) != 2 {
			return fmt.Sprintf("live's member assignment: %+v", d.Members[0].Assigned)
		}
		return ""
	})
	listed, err := adm.ListGroups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(listed.Groups(), "live") || !slices.Contains(listed.Groups(), "standalone") {
		t.Errorf("ListGroups: %v", listed.Groups())
	}
	if described, err := adm.DescribeGroups(ctx, "never"); err != nil || described["never"].Err != nil || described["never"].State != "Dead" {
		t.Errorf("an unknown group: %+v %v", described["never"], err)
	}

	// OffsetDelete: an empty group's offsets go, partition by partition; a
	// group with members keeps those of the topics they consume; a
	// partition the topic does not have and a group that never was are
	// errors. The same through sluice group delete-offsets.
	toCommit = kadm.Offsets{}
	toCommit.AddOffset("g-topic", 1, 1, -1)
	if committed, err := adm.CommitOffsets(ctx, "standalone", toCommit); err != nil || committed.Error() != nil {
		t.Fatalf("commit: %v %v", err, committed.Error())
	}
	var ts kadm.TopicsSet
	ts.Add("g-topic", 1, 7)
	dropped, err := adm.DeleteOffsets(ctx, "standalone", ts)
	if err != nil {
		t.Fatal(err)
	}
	if err, _ := dropped.Lookup("g-topic", 1); err != nil {
		t.Errorf("deleting g-topic 1 of standalone: %v", err)
	}
	if err, _ := dropped.Lookup("g-topic", 7); err == nil || !strings.Contains(err.Error(), "UNKNOWN_TOPIC_OR_PARTITION") {
		t.Errorf("deleting g-topic 7 of standalone: %v", err)
	}
	fetched, err = adm.FetchOffsets(ctx, "standalone")
	if _, kept := fetched.Lookup("g-topic", 1); err != nil || kept {
		t.Errorf("offsets after OffsetDelete of g-topic 1: %+v %v", fetched, err)
	}
	if o, _ := fetched.Lookup("g-topic", 0); o.At != 2 {
		t.Errorf("g-topic 0 after OffsetDelete of g-topic 1: %+v", o)
	}
	dropped, err = adm.DeleteOffsets(ctx, "live", ts)
	if err != nil {
		t.Fatal(err)
	}
	if err, _ := dropped.Lookup("g-topic", 1); err == nil || !strings.Contains(err.Error(), "GROUP_SUBSCRIBED_TO_TOPIC") {
		t.Errorf("deleting a consumed topic's offsets: %v", err)
	}
	if _, err := adm.DeleteOffsets(ctx, "never", ts); err == nil || !strings.Contains(err.Error(), "GROUP_ID_NOT_FOUND") {
		t.Errorf("deleting offsets of a group that never was: %v", err)
	}
	if out, _, code := runCLI(t, "", "group", "delete-offsets", "live", "--topic", "g-topic", "--broker", b.Addr); code != 1 ||
		!regexp.MustCompile(`^g-topic 0: GROUP_SUBSCRIBED_TO_TOPIC.*\ng-topic 1: GROUP_SUBSCRIBED_TO_TOPIC.*\n$`).MatchString(out) {
		t.Errorf("sluice group delete-offsets live: exit %d, %q", code, out)
	}

	// DeleteGroups: a group with a member is refused, one without is gone
	// with its offsets, and one that never was is not found.
	deleted, err := adm.DeleteGroups(ctx, "live", "standalone", "never")
	if err != nil {
		t.Fatal(err)
	}
	for group, want := range map[string]string{"live": "NON_EMPTY_GROUP", "standalone": "", "never": "GROUP_ID_NOT_FOUND"} {
		got := ""
		if err := deleted[group].Err; err != nil {
			got = err.Error()
		}
		if (want == "") != (got == "") || !strings.Contains(got, want) {
			t.Errorf("deleting %s: %q, want %q", group, got, want)
		}
	}
	if fetched, err := adm.FetchOffsets(ctx, "standalone"); err != nil || len(fetched) != 0 {
		t.Errorf("offsets after the deletion: %+v %v", fetched, err)
	}
	if listed, err := adm.ListGroups(ctx); err != nil || slices.Contains(listed.Groups(), "standalone") {
		t.Errorf("ListGroups after the deletion: %v %v", listed.Groups(), err)
	}
}

// ListOffsets through franz-go's admin client: start, end, by time and the
// record with the largest timestamp (v7, KIP-734), the first of a tie, in
// batches whose timestamps go back and forth.
func TestKafkaListOffsetsByTime(t *testing.T) {
	b := startBroker(t, "--kafka-addr", "127.0.0.1:0")
	addr := kafkaAddr(t, b)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	adm := kadm.NewClient(newKgo(t, addr))
	if created, err := adm.CreateTopics(ctx, 1, 1, nil, "times"); err != nil || created["times"].Err != nil {
		t.Fatalf("create: %v %+v", err, created)
	}
	lookup := func(what string, list func(context.Context, ...string) (kadm.ListedOffsets, error)) kadm.ListedOffset {
		t.Helper()
		l, err := list(ctx, "times")
		o, ok := l.Lookup("times", 0)
		if err != nil || !ok || o.Err != nil {
			t.Fatalf("%s: %v %+v", what, err, l)
		}
		return o
	}
	if o := lookup("max timestamp of an empty partition", adm.ListMaxTimestampOffsets); o.Offset != -1 {
		t.Fatalf("max timestamp of an empty partition: offset %d, want -1", o.Offset)
	}

	t0 := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	p := newKgo(t, addr, kgo.DefaultProduceTopic("times"))
	// One ProduceSync per batch: offsets 0-2, 3, 4-5.
	for _, batch := range [][]time.Duration{{10, 50, 20}, {30}, {50, 5}} {
		var records []*kgo.Record
		for _, d := range batch {
			records = append(records, &kgo.Record{Value: []byte("v"), Timestamp: t0.Add(d * time.Millisecond)})
		}
		if err := p.ProduceSync(ctx, records...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	ms := func(d int64) int64 { return t0.UnixMilli() + d }
	if o := lookup("max timestamp", adm.ListMaxTimestampOffsets); o.Offset != 1 || o.Timestamp != ms(50) {
		t.Errorf("max timestamp: offset %d at %d, want offset 1 at %d", o.Offset, o.Timestamp, ms(50))
	}
	// Past every record the broker answers -1, which kadm turns into the end.
	for _, c := range []struct{ at, want int64 }{{0, 0}, {25, 1}, {50, 1}, {51, 6}} {
		after := func(ctx context.Context, topics ...string) (kadm.ListedOffsets, error) {
			return adm.ListOffsetsAfterMilli(ctx, ms(c.at), topics...)
		}
		if o := lookup("after a time", after); o.Offset != c.want {
			t.Errorf("first offset at or after t0+%d ms: %d, want %d", c.at, o.Offset, c.want)
		}
	}
	if o := lookup("start", adm.ListStartOffsets); o.Offset != 0 {
		t.Errorf("start offset %d", o.Offset)
	}
	if o := lookup("end", adm.ListEndOffsets); o.Offset != 6 {
		t.Errorf("end offset %d", o.Offset)
	}
}
