package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"golang.org/x/sys/unix"
)

// The one load generator every system is driven by. A system plugs in
// through target; the generator alone decides what is sent, when, and how
// many records may be unacknowledged (the window), so every system sees the
// same record sizes, the same random payloads and the same in-flight bound.

// target is one running system under test.
type target interface {
	// createTopic makes a fresh topic (Sluice) or stream (NATS) with one
	// partition and returns once it accepts writes.
	createTopic(ctx context.Context, topic string) error
	deleteTopic(ctx context.Context, topic string) error
	// newProducer returns a producer whose every sent record ends in exactly
	// one onAck call (nil once the system acknowledged it durably as
	// configured). window is the generator's bound on unacknowledged
	// records; the producer must not hold back earlier than that.
	// onAck gets the record's value back (read-only).
	newProducer(ctx context.Context, topic string, window int, onAck func(value []byte, err error)) (producer, error)
	// newConsumer reads topic from its first record, calling onRecord with
	// each record's value, from one goroutine at a time.
	newConsumer(ctx context.Context, topic string, onRecord func(value []byte)) (consumer, error)
}

type producer interface {
	// send publishes value asynchronously. value must not be changed after.
	send(ctx context.Context, value []byte)
	// flush pushes out anything the client still holds back (a lingering batch).
	flush(ctx context.Context) error
	close()
}

type consumer interface{ close() }

// result is one measurement of one run.
type result struct {
	System string `json:"system"`
	Run    int    `json:"run"`
	Kind   string `json:"kind"` // produce, consume, latency
	Size   int    `json:"size"`
	Rate   int    `json:"rate,omitempty"` // offered records/s (latency)

	Records    int64   `json:"records"` // acknowledged (produce) or received (consume, latency)
	Seconds    float64 `json:"seconds"`
	RecsPerSec float64 `json:"records_per_s"`
	MBPerSec   float64 `json:"mb_per_s"`

	// Latency, ms, from the record's scheduled send time to its receipt by the consumer.
	P50     float64 `json:"p50_ms,omitempty"`
	P99     float64 `json:"p99_ms,omitempty"`
	P999    float64 `json:"p999_ms,omitempty"`
	Max     float64 `json:"max_ms,omitempty"`
	Samples int64   `json:"samples,omitempty"`
	// The same from scheduled send time to the producer's acknowledgement.
	AckP50  float64 `json:"ack_p50_ms,omitempty"`
	AckP99  float64 `json:"ack_p99_ms,omitempty"`
	AckP999 float64 `json:"ack_p999_ms,omitempty"`
	// Sent/Wanted: records sent of those the schedule asked for; Achieved is
	// the send rate the generator managed (records/s).
	Wanted   int64   `json:"wanted,omitempty"`
	Sent     int64   `json:"sent,omitempty"`
	Achieved float64 `json:"achieved_rate,omitempty"`

	// CPU seconds per GB (10^9 bytes of values) acknowledged, in the
	// servers' processes and in the harness's (the clients; kfake too).
	ServerCPUPerGB  float64 `json:"server_cpu_s_per_gb,omitempty"`
	HarnessCPUPerGB float64 `json:"harness_cpu_s_per_gb,omitempty"`

	Failed  int64  `json:"failed,omitempty"`  // records whose ack was an error
	Missing int64  `json:"missing,omitempty"` // acknowledged or sent but never consumed
	Capped  bool   `json:"capped,omitempty"`  // stopped by the time cap before all records were sent
	Err     string `json:"error,omitempty"`
}

// payloads hands out random (incompressible) values of one size, sliced from
// a 16 MiB random buffer at shifting offsets so no two neighbours are equal.
type payloads struct {
	buf  []byte
	size int
	off  int
}

func newPayloads(size int, seed uint64) *payloads {
	buf := make([]byte, 16<<20)
	var key [32]byte
	binary.LittleEndian.PutUint64(key[:], seed)
	_, _ = rand.NewChaCha8(key).Read(buf)
	return &payloads{buf: buf, size: size}
}

