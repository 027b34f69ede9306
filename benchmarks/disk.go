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

// fsyncLoop appends blockSize-byte writes to a fresh file, each followed by
// fdatasync, for d, and returns the number of write+fdatasync pairs per second.
func fsyncLoop(ctx context.Context, dir string, blockSize int, d time.Duration) (float64, error) {
	file := filepath.Join(dir, "fsync.bin")
	f, err := os.OpenFile(file, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return 0, err
	}
	defer os.Remove(file)
	defer f.Close()
	buf := make([]byte, blockSize)
	for i := range buf {
		buf[i] = byte(i * 7)
	}
	start := time.Now()
	n := 0
	for time.Since(start) < d && ctx.Err() == nil {
		if _, err := f.Write(buf); err != nil {
			return 0, err
		}
		if err := syscall.Fdatasync(int(f.Fd())); err != nil {
			return 0, err
		}
		n++
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	return float64(n) / time.Since(start).Seconds(), nil
}
