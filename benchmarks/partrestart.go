package main

// The partitions suite's restart measurement.

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicemq/sluice/client"
)

// restart writes perPart bytes into each of n partitions, kills every
// broker with SIGKILL and starts them again (unclean), then stops them
// with SIGTERM and starts them again (clean), measuring each restart.
func (s *partSuite) restart(ctx context.Context, d deployment, c *sluiceCluster, dir string, n int, perPart int64) error {
	admin, err := s.newAdmin(c)
	if err != nil {
		return err
	}
	topic := fmt.Sprintf("restart-%d", n)
	if err := s.createTopic(ctx, d, admin, d.Name+"-restart", topic, n); err != nil {
		admin.Close()
		return err
	}
	admin.Close()
	acked, wanted, secs, werr := s.writeChunked(ctx, d, c, topic, n, perPart, 11)
	if werr != nil {
		return fmt.Errorf("writing %d records into %d partitions: %w", wanted, n, werr)
	}
	logf("[%s] restart: %d records into %d partitions in %.1f s", d.Name, acked, n, secs)
	perPartRecs := acked / int64(n)
	for i, mode := range []string{"unclean", "clean"} {
		client.Shutdown()
		res := partRestart{Deployment: d.Name, Mode: mode, Partitions: n, BytesPerPart: perPart, RecordsPerPart: perPartRecs}
		bs := brokers(c)
		if mode == "clean" {
			var wg sync.WaitGroup
			res.StopSeconds, res.StopExit = make([]float64, len(bs)), make([]string, len(bs))
			for j, p := range bs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					t := time.Now()
					p.stop(45 * time.Second)
					res.StopSeconds[j], res.StopExit[j] = time.Since(t).Seconds(), p.exitState()
				}()
			}
			wg.Wait()
		} else {
			for _, p := range bs {
				p.kill()
			}
		}
		start := time.Now()
		first := len(c.procs) - len(bs)
		for j, p := range bs {
			np, err := p.restart(fmt.Sprintf("%s-restart%d", p.name, i+1), dir)
			if err != nil {
				return err
			}
			c.procs[first+j] = np
		}
		s.measureRestart(ctx, d, c, topic, start, &res)
		s.rep.Restart = append(s.rep.Restart, res)
		logf("[%s] restart after %s, %d partitions: listening %.2f s, ready %.2f s, (a) metadata %.2f s, (b) all serving %.2f s%s, (d) high watermarks back %.2f s; %d of %d partitions short by %d records%s",
			d.Name, map[string]string{"clean": "SIGTERM", "unclean": "kill -9"}[mode], n, res.ListenSeconds, res.ReadySeconds,
			res.MetadataSeconds, res.ServingSeconds, map[bool]string{true: fmt.Sprintf(", (c) full ISR %.2f s", res.FullISRSeconds), false: ""}[d.RF > 1],
			res.HWSeconds, res.HWShort, res.HWChecked, res.RecordsShort, errSuffix(res.Err, false))
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	return nil
}

