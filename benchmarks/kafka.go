package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// kafkaTarget drives a Kafka-protocol broker with franz-go: Sluice's Kafka
// listener, or franz-go's kfake as a peer on the same client.
type kafkaTarget struct {
	seeds      []string
	acks       kgo.Acks
	rf         int16
	configs    map[string]*string
	linger     time.Duration
	batchBytes int32
	admin      *kadm.Client
	adminCl    *kgo.Client
}

func newKafkaTarget(seeds []string, acks kgo.Acks, rf int16, configs map[string]*string, linger time.Duration, batchBytes int) (*kafkaTarget, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		return nil, err
	}
	return &kafkaTarget{seeds: seeds, acks: acks, rf: rf, configs: configs, linger: linger, batchBytes: int32(batchBytes),
		admin: kadm.NewClient(cl), adminCl: cl}, nil
}

func (t *kafkaTarget) close() { t.adminCl.Close() }

func (t *kafkaTarget) createTopic(ctx context.Context, topic string) error {
	cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	for {
		res, err := t.admin.CreateTopics(cctx, 1, t.rf, t.configs, topic)
		if err == nil {
			err = res[topic].Err
		}
		if err == nil || errors.Is(err, kerr.TopicAlreadyExists) {
			break
		}
		if cctx.Err() != nil {
			return fmt.Errorf("create topic %s: %w", topic, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	// Writable: a leader and the whole ISR.
	for {
		md, err := t.admin.ListTopics(cctx, topic)
		if err == nil {
			if p, ok := md[topic].Partitions[0]; ok && p.Err == nil && p.Leader >= 0 && len(p.ISR) >= int(t.rf) {
				return nil
			}
		}
		if cctx.Err() != nil {
			return fmt.Errorf("topic %s not ready: %v", topic, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (t *kafkaTarget) deleteTopic(ctx context.Context, topic string) error {
	res, err := t.admin.DeleteTopics(ctx, topic)
	if err != nil {
		return err
	}
	return res[topic].Err
}

type kafkaProducer struct {
	cl      *kgo.Client
	topic   string
	promise func(*kgo.Record, error)
}

func (t *kafkaTarget) newProducer(ctx context.Context, topic string, window int, onAck func([]byte, error)) (producer, error) {
	opts := []kgo.Opt{kgo.SeedBrokers(t.seeds...), kgo.RequiredAcks(t.acks), kgo.ProducerLinger(t.linger),
		kgo.ProducerBatchMaxBytes(t.batchBytes), kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.MaxBufferedRecords(window + 1), kgo.DefaultProduceTopic(topic)}
	if t.acks != kgo.AllISRAcks() {
		opts = append(opts, kgo.DisableIdempotentWrite()) // franz-go is idempotent only with acks=all
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, err
	}
	return &kafkaProducer{cl: cl, topic: topic, promise: func(r *kgo.Record, err error) { onAck(r.Value, err) }}, nil
}

func (p *kafkaProducer) send(ctx context.Context, v []byte) {
	p.cl.Produce(ctx, &kgo.Record{Topic: p.topic, Value: v}, p.promise)
}

func (p *kafkaProducer) flush(ctx context.Context) error { return p.cl.Flush(ctx) }
func (p *kafkaProducer) close()                          { p.cl.Close() }

type kafkaConsumer struct {
	cl     *kgo.Client
	cancel context.CancelFunc
	done   chan struct{}
}

func (t *kafkaTarget) newConsumer(ctx context.Context, topic string, onRecord func([]byte)) (consumer, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(t.seeds...), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithCancel(ctx)
	kc := &kafkaConsumer{cl: cl, cancel: cancel, done: make(chan struct{})}
	var reported sync.Once
	go func() {
		defer close(kc.done)
		for cctx.Err() == nil {
			f := cl.PollFetches(cctx)
			f.EachError(func(topic string, p int32, err error) {
				if cctx.Err() == nil && !errors.Is(err, context.Canceled) {
					reported.Do(func() { logf("kafka consumer %s-%d: %v", topic, p, err) })
				}
			})
			f.EachRecord(func(r *kgo.Record) { onRecord(r.Value) })
		}
	}()
	return kc, nil
}

func (c *kafkaConsumer) close() {
	c.cancel()
	<-c.done
	c.cl.Close()
}

// startKfake runs franz-go's kfake, an in-memory Kafka broker, in this
// process on a free port. It keeps records in memory and never fsyncs.
func startKfake() (*kfake.Cluster, string, error) {
	ports, err := freePorts(1)
	if err != nil {
		return nil, "", err
	}
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(ports[0]))
	if err != nil {
		return nil, "", err
	}
	return c, net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0])), nil
}
