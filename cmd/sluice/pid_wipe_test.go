package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicemq/sluice/client"
	"github.com/sluicemq/sluice/messages"
)

// The metadata store is wiped between two writes of idempotent producers.
// Producer ids must not be handed out again: a new producer that reused the
// id, epoch and sequence of an earlier one would have its records answered
// as duplicates and dropped. Every acknowledged record is on the log
// afterwards; a producer that gets no id hears an error instead.
//
// Broker 2 is the controller and hands itself the first block of ids while
// broker 1 is down; the producers after the wipe ask broker 1, which has no
// block yet and asks the new controller for one.
func TestProducerIDsAfterMetadataWipe(t *testing.T) {
	for round := 1; round <= 2; round++ {
		t.Run(fmt.Sprint("round ", round), func(t *testing.T) { producerIDsAfterWipe(t) })
	}
}

func producerIDsAfterWipe(t *testing.T) {
	c := startCluster(t, 2)
	c.createTopic("wiped", 1, 2, map[string]string{"min.insync.replicas": "1"})
	b1 := c.brokers[1]
	b1.stop()
	produceOne := func(addr, value string) error {
		p, err := client.NewProducer(addr, sharedOpts(), client.Acks(client.AllAcks), client.WithPartitioner(client.ManualPartitioner()),
			client.DeliveryTimeout(20*time.Second))
		if err != nil {
			return err
		}
		defer p.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, _, err = p.ProduceSync(ctx, &client.Record{Topic: "wiped", Partition: 0, Value: []byte(value)})
		return err
	}
	c.waitFor("the write before the wipe", time.Minute, func() bool { return produceOne(c.brokers[2].Addr, "before") == nil })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	initID := func(addr string) (*messages.InitProducerIdResponse, error) {
		res, err := c.admin.Request(ctx, addr, &messages.InitProducerIdRequest{})
		if err != nil {
			return nil, err
		}
		return res.(*messages.InitProducerIdResponse), nil
	}
	before, err := initID(c.brokers[2].Addr)
	if err != nil || before.Error != messages.ErrorCode_NONE {
		t.Fatalf("producer id before the wipe: %v %v", before, err)
	}
	b1.start()
	c.waitFullyReplicated("wiped", time.Minute)
	if err := c.consul.RestartEmpty(); err != nil {
		t.Fatal(err)
	}
	// Broker 1 has no block of ids yet: it asks the controller of the
	// wiped store for one, until that refuses or answers.
	var after *messages.InitProducerIdResponse
	c.waitFor("broker 1's answer to InitProducerId after the wipe", time.Minute, func() bool {
		after, err = initID(b1.Addr)
		return err == nil && (after.Error == messages.ErrorCode_NONE || after.Error == messages.ErrorCode_INCONSISTENT_CLUSTER_ID)
	})
	if after.Error == messages.ErrorCode_NONE && after.ProducerId <= before.ProducerId {
		t.Fatalf("producer id %d handed out after the wipe; broker 2 had handed out %d and the ids of its block", after.ProducerId, before.ProducerId)
	}
	t.Logf("InitProducerId at broker 1 after the wipe: %v", after)
	var acked []string
	for i := 1; i <= 3; i++ {
		v := fmt.Sprintf("after-%d", i)
		if err := produceOne(b1.Addr, v); err != nil {
			t.Logf("%s not acknowledged: %v", v, err)
			continue
		}
		acked = append(acked, v)
	}
	var onLog []string
	for _, r := range c.consumeAll("wiped", 0) {
		onLog = append(onLog, string(r.Value))
	}
	if !slices.Contains(onLog, "before") {
		t.Fatalf("the record written before the wipe is gone: %q", onLog)
	}
	for _, v := range acked {
		if !slices.Contains(onLog, v) {
			t.Errorf("%s was acknowledged but is not on the log %q", v, onLog)
		}
	}
	for _, id := range c.ids() {
		if logs := c.brokers[id].logs.String(); strings.Contains(logs, "panic") {
			t.Fatalf("broker %d:\n%s", id, tail(logs, 40))
		}
	}
	t.Logf("acknowledged after the wipe: %q; the log: %q", acked, onLog)
}
