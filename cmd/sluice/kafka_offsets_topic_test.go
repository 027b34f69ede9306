package main

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// __consumer_offsets holds Kafka's own record format: a tool that reads
// it as Burrow does (a plain consumer of the topic, decoding keys and
// values with Kafka's schemas) finds a group's committed offsets and its
// members with their subscriptions.
func TestKafkaOffsetsTopicFormat(t *testing.T) {
	b := startBroker(t, "--kafka-addr", "127.0.0.1:0", "--group-initial-rebalance-delay", "100ms")
	addr := kafkaAddr(t, b)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := kadm.NewClient(newKgo(t, addr)).CreateTopic(ctx, 1, 1, nil, "watched"); err != nil {
		t.Fatal(err)
	}
	producer := newKgo(t, addr)
	for i := range 5 {
		if err := producer.ProduceSync(ctx, &kgo.Record{Topic: "watched", Value: []byte{byte(i)}}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	consumer := newKgo(t, addr, kgo.ConsumerGroup("lagging"), kgo.ConsumeTopics("watched"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
	got := 0
	for got < 5 {
		fetches := consumer.PollFetches(ctx)
		if err := fetches.Err(); err != nil {
			t.Fatal(err)
		}
		got += fetches.NumRecords()
	}
	if err := consumer.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatal(err)
	}

	reader := newKgo(t, addr, kgo.ConsumeTopics("__consumer_offsets"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var committed int64 = -1
	var subscribed []string
	deadline := time.Now().Add(20 * time.Second)
	for (committed != 5 || subscribed == nil) && time.Now().Before(deadline) {
		pctx, pcancel := context.WithTimeout(ctx, time.Second)
		fetches := reader.PollFetches(pctx)
		pcancel()
		fetches.EachRecord(func(r *kgo.Record) {
			if len(r.Key) < 2 || r.Value == nil {
				return
			}
			switch r.Key[1] { // the key's version
			case 0, 1:
				var k kmsg.OffsetCommitKey
				var v kmsg.OffsetCommitValue
				if k.ReadFrom(r.Key) == nil && v.ReadFrom(r.Value) == nil && k.Group == "lagging" && k.Topic == "watched" {
					committed = v.Offset
				}
			case 2:
				var k kmsg.GroupMetadataKey
				var v kmsg.GroupMetadataValue
				if k.ReadFrom(r.Key) != nil || v.ReadFrom(r.Value) != nil || k.Group != "lagging" || len(v.Members) != 1 {
					return
				}
				var sub kmsg.ConsumerMemberMetadata
				if v.ProtocolType == "consumer" && sub.ReadFrom(v.Members[0].Subscription) == nil {
					subscribed = sub.Topics
				}
			}
		})
	}
	if committed != 5 || !slices.Equal(subscribed, []string{"watched"}) {
		t.Fatalf("decoded from __consumer_offsets: committed offset %d (want 5), member subscribed to %v", committed, subscribed)
	}
}
