package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"runtime/pprof"
	"slices"
	"sync/atomic"
	"time"

	"github.com/sluicemq/sluice/client"
)

func runBench(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || (args[0] != "produce" && args[0] != "consume") {
		return usageErr("want produce or consume")
	}
	mode, args := args[0], args[1:]
	fs := newFlagSet("bench "+mode, stdout, stderr)
	conn := connFlags(fs)
	broker := conn.broker
	topic := fs.String("topic", "bench", "topic (created when missing)")
	records := fs.Int("records", 1_000_000, "number of records")
	size := fs.Int("size", 1024, "value size in bytes (random, incompressible)")
	partitions := fs.Int("partitions", 1, "partitions of the topic when it is created")
	replicas := fs.Int("replicas", 0, "replication factor of the topic when it is created (0: broker default)")
	acksFlag := fs.String("acks", "1", "0, 1 or all")
	batchBytes := fs.Int("batch-bytes", 1<<20, "producer batch size")
	linger := fs.Duration("linger", 0, "producer linger (0: a partition's records go out at once while none of its requests is in flight, and batch while one is)")
	inFlight := fs.Int("in-flight", 5, "produce requests in flight per partition")
	quiet := fs.Bool("quiet", false, "no progress line (drawn only on a terminal)")
	format := formatFlag(fs)
	cpuProfile := fs.String("cpu-profile", "", "write a CPU profile of this client process to FILE")
	compression := codecFlag(fs)
	if _, err := parseClientArgs(fs, conn, args); err != nil {
		return err
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	if *records < 1 || *size < 0 {
		return usageErr("--records must be >= 1 and --size >= 0")
	}
	logger := clientLogger(stderr)
	ctx := context.Background()
	admin, err := client.NewAdmin(*broker, conn.opt(logger))
	if err != nil {
		return err
	}
	err = admin.CreateTopic(ctx, client.TopicSpec{Name: *topic, Partitions: int32(*partitions), ReplicationFactor: int32(*replicas)})
	admin.Close()
	if err != nil && !errors.Is(err, client.ErrTopicAlreadyExists) {
		return err
	}
	var done meter
	stopProgress := func() {}
	if !*quiet {
		stopProgress = showProgress(stderr, "bench "+mode, int64(*records), &done)
	}
	var res benchResult
	if mode == "produce" {
		acks, err := parseAcks(*acksFlag)
		if err != nil {
			return err
		}
		res, err = benchProduce(ctx, *broker, *topic, *records, *size, &done, client.Acks(acks),
			client.BatchBytes(*batchBytes), client.Linger(*linger), client.MaxInFlight(*inFlight), client.Compression(compression.codec), conn.opt(logger))
		stopProgress()
		if err != nil {
			if res.records > 0 {
				res.print(stdout, mode, *format) // what was measured before the failures
			}
			return err
		}
	} else {
		res, err = benchConsume(ctx, *broker, *topic, *records, &done, conn.opt(logger))
		stopProgress()
		if err != nil {
			return err
		}
	}
	res.print(stdout, mode, *format)
	return nil
}

type benchResult struct {
	records   int
	bytes     int64
	elapsed   time.Duration
	latencies []time.Duration
	failed    int64
}

// benchJSON is the result of a benchmark as --format json prints it.
type benchJSON struct {
	Mode          string  `json:"mode"`
	Records       int     `json:"records"`
	Bytes         int64   `json:"bytes"`
	Seconds       float64 `json:"seconds"`
	RecordsPerSec float64 `json:"records_per_sec"`
	MBPerSec      float64 `json:"mb_per_sec"`
	// Produce: send to acknowledgement; consume: record timestamp to poll.
	LatencyP50Ms float64 `json:"latency_p50_ms"`
	LatencyP99Ms float64 `json:"latency_p99_ms"`
	LatencyMaxMs float64 `json:"latency_max_ms"`
	Failed       int64   `json:"failed"`
}

func (r benchResult) print(w io.Writer, mode string, format outputFormat) {
	secs := r.elapsed.Seconds()
	slices.Sort(r.latencies)
	q := func(f float64) time.Duration {
		if len(r.latencies) == 0 {
			return 0
		}
		return r.latencies[min(len(r.latencies)-1, int(f*float64(len(r.latencies))))]
	}
	if format.json() {
		ms := func(d time.Duration) float64 { return float64(d) / 1e6 }
		writeJSONLine(w, benchJSON{Mode: mode, Records: r.records, Bytes: r.bytes, Seconds: secs,
			RecordsPerSec: float64(r.records) / secs, MBPerSec: float64(r.bytes) / 1e6 / secs,
			LatencyP50Ms: ms(q(0.5)), LatencyP99Ms: ms(q(0.99)), LatencyMaxMs: ms(q(1)), Failed: r.failed})
		return
	}
	fmt.Fprintf(w, "%s: %d records, %d bytes in %.2f s\n", mode, r.records, r.bytes, secs)
	fmt.Fprintf(w, "  throughput: %.0f records/s, %.1f MB/s\n", float64(r.records)/secs, float64(r.bytes)/1e6/secs)
	if len(r.latencies) > 0 {
		what := "latency, send to acknowledgement"
		if mode == "consume" {
			what = "age at arrival, record timestamp to poll"
		}
		fmt.Fprintf(w, "  %s: p50 %s, p99 %s, max %s\n", what, fmtDur(q(0.5)), fmtDur(q(0.99)), fmtDur(q(1)))
	}
	if r.failed > 0 {
		fmt.Fprintf(w, "  failed: %d records\n", r.failed)
	}
}

func fmtDur(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/1e6) }