// measureRestart times restarted brokers from start: every one listening
// and ready, (a) the first metadata answer with every partition of topic,
// (b) every partition's leader answering ListOffsets, (c) with RF > 1 every
// ISR full; then it reads every high watermark against what was written.
func (s *partSuite) measureRestart(ctx context.Context, d deployment, c *sluiceCluster, topic string, start time.Time, res *partRestart) {
	rctx, cancel := context.WithTimeout(ctx, s.o.RestartTimeout)
	defer cancel()
	since := func() float64 { return time.Since(start).Seconds() }
	fail := func(format string, args ...any) {
		if res.Err == "" {
			res.Err = fmt.Sprintf(format, args...)
		}
	}
	n := res.Partitions
	// The log line, in the background: it is not on the clients' path.
	var readyAt atomic.Value
	readyDone := make(chan struct{})
	go func() {
		defer close(readyDone)
		var wg sync.WaitGroup
		var failed atomic.Bool
		for _, p := range brokers(c) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if p.waitLog(rctx, "sluice broker ready", s.o.RestartTimeout) != nil {
					failed.Store(true)
				}
			}()
		}
		wg.Wait()
		if !failed.Load() {
			readyAt.Store(since())
		}
	}()
	defer func() {
		select {
		case <-readyDone:
		case <-time.After(5 * time.Second):
		}
		if v, ok := readyAt.Load().(float64); ok {
			res.ReadySeconds = v
		}
	}()
	// Connect only once every port listens: a client's connection attempt
	// to a closed port would hold its endpoint back for a while.
	for _, addr := range c.addrs {
		for {
			conn, err := net.DialTimeout("tcp", addr, 100*time.Millisecond)
			if err == nil {
				conn.Close()
				break
			}
			if rctx.Err() != nil {
				fail("%s not listening after %s", addr, s.o.RestartTimeout)
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	res.ListenSeconds = since()
	admin, err := s.newAdmin(c)
	if err != nil {
		fail("%v", err)
		return
	}
	defer admin.Close()
	// (a)
	var lastErr string
	for {
		mctx, mcancel := context.WithTimeout(rctx, 2*time.Second)
		md, err := admin.Metadata(mctx, topic)
		mcancel()
		if err == nil {
			ok := false
			for _, t := range md.Topics {
				ok = ok || t.Name == topic && len(t.Partitions) == n
			}
			if ok {
				res.MetadataSeconds = since()
				break
			}
			lastErr = "topic not (fully) in the metadata"
		} else {
			lastErr = err.Error()
		}
		if rctx.Err() != nil {
			fail("no metadata answer within %s (last: %s)", s.o.RestartTimeout, lastErr)
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	// (b), (c) and (d): each round asks the metadata (leaders, ISRs), then
	// every partition whose high watermark is not back yet for it
	// (ListOffsets latest, from its leader: an answer is (b), the value (d)).
	hws := make([]int64, n)
	for i := range hws {
		hws[i] = -1
	}
	// (c) is the start of the stretch in which every ISR is full and every
	// replica has every record, held until the end: right after a restart
	// the metadata may still show the ISRs from before the stop.
	const hold = 2 * time.Second
	var fullSince time.Duration
	for {
		mctx, mcancel := context.WithTimeout(rctx, 5*time.Second)
		parts, err := s.partitionStates(mctx, admin, d, topic)
		mcancel()
		if err == nil {
			var pending []int32
			full := 0
			for _, p := range parts {
				if int(p.Partition) >= n {
					continue
				}
				if p.Leader >= 0 && len(p.ISR) >= int(d.RF) && caughtUp(p, res.RecordsPerPart) {
					full++
				}
				if hws[p.Partition] < res.RecordsPerPart && p.Leader >= 0 {
					pending = append(pending, p.Partition)
				}
			}
			if d.RF > 1 {
				if full < n {
					fullSince = 0
				} else if fullSince == 0 {
					fullSince = time.Since(start)
				}
			}
			parallel(pending, 16, func(part int32) {
				lctx, lcancel := context.WithTimeout(rctx, 2*time.Second)
				defer lcancel()
				if hw, err := admin.ListOffset(lctx, topic, part, -1); err == nil {
					hws[part] = max(hw, 0)
				}
			})
			serving, back := 0, 0
			for _, hw := range hws {
				if hw >= 0 {
					serving++
				}
				if hw >= res.RecordsPerPart {
					back++
				}
			}
			res.Serving = serving
			if serving == n && res.ServingSeconds == 0 {
				res.ServingSeconds = since()
			}
			if back == n && res.HWSeconds == 0 {
				res.HWSeconds = since()
			}
			lastErr = fmt.Sprintf("%d of %d partitions serving, %d with a full ISR, %d with their high watermark back", serving, n, full, back)
		} else {
			lastErr = err.Error()
		}
		if res.ServingSeconds > 0 && res.HWSeconds > 0 && (d.RF == 1 || fullSince > 0 && time.Since(start)-fullSince >= hold) {
			break
		}
		if rctx.Err() != nil {
			if res.ServingSeconds == 0 {
				fail("not every partition serving within %s (last: %s)", s.o.RestartTimeout, lastErr)
			} else {
				fail("not all done within %s (last: %s)", s.o.RestartTimeout, lastErr)
			}
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	res.FullISRSeconds = fullSince.Seconds()
	for _, hw := range hws {
		if hw >= 0 {
			res.HWChecked++
		}
		if hw >= 0 && hw < res.RecordsPerPart {
			res.HWShort++
			res.RecordsShort += res.RecordsPerPart - hw
		}
	}
}

// partitionStates returns the topic's partitions: from the metadata with
// RF=1, and with each replica's own log end offset (DescribeTopic) above.
func (s *partSuite) partitionStates(ctx context.Context, admin *client.Admin, d deployment, topic string) ([]client.PartitionInfo, error) {
	if d.RF > 1 {
		info, err := admin.DescribeTopic(ctx, topic)
		if err != nil {
			return nil, err
		}
		return info.Partitions, nil
	}
	md, err := admin.Metadata(ctx, topic)
	if err != nil {
		return nil, err
	}
	var out []client.PartitionInfo
	for _, t := range md.Topics {
		if t.Name != topic {
			continue
		}
		for _, p := range t.Partitions {
			out = append(out, client.PartitionInfo{Partition: p.Partition, Leader: p.Leader, ISR: p.ISR, Replicas: p.Replicas})
		}
	}
	return out, nil
}

// caughtUp reports whether every replica of p says it has want records.
func caughtUp(p client.PartitionInfo, want int64) bool {
	if len(p.Replicas) <= 1 {
		return true
	}
	for _, r := range p.Replicas {
		st := p.ReplicaStates[r]
		if st == nil || st.LogEndOffset < want {
			return false
		}
	}
	return true
}

// parallel calls f for every item, at most workers at a time.
func parallel[T any](items []T, workers int, f func(T)) {
	ch := make(chan T)
	var wg sync.WaitGroup
	for range min(workers, len(items)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for it := range ch {
				f(it)
			}
		}()
	}
	for _, it := range items {
		ch <- it
	}
	close(ch)
	wg.Wait()
}

// readMem reads a process's VmRSS, VmHWM, RssAnon and RssFile from
// /proc/PID/status and LazyFree from /proc/PID/smaps_rollup.
func readMem(pid int) memSample {
	var m memSample
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		m.Err = err.Error()
		return m
	}
	kb := func(line string) int64 {
		f := strings.Fields(line)
		if len(f) < 2 {
			return 0
		}
		v, _ := strconv.ParseInt(f[1], 10, 64)
		return v << 10
	}
	for _, line := range strings.Split(string(b), "\n") {
		switch {
		case strings.HasPrefix(line, "VmRSS:"):
			m.RSS = kb(line)
		case strings.HasPrefix(line, "VmHWM:"):
			m.HWM = kb(line)
		case strings.HasPrefix(line, "RssAnon:"):
			m.RssAnon = kb(line)
		case strings.HasPrefix(line, "RssFile:"):
			m.RssFile = kb(line)
		}
	}
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid)); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "LazyFree:") {
				m.LazyFree = kb(line)
			}
		}
	}
	return m
}
