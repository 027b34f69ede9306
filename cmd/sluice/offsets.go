package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/sluicemq/sluice/client"
)

// partitionFlag is a --partition flag: unset, or a partition number.
type partitionFlag struct {
	set bool
	n   int32
}

func (p *partitionFlag) String() string {
	if p == nil || !p.set {
		return ""
	}
	return strconv.Itoa(int(p.n))
}

func (p *partitionFlag) Set(s string) error {
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil || n < 0 {
		return fmt.Errorf("want a partition number, 0 or more")
	}
	p.set, p.n = true, int32(n)
	return nil
}

// startSpec is where consume starts in each partition, as --offset gives it.
type startSpec struct {
	kind string // "start", "end", "offset", "back" (n before the end), "time"
	n    int64  // the offset, the count back, or the timestamp in ms
}

const offsetHelp = `where to start in each partition: start, end, N (offset N), -N (N records before the end), @TIME (the first record at or after TIME: Unix ms or RFC 3339)`

// parseStart reads an --offset value.
func parseStart(s string) (startSpec, error) {
	switch s {
	case "start", "beginning", "earliest", "oldest":
		return startSpec{kind: "start"}, nil
	case "end", "latest", "newest":
		return startSpec{kind: "end"}, nil
	}
	if ts, ok := strings.CutPrefix(s, "@"); ok {
		ms, err := parseTimestamp(ts)
		if err != nil {
			return startSpec{}, err
		}
		return startSpec{kind: "time", n: ms}, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	switch {
	case err != nil:
		return startSpec{}, fmt.Errorf("%q: want start, end, N, -N or @TIME", s)
	case strings.HasPrefix(s, "-"):
		return startSpec{kind: "back", n: -n}, nil
	}
	return startSpec{kind: "offset", n: n}, nil
}

// parseTimestamp reads Unix milliseconds or an RFC 3339 time.
func parseTimestamp(s string) (int64, error) {
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil && ms >= 0 {
		return ms, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0, fmt.Errorf("time %q: want Unix milliseconds or RFC 3339 (2026-01-02T15:04:05Z)", s)
	}
	return t.UnixMilli(), nil
}

// partitionRange is a partition's first offset and end (its high
// watermark) when consume starts.
type partitionRange struct{ start, end int64 }

// resolve returns the offset to start at in a partition with range r, and
// for a timestamp asks the partition's leader.
func (s startSpec) resolve(ctx context.Context, admin *client.Admin, topic string, p int32, r partitionRange) (int64, error) {
	switch s.kind {
	case "start":
		return r.start, nil
	case "end":
		return r.end, nil
	case "back":
		return max(r.start, r.end-s.n), nil
	case "time":
		off, err := admin.ListOffset(ctx, topic, p, s.n)
		if err != nil {
			return 0, err
		}
		if off < 0 { // nothing at or after the time
			off = r.end
		}
		return off, nil
	}
	return s.n, nil
}