// randomPayloads returns a buffer of random bytes to slice record values from.
func randomPayloads(size int) []byte {
	buf := make([]byte, max(4<<20, 2*size))
	rng := rand.NewChaCha8([32]byte{1, 2, 3})
	_, _ = rng.Read(buf)
	return buf
}

func benchProduce(ctx context.Context, broker, topic string, n, size int, done *meter, opts ...client.ProducerOpt) (benchResult, error) {
	p, err := client.NewProducer(broker, opts...)
	if err != nil {
		return benchResult{}, err
	}
	payloads := randomPayloads(size)
	lat := make([]time.Duration, n)
	var idx, failed atomic.Int64
	var firstErr atomic.Value
	promise := func(r *client.Record, err error) {
		if err != nil {
			failed.Add(1)
			firstErr.CompareAndSwap(nil, err)
		}
		lat[idx.Add(1)-1] = time.Since(r.Timestamp)
		done.add(1, len(r.Value))
	}
	start := time.Now()
	off := 0
	for i := 0; i < n; i++ {
		if off+size > len(payloads) {
			off = 0
		}
		p.Produce(ctx, &client.Record{Topic: topic, Value: payloads[off : off+size : off+size], Timestamp: time.Now()}, promise)
		off += size + 1
	}
	if err := p.Flush(ctx); err != nil {
		return benchResult{}, err
	}
	elapsed := time.Since(start)
	p.Close()
	res := benchResult{records: n, bytes: int64(n) * int64(size), elapsed: elapsed, latencies: lat[:idx.Load()], failed: failed.Load()}
	if e, ok := firstErr.Load().(error); ok {
		return res, fmt.Errorf("%d of %d records failed; first error: %w", failed.Load(), n, e)
	}
	return res, nil
}

func benchConsume(ctx context.Context, broker, topic string, n int, done *meter, opts ...client.Opt) (benchResult, error) {
	admin, err := client.NewAdmin(broker, client.Options(opts...))
	if err != nil {
		return benchResult{}, err
	}
	md, err := admin.Metadata(ctx, topic)
	admin.Close()
	if err != nil {
		return benchResult{}, err
	}
	parts := map[int32]client.Offset{}
	for _, p := range md.Topics[0].Partitions {
		parts[p.Partition] = client.AtStart()
	}
	c, err := client.NewConsumer(broker, client.Options(opts...), client.ConsumePartitions(map[string]map[int32]client.Offset{topic: parts}))
	if err != nil {
		return benchResult{}, err
	}
	defer c.Close()
	res := benchResult{latencies: make([]time.Duration, 0, n)}
	start := time.Now()
	for res.records < n {
		pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		f := c.PollRecords(pctx, n-res.records)
		cancel()
		if len(f.Errors) > 0 {
			return res, fmt.Errorf("after %d records: partition %d: %w", res.records, f.Errors[0].Partition, f.Errors[0].Err)
		}
		now := time.Now()
		for _, r := range f.Records {
			res.bytes += int64(len(r.Value))
			res.latencies = append(res.latencies, now.Sub(r.Timestamp))
		}
		res.records += len(f.Records)
		done.records.Store(int64(res.records))
		done.bytes.Store(res.bytes)
	}
	res.elapsed = time.Since(start)
	return res, nil
}
