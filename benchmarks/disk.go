package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"syscall"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// ddCommand is the durable sequential write the other numbers are set against.
func ddArgs(file string, countMiB int) []string {
	return []string{"if=/dev/zero", "of=" + file, "bs=1M", "count=" + strconv.Itoa(countMiB), "conv=fdatasync"}
}

var ddRate = regexp.MustCompile(`(\d+) bytes .* copied, ([0-9.]+) s`)

// runDD runs dd with fdatasync and returns MB/s (10^6 bytes per second),
// computed from the byte count and seconds dd prints.
func runDD(ctx context.Context, dir string, countMiB int) (float64, error) {
	file := filepath.Join(dir, "dd.bin")
	defer os.Remove(file)
	out, err := runCmd(ctx, dir, []string{"LC_ALL=C"}, "dd", ddArgs(file, countMiB)...)
	if err != nil {
		return 0, err
	}
	m := ddRate.FindStringSubmatch(out)
	if m == nil {
		return 0, fmt.Errorf("cannot parse dd output: %q", out)
	}
	bytes, _ := strconv.ParseFloat(m[1], 64)
	secs, _ := strconv.ParseFloat(m[2], 64)
	if secs <= 0 {
		return 0, fmt.Errorf("dd reported %s s", m[2])
	}
	return bytes / secs / 1e6, nil
}

// fsyncResult is one run of the write+fdatasync loop.
type fsyncResult struct {
	PerSec float64 `json:"per_s"`
	// Latency of one write+fdatasync, ms.
	P50 float64 `json:"p50_ms"`
	P99 float64 `json:"p99_ms"`
	Max float64 `json:"max_ms"`
}

// fsyncLoop appends blockSize-byte writes to a fresh file, each followed by
// fdatasync, for d, and returns the number of write+fdatasync pairs per
// second and their latency.
func fsyncLoop(ctx context.Context, dir string, blockSize int, d time.Duration) (fsyncResult, error) {
	var res fsyncResult
	file := filepath.Join(dir, "fsync.bin")
	f, err := os.OpenFile(file, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return res, err
	}
	defer os.Remove(file)
	defer f.Close()
	hist := hdrhistogram.New(1, 60_000_000, 3)
	buf := make([]byte, blockSize)
	for i := range buf {
		buf[i] = byte(i * 7)
	}
	start := time.Now()
	n := 0
	for time.Since(start) < d && ctx.Err() == nil {
		t := time.Now()
		if _, err := f.Write(buf); err != nil {
			return res, err
		}
		if err := syscall.Fdatasync(int(f.Fd())); err != nil {
			return res, err
		}
		_ = hist.RecordValue(max(1, time.Since(t).Microseconds()))
		n++
	}
	if err := ctx.Err(); err != nil {
		return res, err
	}
	res.PerSec = float64(n) / time.Since(start).Seconds()
	res.P50 = float64(hist.ValueAtQuantile(50)) / 1000
	res.P99 = float64(hist.ValueAtQuantile(99)) / 1000
	res.Max = float64(hist.Max()) / 1000
	return res, nil
}
