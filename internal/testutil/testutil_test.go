package testutil

import (
	"fmt"
	"net"
	"runtime"
	"strconv"
	"testing"
	"time"
)

func TestWaitForReturnsOnceTrue(t *testing.T) {
	n := 0
	WaitFor(t, time.Second, "three calls", func() bool { n++; return n == 3 })
	if n != 3 {
		t.Fatalf("%d calls", n)
	}
}

// A condition that never holds fails the test with what it waited for.
func TestEventuallyFails(t *testing.T) {
	ft := &fakeT{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		Eventually(ft, 50*time.Millisecond, func() string { return "never" })
	}()
	<-done
	if ft.failed != "after 50ms: never" {
		t.Fatalf("failure %q", ft.failed)
	}
}

// fakeT records Fatalf and ends the goroutine as testing.T does.
type fakeT struct {
	testing.TB
	failed string
}

func (f *fakeT) Helper() {}
func (f *fakeT) Fatalf(format string, args ...any) {
	f.failed = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// Ports handed out are distinct, free and below the ephemeral range; a
// run is free as a whole.
func TestFreePorts(t *testing.T) {
	_, hi := portRange()
	seen := map[int]bool{}
	for i := 0; i < 50; i++ {
		p := FreePort(t)
		if seen[p] || p >= hi {
			t.Fatalf("port %d (seen %v, limit %d)", p, seen[p], hi)
		}
		seen[p] = true
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			t.Fatalf("port %d is not free: %v", p, err)
		}
		l.Close()
	}
	p := FreePortRun(t, 3, 4)
	for q := p - 3; q < p+4; q++ {
		if seen[q] {
			t.Fatalf("run %d..%d overlaps a port handed out", p-3, p+3)
		}
	}
}
