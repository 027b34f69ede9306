package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// countingProxy forwards connections from its own address to target and
// counts the bytes both ways.
type countingProxy struct {
	ln    net.Listener
	bytes atomic.Int64
}

func startCountingProxy(t *testing.T, ln net.Listener, target string) *countingProxy {
	p := &countingProxy{ln: ln}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			wg.Add(2)
			pipe := func(dst, src net.Conn) {
				defer wg.Done()
				_, _ = io.Copy(countingWriter{dst, &p.bytes}, src)
				dst.Close()
				src.Close()
			}
			go pipe(s, c)
			go pipe(c, s)
		}
	}()
	return p
}

// total is the bytes forwarded so far, both ways.
func (p *countingProxy) total() int64 { return p.bytes.Load() }

// countingWriter adds what it writes to n.
type countingWriter struct {
	w io.Writer
	n *atomic.Int64
}

func (c countingWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n.Add(int64(n))
	return n, err
}

// A franz-go consumer of 1,000 idle partitions with fetch sessions (its
// default) moves far fewer bytes per fetch than one without: it names no
// partition and hears of none while nothing changes (KIP-227). Both
// consume through a proxy that counts the listener's bytes, for the same
// number of fetches.
func TestKafkaFetchSessions(t *testing.T) {
	proxyLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	listen := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	b := startBroker(t, "--kafka-addr", listen, "--kafka-advertise", proxyLn.Addr().String())
	b.cli("", "topic", "create", "many", "--partitions", "1000")
	proxy := startCountingProxy(t, proxyLn, listen)

	const fetches = 20
	measure := func(opts ...kgo.Opt) int64 {
		t.Helper()
		before := proxy.total()
		var n atomic.Int32
		hooks := kgo.WithHooks(fetchCounter{&n})
		cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(proxyLn.Addr().String()), kgo.ConsumeTopics("many"),
			kgo.FetchMaxWait(50 * time.Millisecond), hooks}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for n.Load() < fetches && ctx.Err() == nil {
			pctx, pcancel := context.WithTimeout(ctx, 200*time.Millisecond)
			cl.PollFetches(pctx)
			pcancel()
		}
		// Read before Close: what the client wrote and read so far has
		// passed the proxy (the answers it read were written by it).
		total := proxy.total() - before
		cl.Close()
		if ctx.Err() != nil {
			t.Fatalf("only %d fetches in a minute", n.Load())
		}
		return total / int64(n.Load())
	}
	sessionless := measure(kgo.DisableFetchSessions())
	sessions := measure()
	t.Logf("bytes per fetch of 1,000 idle partitions: %d without fetch sessions, %d with", sessionless, sessions)
	if sessions*5 > sessionless {
		t.Fatalf("with fetch sessions %d bytes per fetch, without %d: want less than a fifth", sessions, sessionless)
	}
}

// fetchCounter counts the fetch requests a client has had answered.
type fetchCounter struct{ n *atomic.Int32 }

func (f fetchCounter) OnBrokerRead(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if key == 1 && err == nil {
		f.n.Add(1)
	}
}
