package testutil

import (
	"fmt"
	"runtime"
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
