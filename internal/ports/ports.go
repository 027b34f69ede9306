// Package ports hands out loopback TCP ports for the processes tests and
// benchmarks start: ports free right now, below the kernel's ephemeral
// range, never the same one twice in a process.
//
// A port inside the ephemeral range can be given, between the check and
// the start of the process, to an outgoing connection or a port-0 listener
// of another process; the process then fails with "address already in use".
package ports

import (
	"errors"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
)

// handed are the ports given out in this process.
var handed = struct {
	sync.Mutex
	m map[int]bool
}{m: map[int]bool{}}

// Run returns a port p with p-before .. p+after-1 all free on 127.0.0.1
// right now and handed to no one before.
func Run(before, after int) (int, error) {
	lo, hi := span()
	handed.Lock()
	defer handed.Unlock()
	for attempt := 0; attempt < 500; attempt++ {
		p := lo + before + rand.IntN(hi-lo-before-after)
		free := true
		for q := p - before; q < p+after && free; q++ {
			if handed.m[q] {
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
				handed.m[q] = true
			}
			return p, nil
		}
	}
	return 0, errors.New("no run of free loopback ports")
}

// Free returns n free ports (not necessarily next to each other).
func Free(n int) ([]int, error) {
	out := make([]int, 0, n)
	for range n {
		p, err := Run(0, 1)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// span is where ports are picked: from 10000 up to the start of the
// ephemeral range (or up to 60000 where that range leaves too little
// below it).
func span() (lo, hi int) {
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
