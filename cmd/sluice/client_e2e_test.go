package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sluicemq/sluice/client"
	"github.com/sluicemq/sluice/messages"
	"github.com/sluicemq/sluice/messages/record"
)

// batchOfSize builds a one-record batch exactly n bytes long.
func batchOfSize(t *testing.T, n int) []byte {
	t.Helper()
	var b record.Builder
	value := n - record.HeaderSize
	for range 8 {
		b.Reset(record.NoProducer)
		b.Append(time.Now().UnixMilli(), nil, bytes.Repeat([]byte{'m'}, value), nil)
		got := len(b.Finish())
		if got == n {
			return append([]byte(nil), b.Finish()...)
		}
		value -= got - n
	}
	t.Fatalf("no batch of %d bytes", n)
	return nil
}

// A batch exactly at max.message.bytes goes through the real transport both
// ways (default 1 MiB, and the 16 MiB ceiling a topic may set); one byte
// more is refused with RECORD_TOO_LARGE and the broker keeps serving.
func TestLargestBatches(t *testing.T) {
	b := startBroker(t)
	a := newAdmin(t, b.Addr)
	createTopic(t, a, "big", 1, nil)
	createTopic(t, a, "huge", 1, map[string]string{"max.message.bytes": fmt.Sprint(16 << 20)})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	produce := func(topic string, batch []byte) *messages.ProduceResponse {
		t.Helper()
		res, err := a.Request(ctx, b.Addr, &messages.ProduceRequest{Topic: topic, Acks: 1, Records: batch})
		if err != nil {
			t.Fatalf("produce %d bytes to %s: %v", len(batch), topic, err)
		}
		return res.(*messages.ProduceResponse)
	}
	for _, tc := range []struct {
		topic string
		max   int
	}{{"big", 1 << 20}, {"huge", 16 << 20}} {
		if r := produce(tc.topic, batchOfSize(t, tc.max+1)); r.Error != messages.ErrorCode_RECORD_TOO_LARGE {
			t.Fatalf("%s: %d bytes answered %v, want RECORD_TOO_LARGE", tc.topic, tc.max+1, r.Error)
		}
		if r := produce(tc.topic, batchOfSize(t, tc.max)); r.Error != messages.ErrorCode_NONE || r.BaseOffset != 0 {
			t.Fatalf("%s: %d bytes answered %v %s at %d", tc.topic, tc.max, r.Error, r.ErrorMessage, r.BaseOffset)
		}
		recs := consumeAll(t, b.Addr, tc.topic, 0)
		if len(recs) != 1 || len(recs[0].Value) < tc.max-100 {
			t.Fatalf("%s: read back %d records", tc.topic, len(recs))
		}
	}
	// The producer's own batches at the 1 MiB default fill up and go through.
	p, err := client.NewProducer(b.Addr, client.Linger(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for i := range 64 {
		p.Produce(ctx, &client.Record{Topic: "big", Value: bytes.Repeat([]byte{byte(i)}, 64<<10)}, func(_ *client.Record, err error) {
			if err != nil {
				t.Errorf("64 KiB record: %v", err)
			}
		})
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if recs := consumeAll(t, b.Addr, "big", 0); len(recs) != 65 {
		t.Fatalf("big holds %d records, want 65", len(recs))
	}
}

// Consumers start where they are told: the end (only new records), a
// timestamp, an exact offset; acks=0 records are written without answers.
func TestConsumerStartsAndAcksZero(t *testing.T) {
	b := startBroker(t)
	a := newAdmin(t, b.Addr)
	createTopic(t, a, "seek", 1, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := client.NewProducer(b.Addr, client.Acks(client.LeaderAck))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	for i := range 10 {
		// Record i is stamped base + i minutes.
		r := &client.Record{Topic: "seek", Value: []byte(fmt.Sprint(i)), Timestamp: base.Add(time.Duration(i) * time.Minute)}
		if _, _, err := p.ProduceSync(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	first := func(o client.Offset) *client.Record {
		t.Helper()
		c, err := client.NewConsumer(b.Addr, client.ConsumePartitions(map[string]map[int32]client.Offset{"seek": {0: o}}),
			client.FetchMaxWait(200*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		for {
			f := c.PollFetches(ctx)
			for _, e := range f.Errors {
				t.Fatalf("consume from %v: %v", o, e.Err)
			}
			if len(f.Records) > 0 {
				return f.Records[0]
			}
			if ctx.Err() != nil {
				t.Fatalf("consume from %v: nothing", o)
			}
		}
	}
	if r := first(client.AtTimestamp(base.Add(4*time.Minute + time.Second))); r.Offset != 5 || !r.Timestamp.Equal(base.Add(5*time.Minute)) {
		t.Fatalf("from a timestamp: offset %d at %v, want offset 5", r.Offset, r.Timestamp)
	}
	if r := first(client.AtOffset(7)); r.Offset != 7 || string(r.Value) != "7" {
		t.Fatalf("from offset 7: offset %d %q", r.Offset, r.Value)
	}
	// acks=0: no answer is awaited, yet the record is written.
	p0, err := client.NewProducer(b.Addr, client.Acks(client.NoAck))
	if err != nil {
		t.Fatal(err)
	}
	defer p0.Close()
	p0.Produce(ctx, &client.Record{Topic: "seek", Value: []byte("fire-and-forget")}, nil)
	if err := p0.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	for {
		end, err := a.ListOffset(ctx, "seek", 0, -1)
		if err != nil {
			t.Fatal(err)
		}
		if end == 11 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if r := first(client.AtOffset(10)); string(r.Value) != "fire-and-forget" {
		t.Fatalf("the acks=0 record: offset %d %q", r.Offset, r.Value)
	}
	// From the end: the consumer sees only records produced after it
	// started. When exactly it looks up the end is its own business, so
	// records keep coming until one arrives.
	c, err := client.NewConsumer(b.Addr, client.ConsumePartitions(map[string]map[int32]client.Offset{"seek": {0: client.AtEnd()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for {
		if _, _, err := p.ProduceSync(ctx, &client.Record{Topic: "seek", Value: []byte("new")}); err != nil {
			t.Fatal(err)
		}
		pctx, pcancel := context.WithTimeout(ctx, 300*time.Millisecond)
		f := c.PollFetches(pctx)
		pcancel()
		if len(f.Records) > 0 {
			if r := f.Records[0]; r.Offset < 11 || string(r.Value) != "new" {
				t.Fatalf("from the end: first record at offset %d %q, want a new one (offset >= 11)", r.Offset, r.Value)
			}
			return
		}
		for _, e := range f.Errors {
			if !errors.Is(e.Err, context.DeadlineExceeded) {
				t.Fatal(e.Err)
			}
		}
		if ctx.Err() != nil {
			t.Fatal("nothing consumed from the end")
		}
	}
}

// acks=0 records are not answered, but Close waits until the leader has
// them: `sluice produce --acks 0` exits with nothing left in its transport.
func TestAcksZeroCloseDeliversEverything(t *testing.T) {
	b := startBroker(t)
	a := newAdmin(t, b.Addr)
	createTopic(t, a, "zero", 1, nil)
	// Enough that the transport still holds megabytes when Close is called.
	const total = 60_000
	line := strings.Repeat("z", 1000) + "\n"
	out, errOut, code := runCLI(t, strings.Repeat(line, total), "produce", "zero", "--acks", "0", "--broker", b.Addr)
	if code != 0 {
		t.Fatalf("produce --acks 0: exit %d\n%s%s", code, out, errOut)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for {
		end, err := a.ListOffset(ctx, "zero", 0, -1)
		if err != nil {
			t.Fatal(err)
		}
		if end == total {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%d of %d acks=0 records in the log after the producer exited", end, total)
		case <-time.After(20 * time.Millisecond):
		}
	}
}
