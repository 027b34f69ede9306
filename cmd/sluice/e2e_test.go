package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/sluicemq/sluice/client"
	"github.com/sluicemq/sluice/messages"
	"github.com/sluicemq/sluice/messages/record"
)

func newAdmin(t *testing.T, addr string) *client.Admin {
	t.Helper()
	a, err := client.NewAdmin(addr, sharedOpts(), client.RequestTimeout(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a
}

func createTopic(t *testing.T, a *client.Admin, name string, partitions int32, configs map[string]string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := a.CreateTopic(ctx, client.TopicSpec{Name: name, Partitions: partitions, Configs: configs}); err != nil {
		t.Fatalf("create topic %s: %v", name, err)
	}
}

// consumeAll reads every record of topic-partition from offset 0 up to the
// current high watermark, checking offsets are contiguous.
func consumeAll(t *testing.T, addr, topic string, partition int32) []*client.Record {
	t.Helper()
	a := newAdmin(t, addr)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	hw, err := a.ListOffset(ctx, topic, partition, -1)
	if err != nil {
		t.Fatalf("list offsets: %v", err)
	}
	start, err := a.ListOffset(ctx, topic, partition, -2)
	if err != nil {
		t.Fatalf("list offsets: %v", err)
	}
	c, err := client.NewConsumer(addr, sharedOpts(), client.ConsumePartitions(map[string]map[int32]client.Offset{topic: {partition: client.AtStart()}}),
		client.ConsumeResetOffset(client.NoResetOffset()))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var out []*client.Record
	next := start
	for next < hw {
		f := c.PollFetches(ctx)
		for _, e := range f.Errors {
			t.Fatalf("consume %s-%d at %d: %v", topic, partition, next, e.Err)
		}
		for _, r := range f.Records {
			if r.Offset != next {
				t.Fatalf("%s-%d: offset %d after %d: gap or reorder", topic, partition, r.Offset, next-1)
			}
			next++
			out = append(out, r)
		}
	}
	return out
}

func TestCLITour(t *testing.T) {
	b := startBroker(t)
	run := b.cli
	run("", "topic", "create", "tour", "--partitions", "3")
	if out := run("", "topic", "list"); !strings.Contains(out, "tour") {
		t.Fatalf("topic list: %q", out)
	}
	run("a\nb\nc\n", "produce", "tour", "--key", "user-1", "--acks", "all")
	run("d\ne\n", "produce", "tour", "--acks", "1")
	out := run("", "consume", "tour", "--from-beginning", "--max", "5", "--format", "%p %o %k %v")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 5 {
		t.Fatalf("consumed %d lines: %q", len(lines), out)
	}
	// Keyed records go to one partition, in order, at offsets 0, 1, 2.
	var keyed []string
	for _, l := range lines {
		if f := strings.Fields(l); len(f) == 4 && f[2] == "user-1" {
			keyed = append(keyed, f[1]+"="+f[3])
		}
	}
	if strings.Join(keyed, " ") != "0=a 1=b 2=c" {
		t.Fatalf("keyed records: %v", keyed)
	}
	keyedPartition := strings.Fields(lines[0])[0]
	for _, l := range lines {
		if f := strings.Fields(l); f[2] == "user-1" {
			keyedPartition = f[0]
		}
	}
	// describe: one row per partition; 5 records in all, all below the HW,
	// at least the 3 keyed ones in the keyed partition.
	desc := run("", "topic", "describe", "tour")
	rows := topicDescribeRows(t, desc)
	if len(rows) != 3 {
		t.Fatalf("describe shows %d partitions:\n%s", len(rows), desc)
	}
	total := 0
	for p, r := range rows {
		if r["LEO"] != r["HW"] || r["LOG-START"] != "0" || r["LEADER"] != "0" || r["ISR"] != "[0]" {
			t.Fatalf("partition %s: %v\n%s", p, r, desc)
		}
		n, _ := strconv.Atoi(r["LEO"])
		total += n
	}
	if n, _ := strconv.Atoi(rows[keyedPartition]["LEO"]); total != 5 || n < 3 {
		t.Fatalf("describe: %d records in all, %d in the keyed partition %s:\n%s", total, n, keyedPartition, desc)
	}
	// One partition from an exact offset.
	out = run("", "consume", "tour", "--partition", keyedPartition, "--offset", "1", "--max", "2", "--format", "%o %k %v")
	if got := strings.Fields(out); strings.Join(got, " ") != "1 user-1 b 2 user-1 c" {
		t.Fatalf("consume --partition %s --offset 1: %q", keyedPartition, out)
	}
	// SLUICE_BROKER stands in for --broker.
	env := exec.Command(cliBin, "topic", "list")
	env.Env = append(os.Environ(), "SLUICE_BROKER="+b.Addr)
	if out, err := env.Output(); err != nil || !strings.Contains(string(out), "tour") {
		t.Fatalf("topic list with SLUICE_BROKER: %v %q", err, out)
	}
	// The benchmark prints its figures.
	out = run("", "bench", "produce", "--topic", "speed", "--records", "2000", "--size", "100", "--quiet")
	if !strings.Contains(out, "produce: 2000 records") || !strings.Contains(out, "records/s") || !strings.Contains(out, "p99") {
		t.Fatalf("bench produce: %q", out)
	}
	out = run("", "bench", "consume", "--topic", "speed", "--records", "2000", "--quiet")
	if !strings.Contains(out, "consume: 2000 records, 200000 bytes") {
		t.Fatalf("bench consume: %q", out)
	}
	// Errors exit non-zero and say why.
	if _, errOut, code := runCLI(t, "", "topic", "create", "tour", "--broker", b.Addr); code == 0 || !strings.Contains(errOut, "TOPIC_ALREADY_EXISTS") {
		t.Fatalf("duplicate create: exit %d, %q", code, errOut)
	}
	if _, errOut, code := runCLI(t, "x\n", "produce", "nope", "--broker", b.Addr, "--timeout", "2s"); code == 0 || !strings.Contains(errOut, "UNKNOWN_TOPIC_OR_PARTITION") {
		t.Fatalf("produce to a missing topic: exit %d, %q", code, errOut)
	}
	run("", "topic", "delete", "tour")
	if out := run("", "topic", "list"); strings.Contains(out, "tour") {
		t.Fatalf("deleted topic still listed: %q", out)
	}
	// SIGTERM shuts down cleanly.
	b.stop()
}

// Produce with acks=1, kill -9 the broker at a random moment, restart it:
// every acknowledged record is at its acknowledged offset.
func TestKill9KeepsAcknowledgedRecords(t *testing.T) {
	const total = 100_000
	b := startBroker(t)
	a := newAdmin(t, b.Addr)
	createTopic(t, a, "crash", 1, nil)

	p, err := client.NewProducer(b.Addr, client.Acks(client.LeaderAck), client.Linger(2*time.Millisecond),
		client.BatchBytes(64<<10), client.RequestTimeout(3*time.Second), client.RetryBackoff(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var mu sync.Mutex
	acked := map[int64]string{} // offset -> value
	var ackCount, failCount atomic.Int64
	killAt := int64(10_000 + rand.IntN(70_000))
	killed := make(chan struct{})
	go func() {
		for ackCount.Load() < killAt {
			time.Sleep(time.Millisecond)
		}
		b.kill9()
		close(killed)
		time.Sleep(200 * time.Millisecond)
		b.start()
	}()
	ctx := context.Background()
	for i := 0; i < total; i++ {
		v := fmt.Sprintf("rec-%06d", i)
		p.Produce(ctx, &client.Record{Topic: "crash", Value: []byte(v)}, func(r *client.Record, err error) {
			if err != nil {
				failCount.Add(1)
				return
			}
			mu.Lock()
			if prev, dup := acked[r.Offset]; dup {
				t.Errorf("offset %d acknowledged twice: %s and %s", r.Offset, prev, v)
			}
			acked[r.Offset] = string(r.Value)
			mu.Unlock()
			ackCount.Add(1)
		})
	}
	fctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := p.Flush(fctx); err != nil {
		t.Fatalf("flush: %v", err)
	}
	<-killed
	t.Logf("killed after %d acks; %d acked, %d failed in all", killAt, ackCount.Load(), failCount.Load())
	if ackCount.Load() < killAt {
		t.Fatal("kill happened before the planned ack count")
	}
	recs := consumeAll(t, b.Addr, "crash", 0)
	byOffset := map[int64]string{}
	for _, r := range recs {
		byOffset[r.Offset] = string(r.Value)
	}
	offsets := make([]int64, 0, len(acked))
	for off := range acked {
		offsets = append(offsets, off)
	}
	sort.Slice(offsets, func(i, j int) bool { return offsets[i] < offsets[j] })
	lost := 0
	for _, off := range offsets {
		if byOffset[off] != acked[off] {
			lost++
			if lost < 5 {
				t.Errorf("offset %d: acked %q, log has %q", off, acked[off], byOffset[off])
			}
		}
	}
	if lost > 0 {
		t.Fatalf("%d acknowledged records lost or changed", lost)
	}
	// Every record sent was acknowledged once the broker came back.
	if int(ackCount.Load()) != total {
		t.Fatalf("%d of %d records acknowledged", ackCount.Load(), total)
	}
}

// Every error code the client can meet on a single broker, reached through
// the client.
func TestErrorCodesThroughTheClient(t *testing.T) {
	b := startBroker(t)
	a := newAdmin(t, b.Addr)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	expect := func(name string, err, want error) {
		t.Helper()
		if !errors.Is(err, want) {
			t.Errorf("%s: got %v, want %v", name, err, want)
		}
	}
	createTopic(t, a, "errs", 2, map[string]string{"max.message.bytes": "2048"})

	// Admin errors.
	expect("duplicate topic", a.CreateTopic(ctx, client.TopicSpec{Name: "errs", Partitions: 1}), client.ErrTopicAlreadyExists)
	expect("bad topic name", a.CreateTopic(ctx, client.TopicSpec{Name: "bad name!", Partitions: 1}), client.ErrInvalidTopic)
	expect("bad partitions", a.CreateTopic(ctx, client.TopicSpec{Name: "p", Partitions: -1}), client.ErrInvalidPartitions)
	expect("rf above brokers", a.CreateTopic(ctx, client.TopicSpec{Name: "rf", Partitions: 1, ReplicationFactor: 3}), client.ErrInvalidReplicationFactor)
	expect("bad config", a.CreateTopic(ctx, client.TopicSpec{Name: "cfg", Partitions: 1, Configs: map[string]string{"retention.ms": "soon"}}), client.ErrInvalidConfig)
	expect("unknown config", a.CreateTopic(ctx, client.TopicSpec{Name: "cfg", Partitions: 1, Configs: map[string]string{"no.such": "1"}}), client.ErrInvalidConfig)
	expect("delete unknown", a.DeleteTopic(ctx, "never-created"), client.ErrUnknownTopicOrPartition)

	// Producer errors.
	p, err := client.NewProducer(b.Addr, client.Acks(client.LeaderAck), client.DeliveryTimeout(3*time.Second), client.RequestTimeout(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	_, _, err = p.ProduceSync(ctx, &client.Record{Topic: "missing", Value: []byte("x")})
	expect("unknown topic", err, client.ErrUnknownTopicOrPartition)
	_, _, err = p.ProduceSync(ctx, &client.Record{Topic: "errs", Value: make([]byte, 4096)})
	expect("record above the topic's max.message.bytes", err, client.ErrRecordTooLarge)
	_, _, err = p.ProduceSync(ctx, &client.Record{Topic: "errs", Value: make([]byte, 2<<20)})
	expect("record above the producer's batch size", err, client.ErrRecordTooLarge)
	mp, err := client.NewProducer(b.Addr, client.WithPartitioner(client.ManualPartitioner()), client.DeliveryTimeout(3*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer mp.Close()
	_, _, err = mp.ProduceSync(ctx, &client.Record{Topic: "errs", Partition: 7, Value: []byte("x")})
	expect("bad partition", err, client.ErrUnknownTopicOrPartition)

	// min.insync.replicas above the replicas: acks=all is refused, acks=1 works.
	createTopic(t, a, "minisr", 1, map[string]string{"min.insync.replicas": "2"})
	ap, err := client.NewProducer(b.Addr, client.Acks(client.AllAcks), client.DeliveryTimeout(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer ap.Close()
	_, _, err = ap.ProduceSync(ctx, &client.Record{Topic: "minisr", Value: []byte("x")})
	expect("acks=all below min ISR", err, client.ErrNotEnoughReplicas)

	// Raw requests a well-behaved producer never sends.
	good := rawBatch("v")
	corrupt := rawBatch("v")
	corrupt[len(corrupt)-1] ^= 0x40
	rawProduce := func(req *messages.ProduceRequest) error {
		res, err := a.Request(ctx, b.Addr, req)
		if err != nil {
			return err
		}
		r := res.(*messages.ProduceResponse)
		return r.Error.Err(r.ErrorMessage)
	}
	expect("corrupt batch", rawProduce(&messages.ProduceRequest{Topic: "errs", Acks: 1, Records: corrupt}), client.ErrCorruptRecord)
	expect("truncated batch", rawProduce(&messages.ProduceRequest{Topic: "errs", Acks: 1, Records: good[:30]}), client.ErrCorruptRecord)
	expect("bad acks", rawProduce(&messages.ProduceRequest{Topic: "errs", Acks: 7, Records: good}), client.ErrInvalidRequiredAcks)
	expect("negative partition", rawProduce(&messages.ProduceRequest{Topic: "errs", Partition: -1, Acks: 1, Records: good}), client.ErrUnknownTopicOrPartition)
	if err := rawProduce(&messages.ProduceRequest{Topic: "errs", Acks: 1, Records: good}); err != nil {
		t.Fatalf("valid raw batch: %v", err)
	}
	rawFetch := func(req *messages.FetchRequest) error {
		res, err := a.Request(ctx, b.Addr, req)
		if err != nil {
			return err
		}
		r := res.(*messages.FetchResponse)
		return r.Error.Err(r.ErrorMessage)
	}
	expect("negative max bytes", rawFetch(&messages.FetchRequest{Topic: "errs", MaxBytes: -1, CurrentLeaderEpoch: -1}), client.ErrInvalidRequest)
	expect("future epoch", rawFetch(&messages.FetchRequest{Topic: "errs", CurrentLeaderEpoch: 5}), messages.ErrorCode_UNKNOWN_LEADER_EPOCH)
	expect("offset beyond the log", rawFetch(&messages.FetchRequest{Topic: "errs", Offset: 1 << 40, CurrentLeaderEpoch: -1}), client.ErrOffsetOutOfRange)
	res, err := a.Request(ctx, b.Addr, &messages.ListOffsetsRequest{Topic: "errs", Timestamp: -9, CurrentLeaderEpoch: -1})
	if err != nil {
		t.Fatal(err)
	}
	expect("bad list-offsets timestamp", res.(*messages.ListOffsetsResponse).Error.Err(""), client.ErrInvalidRequest)

	// A consumer told not to reset reports OFFSET_OUT_OF_RANGE.
	c, err := client.NewConsumer(b.Addr, client.ConsumePartitions(map[string]map[int32]client.Offset{"errs": {0: client.AtOffset(1 << 40)}}),
		client.ConsumeResetOffset(client.NoResetOffset()))
	if err != nil {
		t.Fatal(err)
	}
	f := c.PollFetches(ctx)
	c.Close()
	if len(f.Errors) == 0 {
		t.Error("consumer at a bad offset: no error")
	} else {
		expect("consumer bad offset", f.Errors[0].Err, client.ErrOffsetOutOfRange)
	}

	// Message types the broker does not handle: a known one and one only the
	// client's process knows.
	_, err = a.Request(ctx, b.Addr, &messages.TopicRecord{Name: "x"})
	expect("unhandled message type", err, client.ErrUnknownMessageType)
	_, err = a.Request(ctx, b.Addr, unknownMessage(t))
	expect("unknown message type", err, client.ErrUnknownMessageType)

	// A paused broker: the client's request times out.
	b.pause()
	sctx, scancel := context.WithTimeout(ctx, 5*time.Second)
	_, err = a.Request(sctx, b.Addr, &messages.MetadataRequest{})
	scancel()
	b.resume()
	expect("paused broker", err, client.ErrRequestTimedOut)

	if !b.alive() {
		t.Fatal("broker died")
	}
	if _, err := a.Metadata(ctx); err != nil {
		t.Fatalf("broker not serving after bad input: %v", err)
	}
}

// A mid-log bit flip made while the broker was stopped is never served:
// the partition reports it on the read that reaches it and is offline
// after that; other partitions keep working.
func TestCorruptLogIsReportedNotServed(t *testing.T) {
	b := startBroker(t, "--segment-bytes", "65536")
	a := newAdmin(t, b.Addr)
	createTopic(t, a, "bits", 2, nil)
	p, err := client.NewProducer(b.Addr, client.Acks(client.LeaderAck), client.WithPartitioner(client.ManualPartitioner()), client.BatchBytes(4096))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i := 0; i < 2000; i++ {
		p.Produce(ctx, &client.Record{Topic: "bits", Partition: int32(i % 2), Value: []byte(strings.Repeat("x", 100))}, nil)
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	p.Close()
	b.stop()
	// Flip a bit in the middle of the first segment of partition 0.
	segs, _ := filepath.Glob(filepath.Join(b.Data, "topics", "bits-0", "log", "0*"))
	sort.Strings(segs)
	if len(segs) < 2 {
		t.Fatalf("want several segments, got %v", segs)
	}
	data, err := os.ReadFile(segs[0])
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0x10
	if err := os.WriteFile(segs[0], data, 0o644); err != nil {
		t.Fatal(err)
	}
	b.start()
	var res proto.Message
	waitFor(t, "partition 0 led again", func() bool {
		res, err = a.Request(ctx, b.Addr, &messages.FetchRequest{Topic: "bits", Partition: 0, MaxBytes: 1 << 20, CurrentLeaderEpoch: -1})
		return err == nil && res.(*messages.FetchResponse).Error != messages.ErrorCode_NOT_LEADER
	})
	// The index snapshot of the clean stop vouches for the segment's size,
	// so the damage is found by the read that reaches it, which gets
	// CORRUPT_RECORD; from then on the replica is offline.
	switch code := res.(*messages.FetchResponse).Error; code {
	case messages.ErrorCode_CORRUPT_RECORD:
		res, err = a.Request(ctx, b.Addr, &messages.FetchRequest{Topic: "bits", Partition: 0, MaxBytes: 1 << 20, CurrentLeaderEpoch: -1})
		if err != nil {
			t.Fatal(err)
		}
		if code := res.(*messages.FetchResponse).Error; code != messages.ErrorCode_STORAGE_ERROR {
			t.Fatalf("fetch after the damage was found: %v, want STORAGE_ERROR", code)
		}
	case messages.ErrorCode_STORAGE_ERROR:
	default:
		t.Fatalf("fetch from the corrupt partition: %v, want CORRUPT_RECORD or STORAGE_ERROR", code)
	}
	if recs := res.(*messages.FetchResponse).Batches; len(recs) > 0 {
		t.Fatalf("the corrupt partition served %d batches", len(recs))
	}
	if recs := consumeAll(t, b.Addr, "bits", 1); len(recs) != 1000 {
		t.Fatalf("partition 1 has %d records, want 1000", len(recs))
	}
	info, err := a.DescribeTopic(ctx, "bits")
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(info.Partitions[0].Err, client.ErrStorage) {
		t.Fatalf("describe shows %v for the corrupt partition", info.Partitions[0].Err)
	}
	// The CLI says why a record to it was not written, and where.
	_, stderr, code := runCLI(t, "lost\n", "produce", "bits", "--broker", b.Addr, "--partition", "0", "--timeout", "3s")
	if code == 0 || !strings.Contains(stderr, "STORAGE_ERROR") || !strings.Contains(stderr, "bits-0") {
		t.Fatalf("produce to the offline partition: exit %d, stderr:\n%s", code, stderr)
	}
	t.Logf("produce to the offline partition: %s", stderr)
	// The broker is alive and ready (the replica reported itself offline),
	// and says so in its metrics.
	web := httpAddr(t, b)
	for _, probe := range []string{"/healthz", "/readyz"} {
		if code, body, err := httpGet(web, probe); err != nil || code != 200 {
			t.Errorf("%s with an offline replica: %d %q %v", probe, code, body, err)
		}
	}
	if m := scrape(t, web); m["sluice_replicas_offline"] != 1 {
		t.Errorf("sluice_replicas_offline = %v, want 1", m["sluice_replicas_offline"])
	}
}

func rawBatch(values ...string) []byte {
	var b record.Builder
	b.Reset(record.NoProducer)
	for _, v := range values {
		b.Append(time.Now().UnixMilli(), nil, []byte(v), nil)
	}
	return append([]byte(nil), b.Finish()...)
}

// unknownMessage builds a message of a type only this test process knows.
func unknownMessage(t *testing.T) proto.Message {
	t.Helper()
	name := protoreflect.FullName("evil.Unknown")
	mt, err := protoregistry.GlobalTypes.FindMessageByName(name)
	if err != nil {
		fd, err := protodesc.NewFile(&descriptorpb.FileDescriptorProto{
			Name: proto.String("evil.proto"), Package: proto.String("evil"), Syntax: proto.String("proto3"),
			MessageType: []*descriptorpb.DescriptorProto{{Name: proto.String("Unknown")}},
		}, protoregistry.GlobalFiles)
		if err != nil {
			t.Fatal(err)
		}
		mt = dynamicpb.NewMessageType(fd.Messages().Get(0))
		if err := protoregistry.GlobalTypes.RegisterMessage(mt); err != nil {
			t.Fatal(err)
		}
	}
	return mt.New().Interface()
}

// With --auto-create-topics, producing to an unknown topic creates it with
// the broker's defaults.
func TestAutoCreateTopics(t *testing.T) {
	b := startBroker(t, "--auto-create-topics", "--default-partitions", "2")
	p, err := client.NewProducer(b.Addr, client.Acks(client.AllAcks))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, off, err := p.ProduceSync(ctx, &client.Record{Topic: "auto", Key: []byte("k"), Value: []byte("v")}); err != nil || off != 0 {
		t.Fatalf("produce to an auto-created topic: offset %d, %v", off, err)
	}
	md, err := newAdmin(t, b.Addr).Metadata(ctx, "auto")
	if err != nil || len(md.Topics[0].Partitions) != 2 {
		t.Fatalf("auto-created topic: %v %v", md, err)
	}
}

// topicDescribeRows parses the partition table of `sluice topic describe`:
// partition -> column -> value.
func topicDescribeRows(t *testing.T, out string) map[string]map[string]string {
	t.Helper()
	rows := map[string]map[string]string{}
	var header []string
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) > 0 && f[0] == "PARTITION":
			header = f
		case header != nil && len(f) >= len(header)-1: // the ERROR column may be empty
			r := map[string]string{}
			for i, col := range header {
				if i < len(f) {
					r[col] = f[i]
				}
			}
			rows[f[0]] = r
		}
	}
	return rows
}
