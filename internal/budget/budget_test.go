package budget

import (
	"context"
	"sync"
	"testing"
	"time"
)

// acquireAsync starts an Acquire in the background; its result comes on
// the channel.
func acquireAsync(b *Budget, source string, n int64) chan error {
	done := make(chan error, 1)
	go func() { done <- b.Acquire(context.Background(), source, n) }()
	return done
}

func waitingCount(b *Budget) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.waiting)
}

// untilWaiting blocks until n Acquire calls wait.
func untilWaiting(t *testing.T, b *Budget, n int) {
	t.Helper()
	for waitingCount(b) < n {
		time.Sleep(time.Millisecond)
	}
}

func TestGrantsUntilFullThenWaits(t *testing.T) {
	b := New(100, 0)
	if err := b.Acquire(context.Background(), "a", 60); err != nil {
		t.Fatal(err)
	}
	// Room is left: a request larger than what is left is granted whole.
	if err := b.Acquire(context.Background(), "b", 60); err != nil {
		t.Fatal(err)
	}
	if b.Used() != 120 {
		t.Fatalf("used %d, want 120", b.Used())
	}
	third := acquireAsync(b, "c", 1)
	untilWaiting(t, b, 1)
	b.Release("a", 60) // 60 used: room again
	if err := <-third; err != nil {
		t.Fatal(err)
	}
	if b.Used() != 61 || b.Waits() != 1 {
		t.Fatalf("used %d waits %d, want 61 and 1", b.Used(), b.Waits())
	}
}

// A source at its own limit waits while another source is served, and is
// served once its own bytes are released.
func TestPerSourceLimit(t *testing.T) {
	b := New(100, 30)
	if err := b.Acquire(context.Background(), "attacker", 30); err != nil {
		t.Fatal(err)
	}
	held := acquireAsync(b, "attacker", 10)
	untilWaiting(t, b, 1)
	if err := b.Acquire(context.Background(), "client", 10); err != nil {
		t.Fatal(err)
	}
	b.Release("client", 10)
	select {
	case <-held:
		t.Fatal("a source over its limit was granted after another source released")
	default:
	}
	b.Release("attacker", 30)
	if err := <-held; err != nil {
		t.Fatal(err)
	}
	if b.Used() != 10 {
		t.Fatalf("used %d, want 10", b.Used())
	}
}

func TestCancelledWaitCountsNothing(t *testing.T) {
	b := New(10, 0)
	b.Take("a", 10)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Acquire(ctx, "b", 5) }()
	untilWaiting(t, b, 1)
	cancel()
	if err := <-done; err != context.Canceled {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	b.Release("a", 10)
	if b.Used() != 0 || waitingCount(b) != 0 {
		t.Fatalf("used %d waiting %d after the cancelled wait, want 0 and 0", b.Used(), waitingCount(b))
	}
}

// Many sources acquiring and releasing at once never leave bytes counted.
func TestConcurrentBalance(t *testing.T) {
	b := New(1000, 300)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			src := string(rune('a' + i%3))
			for j := range 500 {
				n := int64(1 + (i*j)%200)
				if err := b.Acquire(context.Background(), src, n); err != nil {
					t.Error(err)
					return
				}
				b.Release(src, n)
			}
		}()
	}
	wg.Wait()
	if b.Used() != 0 || len(b.bySource) != 0 {
		t.Fatalf("used %d, by source %v after every release", b.Used(), b.bySource)
	}
}

func TestTryTakeWithinLimits(t *testing.T) {
	b := New(100, 60)
	if !b.TryTake("a", 60) || b.TryTake("a", 1) {
		t.Fatal("a source's limit is not kept")
	}
	if !b.TryTake("b", 40) || b.TryTake("c", 1) {
		t.Fatal("the budget's limit is not kept")
	}
	if b.Held("a") != 60 || b.Held("c") != 0 {
		t.Fatalf("held: a %d, c %d", b.Held("a"), b.Held("c"))
	}
	b.Release("a", 60)
	if !b.TryTake("c", 50) {
		t.Fatal("released bytes were not given back")
	}
}
