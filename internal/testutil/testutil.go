// Package testutil holds what the tests of several packages share: waiting
// for a condition, and loopback ports for the processes they start.
package testutil

import (
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Eventually runs check until it returns "" and fails t with its last
// answer once within has passed. It polls at a rate fitted to within:
// every 5 ms for a second, at most every 100 ms.
func Eventually(t testing.TB, within time.Duration, check func() string) {
	t.Helper()
	every := min(max(within/200, 5*time.Millisecond), 100*time.Millisecond)
	deadline := time.Now().Add(within)
	for {
		why := check()
		if why == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %s", within, why)
		}
		time.Sleep(every)
	}
}

// WaitFor is Eventually for a condition named what.
func WaitFor(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	Eventually(t, within, func() string {
		if cond() {
			return ""
		}
		return "timed out waiting for " + what
	})
}

// handedPorts are the ports FreePortRun gave out in this process, so two
// tests never get the same one.
var handedPorts = struct {
	sync.Mutex
	m map[int]bool
}{m: map[int]bool{}}

// FreePort returns a TCP port free on 127.0.0.1 right now.
func FreePort(t testing.TB) int {
	t.Helper()
	return FreePortRun(t, 0, 1)
}

// FreePortRun returns a port p with p-before .. p+after-1 all free on
// 127.0.0.1 right now. The ports are taken below the kernel's ephemeral
// range: a port inside it can be given meanwhile to an outgoing connection
// or a port-0 listener of another process, and a process started on it
// then fails with "address already in use".
func FreePortRun(t testing.TB, before, after int) int {
	t.Helper()
	lo, hi := portRange()
	handedPorts.Lock()
	defer handedPorts.Unlock()
	for attempt := 0; attempt < 500; attempt++ {
		p := lo + before + rand.IntN(hi-lo-before-after)
		free := true
		for q := p - before; q < p+after && free; q++ {
			if handedPorts.m[q] {
				free = false
				break
			}
			l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(q)))
			if err != nil {
				free = false
				break
			}
			l.Close()
		}
		if free {
			for q := p - before; q < p+after; q++ {
				handedPorts.m[q] = true
			}
			return p
		}
	}
	t.Fatal("no run of free ports")
	return 0
}

// portRange is where FreePortRun picks ports: from 10000 up to the start
// of the ephemeral range (or up to 60000 where that range leaves too
// little below it).
func portRange() (lo, hi int) {
	lo, hi = 10000, 60000
	raw, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return lo, hi
	}
	if f := strings.Fields(string(raw)); len(f) == 2 {
		if start, err := strconv.Atoi(f[0]); err == nil && start-lo >= 5000 {
			hi = start
		}
	}
	return lo, hi
}