// next returns a value that aliases the shared buffer (read-only use).
func (p *payloads) next() []byte {
	if p.off+p.size > len(p.buf) {
		p.off = (p.off + 1) % 4096
	}
	v := p.buf[p.off : p.off+p.size : p.off+p.size]
	p.off += p.size + 1
	return v
}

// stamped returns a fresh copy of the next value with t (Unix ns) in its
// first 8 bytes.
func (p *payloads) stamped(t int64) []byte {
	v := append([]byte(nil), p.next()...)
	binary.LittleEndian.PutUint64(v, uint64(t))
	return v
}

// window bounds unacknowledged records: acquire before send, release on ack.
type window chan struct{}

func (w window) acquire(ctx context.Context) error {
	select {
	case w <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (w window) release() { <-w }

// acks counts a producer's outcomes.
type acks struct {
	ok, failed atomic.Int64
	first      atomic.Value
	changed    chan struct{} // poked (non-blocking) on every ack
}

func newAcks() *acks { return &acks{changed: make(chan struct{}, 1)} }

func (a *acks) record(err error) {
	if err != nil {
		a.failed.Add(1)
		a.first.CompareAndSwap(nil, err)
	} else {
		a.ok.Add(1)
	}
	select {
	case a.changed <- struct{}{}:
	default:
	}
}

func (a *acks) done() int64 { return a.ok.Load() + a.failed.Load() }

func (a *acks) firstErr() error {
	if e, ok := a.first.Load().(error); ok {
		return e
	}
	return nil
}

// waitAcks waits until n records have an outcome.
func (a *acks) wait(ctx context.Context, n int64, timeout time.Duration) error {
	deadline := time.After(timeout)
	for a.done() < n {
		select {
		case <-a.changed:
		case <-time.After(50 * time.Millisecond):
		case <-deadline:
			return fmt.Errorf("%d of %d records unanswered after %s", n-a.done(), n, timeout)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

type loadConfig struct {
	window   int
	maxPhase time.Duration // time cap of one produce or consume phase
	seed     uint64
	// stop, when not nil, ends a produce phase early once closed.
	stop <-chan struct{}
}

// runProduce sends n records of size bytes as fast as the window allows and
// measures acknowledged records per second.
func runProduce(ctx context.Context, t target, topic string, size, n int, cfg loadConfig) result {
	res := result{Kind: "produce", Size: size}
	a := newAcks()
	w := make(window, cfg.window)
	p, err := t.newProducer(ctx, topic, cfg.window, func(_ []byte, err error) { a.record(err); w.release() })
	if err != nil {
		res.Err = err.Error()
		return res
	}
	defer p.close()
	pl := newPayloads(size, cfg.seed)
	start := time.Now()
	sent := 0
	for sent < n {
		if sent&1023 == 0 && (time.Since(start) > cfg.maxPhase || stopped(cfg.stop)) {
			res.Capped = true
			break
		}
		if err := w.acquire(ctx); err != nil {
			res.Err = err.Error()
			return res
		}
		p.send(ctx, pl.next())
		sent++
	}
	if err := p.flush(ctx); err != nil {
		res.Err = err.Error()
	}
	if err := a.wait(ctx, int64(sent), time.Minute); err != nil {
		res.Err = err.Error()
	}
	elapsed := time.Since(start)
	res.Records, res.Failed, res.Sent = a.ok.Load(), a.failed.Load(), int64(sent)
	res.Seconds = elapsed.Seconds()
	res.RecsPerSec = float64(res.Records) / res.Seconds
	res.MBPerSec = float64(res.Records) * float64(size) / 1e6 / res.Seconds
	if e := a.firstErr(); e != nil && res.Err == "" {
		res.Err = fmt.Sprintf("%d records failed; first: %v", res.Failed, e)
	}
	return res
}

// stopped reports whether stop is closed (never, for nil).
func stopped(stop <-chan struct{}) bool {
	select {
	case <-stop:
		return true
	default:
		return false
	}
}

// runConsume reads n records from the start of topic and measures records
// per second, from creating the consumer to the n-th record.
func runConsume(ctx context.Context, t target, topic string, size int, n int64, cfg loadConfig) result {
	res := result{Kind: "consume", Size: size}
	var got, bytes atomic.Int64
	all := make(chan struct{})
	var once sync.Once
	start := time.Now()
	c, err := t.newConsumer(ctx, topic, func(v []byte) {
		bytes.Add(int64(len(v)))
		if got.Add(1) == n {
			once.Do(func() { close(all) })
		}
	})
	if err != nil {
		res.Err = err.Error()
		return res
	}
	select {
	case <-all:
	case <-time.After(cfg.maxPhase + 30*time.Second):
		res.Err = fmt.Sprintf("only %d of %d records consumed in %s", got.Load(), n, cfg.maxPhase+30*time.Second)
	case <-ctx.Done():
		res.Err = ctx.Err().Error()
	}
	elapsed := time.Since(start)
	c.close()
	res.Records = min(got.Load(), n)
	res.Missing = n - res.Records
	res.Seconds = elapsed.Seconds()
	res.RecsPerSec = float64(res.Records) / res.Seconds
	res.MBPerSec = float64(res.Records) * float64(size) / 1e6 / res.Seconds
	return res
}

type latencyConfig struct {
	loadConfig
	rate     int
	warmup   time.Duration // sent at the rate but not recorded
	duration time.Duration // recorded part
	drain    time.Duration // how long to wait for stragglers after the last send
	timeline bool          // log when the slow acks were
}

// runLatency sends records at a fixed rate (open loop: each record has a
// scheduled send time, stamped into its first 8 bytes) while a consumer
// reads them, and records scheduled-send-to-receipt latency in an
// HdrHistogram. Measuring from the schedule rather than the actual send
// counts the time a record waited behind a full window or a slow client
// (no coordinated omission).
func runLatency(ctx context.Context, t target, topic string, size int, cfg latencyConfig) result {
	res := result{Kind: "latency", Size: size, Rate: cfg.rate}
	if size < 8 {
		res.Err = "latency records need at least 8 bytes"
		return res
	}
	hist := hdrhistogram.New(1, 120_000_000, 3) // µs, 1 µs to 120 s
	var histMu sync.Mutex
	var got atomic.Int64
	probe := make(chan struct{}, 1)
	var recordFrom atomic.Int64
	recordFrom.Store(1 << 62)
	c, err := t.newConsumer(ctx, topic, func(v []byte) {
		now := time.Now().UnixNano()
		sched := int64(binary.LittleEndian.Uint64(v))
		if sched == 0 { // the probe
			select {
			case probe <- struct{}{}:
			default:
			}
			return
		}
		got.Add(1)
		if sched >= recordFrom.Load() {
			histMu.Lock()
			_ = hist.RecordValue(max(1, (now-sched)/1000))
			histMu.Unlock()
		}
	})
	if err != nil {
		res.Err = err.Error()
		return res
	}
	defer c.close()
	a := newAcks()
	w := make(window, cfg.window)
	ackHist := hdrhistogram.New(1, 120_000_000, 3)
	var ackMu sync.Mutex
	var slow []int64 // worst ack latency per 100 ms of schedule (timeline)
	p, err := t.newProducer(ctx, topic, cfg.window, func(v []byte, err error) {
		if err == nil && len(v) >= 8 {
			sched := int64(binary.LittleEndian.Uint64(v))
			if sched != 0 && sched >= recordFrom.Load() {
				lat := time.Now().UnixNano() - sched
				ackMu.Lock()
				_ = ackHist.RecordValue(max(1, lat/1000))
				if cfg.timeline {
					b := int((sched - recordFrom.Load()) / int64(100*time.Millisecond))
					for len(slow) <= b {
						slow = append(slow, 0)
					}
					slow[b] = max(slow[b], lat)
				}
				ackMu.Unlock()
			}
		}
		a.record(err)
		w.release()
	})
	if err != nil {
		res.Err = err.Error()
		return res
	}
	defer p.close()
	pl := newPayloads(size, cfg.seed)

	// One probe record end to end first: the consumer is attached and the
	// producer knows its leader before the clock starts.
	_ = w.acquire(ctx)
	p.send(ctx, pl.stamped(0))
	_ = p.flush(ctx)
	select {
	case <-probe:
	case <-time.After(30 * time.Second):
		res.Err = "probe record not consumed within 30 s"
		return res
	case <-ctx.Done():
		res.Err = ctx.Err().Error()
		return res
	}

	total := int64(float64(cfg.rate) * (cfg.warmup + cfg.duration).Seconds())
	res.Wanted = total
	interval := float64(time.Second) / float64(cfg.rate)
	start := time.Now()
	recordFrom.Store(start.Add(cfg.warmup).UnixNano())
	sendDeadline := start.Add(cfg.warmup + cfg.duration + 5*time.Second)
	var sent int64
	var lastSend time.Time
	// The sends keep a thread of their own, which sleeps in the kernel
	// until each send time: Go's timers woke the generator 0.6 ms late at
	// the median on a busy 2-core machine (0.1 ms so), and every system's
	// latency carried that.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for sent < total {
		sched := start.Add(time.Duration(float64(sent) * interval))
		sleepUntil(sched)
		if sent&255 == 0 && time.Now().After(sendDeadline) {
			res.Capped = true
			break
		}
		if err := w.acquire(ctx); err != nil {
			res.Err = err.Error()
			return res
		}
		p.send(ctx, pl.stamped(sched.UnixNano()))
		sent++
		lastSend = time.Now()
	}
	res.Sent = sent
	res.Achieved = float64(sent) / lastSend.Sub(start).Seconds()
	_ = p.flush(ctx)
	_ = a.wait(ctx, sent+1, cfg.drain)
	drainUntil := time.Now().Add(cfg.drain)
	for got.Load() < a.ok.Load()-1 && time.Now().Before(drainUntil) && ctx.Err() == nil {
		time.Sleep(10 * time.Millisecond)
	}
	res.Seconds = time.Since(start).Seconds()
	res.Records = got.Load()
	res.Failed = a.failed.Load()
	res.Missing = max(0, sent-res.Records-res.Failed)
	res.RecsPerSec = float64(res.Records) / res.Seconds
	res.MBPerSec = res.RecsPerSec * float64(size) / 1e6
	histMu.Lock()
	res.Samples = hist.TotalCount()
	if res.Samples > 0 {
		res.P50 = float64(hist.ValueAtQuantile(50)) / 1000
		res.P99 = float64(hist.ValueAtQuantile(99)) / 1000
		res.P999 = float64(hist.ValueAtQuantile(99.9)) / 1000
		res.Max = float64(hist.Max()) / 1000
	}
	histMu.Unlock()
	ackMu.Lock()
	if ackHist.TotalCount() > 0 {
		res.AckP50 = float64(ackHist.ValueAtQuantile(50)) / 1000
		res.AckP99 = float64(ackHist.ValueAtQuantile(99)) / 1000
		res.AckP999 = float64(ackHist.ValueAtQuantile(99.9)) / 1000
	}
	if cfg.timeline {
		var b strings.Builder
		for i, l := range slow {
			if l > int64(20*time.Millisecond) {
				fmt.Fprintf(&b, " %.1fs:%dms", float64(i)/10, l/1e6)
			}
		}
		logf("  timeline (records scheduled in 100 ms slices whose worst ack took > 20 ms):%s", b.String())
	}
	ackMu.Unlock()
	if e := a.firstErr(); e != nil && res.Err == "" {
		res.Err = fmt.Sprintf("%d records failed; first: %v", res.Failed, e)
	}
	if ctx.Err() != nil && res.Err == "" {
		res.Err = ctx.Err().Error()
	}
	return res
}

// sleepUntil returns at t or soon after, sleeping in the kernel
// (clock_nanosleep) rather than on a Go timer.
func sleepUntil(t time.Time) {
	for {
		d := time.Until(t)
		if d <= 0 {
			return
		}
		ts := unix.NsecToTimespec(int64(d))
		if err := unix.ClockNanosleep(unix.CLOCK_MONOTONIC, 0, &ts, nil); err != nil && err != unix.EINTR {
			time.Sleep(d)
			return
		}
	}
}
