package main

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicemq/sluice/client"
	"github.com/sluicemq/sluice/messages"
)

// recordingSubscriber is a push subscriber that keeps every record pushed
// to it and acknowledges it at once.
type recordingSubscriber struct {
	mu   sync.Mutex
	recs map[string]*messages.PushedRecord // by value
}

func (s *recordingSubscriber) Receive(ctx actor.Context) {
	m, ok := ctx.Message().(*messages.PushRecords)
	if !ok {
		return
	}
	s.mu.Lock()
	for _, r := range m.Records {
		s.recs[string(r.Value)] = r
	}
	s.mu.Unlock()
	ctx.Respond(&messages.PushCredit{Group: m.Group, MemberId: m.MemberId, Credit: int32(len(m.Records))})
	for _, r := range m.Records {
		ctx.Respond(&messages.PushAck{Group: m.Group, MemberId: m.MemberId, Generation: m.Generation,
			Topic: r.Topic, Partition: r.Partition, NextOffset: r.Offset + 1})
	}
}

func (s *recordingSubscriber) get(value string) *messages.PushedRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.recs[value]
}

// Records a Kafka client writes, compressed and with headers, reach a
// Sluice push subscriber byte for byte: key, value, headers, timestamp,
// partition and offset; a Kafka clients' group on the same topic reads
// every record as well.
func TestKafkaRecordsReachPushSubscribers(t *testing.T) {
	b := startBroker(t, "--kafka-addr", "127.0.0.1:0", "--group-initial-rebalance-delay", "100ms")
	addr := kafkaAddr(t, b)
	b.cli("", "topic", "create", "mixed", "--partitions", "2")
	sub := &recordingSubscriber{recs: map[string]*messages.PushedRecord{}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	system, err := client.System(testClientOpts...)
	if err != nil {
		t.Fatal(err)
	}
	pid := system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return sub }))
	defer system.Root.Stop(pid)
	subscription, err := client.Subscribe(ctx, b.Addr, "pushers", []string{"mixed"}, pid, sharedOpts(), client.SubscribeCredit(100))
	if err != nil {
		t.Fatal(err)
	}
	defer subscription.Close(context.Background())

	p := newKgo(t, addr, kgo.ProducerBatchCompression(kgo.ZstdCompression()))
	var sent []*kgo.Record
	for i := 0; i < 50; i++ {
		sent = append(sent, &kgo.Record{Topic: "mixed", Key: []byte(fmt.Sprintf("key-%d", i)), Value: []byte(fmt.Sprintf("value-%d", i)),
			Headers: []kgo.RecordHeader{{Key: "n", Value: []byte(fmt.Sprint(i))}, {Key: "bin", Value: []byte{0, 0xff, byte(i)}}}})
	}
	if err := p.ProduceSync(ctx, sent...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, func() string {
		for _, r := range sent {
			if sub.get(string(r.Value)) == nil {
				return fmt.Sprintf("%s not pushed yet", r.Value)
			}
		}
		return ""
	})
	// A Kafka clients' group reads the same topic at the same time and sees
	// every record too.
	kc := newKgo(t, addr, kgo.ConsumerGroup("kafka-readers"), kgo.ConsumeTopics("mixed"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	read := map[string]bool{}
	for len(read) < len(sent) {
		f := kc.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("the Kafka group read %d of %d records", len(read), len(sent))
		}
		f.EachRecord(func(r *kgo.Record) { read[string(r.Value)] = true })
	}
	for _, r := range sent {
		got := sub.get(string(r.Value))
		same := bytes.Equal(got.Key, r.Key) && got.TimestampMs == r.Timestamp.UnixMilli() &&
			got.Partition == r.Partition && got.Offset == r.Offset && len(got.Headers) == len(r.Headers)
		for i := 0; same && i < len(r.Headers); i++ {
			same = string(got.Headers[i].Key) == r.Headers[i].Key && bytes.Equal(got.Headers[i].Value, r.Headers[i].Value)
		}
		if !same {
			t.Fatalf("pushed %+v for sent %+v", got, r)
		}
	}
}
