package main

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Client quotas set with kadm (AlterClientQuotas) and read back
// (DescribeClientQuotas) are enforced on the Kafka listener: a producer
// and a consumer over their byte rates are held to them (within 20%,
// measured after the first second's burst), while clients without a quota
// run at full speed beside them.
func TestKafkaClientQuotas(t *testing.T) {
	b := startBroker(t, "--kafka-addr", "127.0.0.1:0")
	addr := kafkaAddr(t, b)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	adm := kadm.NewClient(newKgo(t, addr))
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "quota"); err != nil {
		t.Fatal(err)
	}
	const produceRate, fetchRate = 200_000, 300_000
	name := func(s string) *string { return &s }
	altered, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{
		{Entity: kadm.ClientQuotaEntity{{Type: "client-id", Name: name("slow")}},
			Ops: []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: produceRate}}},
		{Entity: kadm.ClientQuotaEntity{{Type: "client-id", Name: name("slow-reader")}},
			Ops: []kadm.AlterClientQuotaOp{{Key: "consumer_byte_rate", Value: fetchRate}}},
		{Entity: kadm.ClientQuotaEntity{{Type: "user", Name: name("x")}},
			Ops: []kadm.AlterClientQuotaOp{{Key: "request_percentage", Value: 50}}},
	})
	if err != nil || len(altered) != 3 || altered[0].Err != nil || altered[1].Err != nil || !errors.Is(altered[2].Err, kerr.InvalidRequest) {
		t.Fatalf("AlterClientQuotas: %+v %v", altered, err)
	}
	described, err := adm.DescribeClientQuotas(ctx, true, []kadm.DescribeClientQuotaComponent{{Type: "client-id", MatchName: name("slow")}})
	if err != nil || len(described) != 1 || len(described[0].Values) != 1 || described[0].Values[0].Value != produceRate {
		t.Fatalf("DescribeClientQuotas: %+v %v", described, err)
	}
	if all, err := adm.DescribeClientQuotas(ctx, false, nil); err != nil || len(all) != 2 {
		t.Errorf("every quota: %+v %v", all, err)
	}

	// Two producers side by side for 8 s: "slow" has a quota, "fast" none.
	value := make([]byte, 10_000)
	run := func(clientID string, d time.Duration, after time.Duration) (rate float64) {
		// One record per batch and one request at a time: the quota's
		// steps are small (10 KB at 200 KB/s: 50 ms) next to the window.
		cl := newKgo(t, addr, kgo.ClientID(clientID), kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerLinger(0),
			kgo.ProducerBatchMaxBytes(int32(len(value))+1000), kgo.MaxProduceRequestsInflightPerBroker(1))
		var counted atomic.Int64
		start := time.Now()
		var wg sync.WaitGroup
		for time.Since(start) < d {
			wg.Add(1)
			cl.Produce(ctx, &kgo.Record{Topic: "quota", Value: value}, func(_ *kgo.Record, err error) {
				defer wg.Done()
				if err == nil && time.Since(start) > after {
					counted.Add(int64(len(value)))
				}
			})
			if n := cl.BufferedProduceRecords(); n > 50 {
				time.Sleep(5 * time.Millisecond)
			}
		}
		measured := time.Since(start) - after
		rate = float64(counted.Load()) / measured.Seconds()
		cl.PurgeTopicsFromProducing("quota")
		wg.Wait()
		return rate
	}
	var slow, fast float64
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); slow = run("slow", 8*time.Second, 2*time.Second) }()
	go func() { defer wg.Done(); fast = run("fast", 8*time.Second, 2*time.Second) }()
	wg.Wait()
	t.Logf("producers: slow %.0f bytes/s (quota %d), fast %.0f bytes/s", slow, produceRate, fast)
	if slow < 0.8*produceRate || slow > 1.2*produceRate {
		t.Errorf("the producer with a quota of %d bytes/s produced %.0f", produceRate, slow)
	}
	if fast < 5*produceRate {
		t.Errorf("the producer without a quota produced only %.0f bytes/s", fast)
	}

	// Two consumers of the same records: "slow-reader" has a quota.
	consume := func(clientID string, d, after time.Duration) float64 {
		cl := newKgo(t, addr, kgo.ClientID(clientID), kgo.ConsumeTopics("quota"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.FetchMaxBytes(100_000), kgo.FetchMaxPartitionBytes(100_000))
		var counted int64
		start := time.Now()
		for time.Since(start) < d {
			pctx, pcancel := context.WithTimeout(ctx, time.Second)
			fetches := cl.PollFetches(pctx)
			pcancel()
			fetches.EachRecord(func(r *kgo.Record) {
				if time.Since(start) > after {
					counted += int64(len(r.Value))
				}
			})
		}
		return float64(counted) / (time.Since(start) - after).Seconds()
	}
	var slowReader, fastReader float64
	wg.Add(2)
	go func() { defer wg.Done(); slowReader = consume("slow-reader", 7*time.Second, 2*time.Second) }()
	go func() { defer wg.Done(); fastReader = consume("fast-reader", 7*time.Second, 0) }()
	wg.Wait()
	t.Logf("consumers: slow-reader %.0f bytes/s (quota %d), fast-reader %.0f bytes/s", slowReader, fetchRate, fastReader)
	if slowReader < 0.8*fetchRate || slowReader > 1.2*fetchRate {
		t.Errorf("the consumer with a quota of %d bytes/s fetched %.0f", fetchRate, slowReader)
	}
	if fastReader < 3*fetchRate {
		t.Errorf("the consumer without a quota fetched only %.0f bytes/s", fastReader)
	}
}
