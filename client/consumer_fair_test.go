package client

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/sluicemq/sluice/messages"
	"github.com/sluicemq/sluice/messages/record"
)

// backlogBroker serves a topic of three partitions, each with a backlog of
// 1,000 records at offset 0; a fetch past them is never answered. It
// counts the fetches asked of each partition.
type backlogBroker struct {
	addr    string
	fetches [3]atomic.Int32
}

func (b *backlogBroker) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *messages.MetadataRequest:
		ctx.Respond(leaderMetadata(b.addr, 3))
	case *messages.ListOffsetsRequest:
		ctx.Respond(&messages.ListOffsetsResponse{Topic: m.Topic, Partition: m.Partition, Offset: 0})
	case *messages.FetchRequest:
		b.fetches[m.Partition].Add(1)
		if m.Offset > 1000 {
			ctx.Respond(&messages.FetchResponse{Topic: m.Topic, Partition: m.Partition, Error: messages.ErrorCode_OFFSET_OUT_OF_RANGE,
				ErrorMessage: "partition holds offsets 0 to 999"})
			return
		}
		if m.Offset != 0 {
			return // nothing more: the fetch times out
		}
		var bld record.Builder
		bld.Reset(record.NoProducer)
		for i := 0; i < 1000; i++ {
			bld.Append(time.Now().UnixMilli(), nil, []byte(strconv.Itoa(i)), nil)
		}
		batch := append([]byte(nil), bld.Finish()...)
		ctx.Respond(&messages.FetchResponse{Topic: m.Topic, Partition: m.Partition, HighWatermark: 1000, Batches: [][]byte{batch}})
	}
}

// startBacklog starts a node with a backlogBroker and a consumer of it.
func startBacklog(t *testing.T, opts ...ConsumerOpt) (*backlogBroker, *Consumer) {
	t.Helper()
	var fake *backlogBroker
	node := startFakeBroker(t, func(addr string) actor.Actor {
		fake = &backlogBroker{addr: addr}
		return fake
	})
	c, err := NewConsumer(node.Addr, append([]ConsumerOpt{WithActorSystem(node.System), RequestTimeout(5 * time.Second)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return fake, c
}

// A start offset given outside the partition's log is an error the poller
// hears, as the CLI's --offset is: the consumer does not move to another
// offset it was not given (the reset policy is for a position that falls
// out of the log later).
func TestGivenOffsetOutsideTheLogIsAnError(t *testing.T) {
	fake, c := startBacklog(t, ConsumePartitions(map[string]map[int32]Offset{"t": {0: AtOffset(5000)}}))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	f := c.PollFetches(ctx)
	if len(f.Records) > 0 || len(f.Errors) != 1 || !errors.Is(f.Errors[0].Err, ErrOffsetOutOfRange) ||
		!strings.Contains(f.Errors[0].Err.Error(), "0 to 999") {
		t.Fatalf("polled %d records, errors %v", len(f.Records), f.Errors)
	}
	if n := fake.fetches[0].Load(); n != 1 {
		t.Fatalf("%d fetches after the offset was refused", n)
	}
}

// Records buffered from several partitions come out of small polls from
// each of them in turn, not one partition's backlog first.
func TestPollsTakeFromEveryBufferedPartition(t *testing.T) {
	fake, c := startBacklog(t, ConsumePartitions(map[string]map[int32]Offset{"t": {0: AtOffset(0), 1: AtOffset(0), 2: AtOffset(0)}}))
	// A partition's second fetch is asked only once its first answer is
	// buffered: then every backlog waits to be polled.
	deadline := time.Now().Add(10 * time.Second)
	for fake.fetches[0].Load() < 2 || fake.fetches[1].Load() < 2 || fake.fetches[2].Load() < 2 {
		if time.Now().After(deadline) {
			t.Fatal("the consumer did not fetch every partition")
		}
		time.Sleep(5 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	seen := map[int32]int{}
	next := map[int32]int64{}
	for i := 0; i < 3; i++ {
		f := c.PollRecords(ctx, 30)
		if len(f.Errors) > 0 || len(f.Records) != 30 {
			t.Fatalf("poll %d: %d records, errors %v", i, len(f.Records), f.Errors)
		}
		for _, r := range f.Records {
			if r.Offset != next[r.Partition] {
				t.Fatalf("partition %d: offset %d after %d", r.Partition, r.Offset, next[r.Partition]-1)
			}
			next[r.Partition]++
			seen[r.Partition]++
		}
	}
	if len(seen) != 3 {
		t.Fatalf("90 records polled in threes of 30 came from partitions %v", seen)
	}
	t.Logf("records per partition: %v", seen)
}
