package logspace

import (
	"sync"
	"sync/atomic"
	"testing"
)

// Of many callers at once, one line goes through.
func TestOneLinePerSecond(t *testing.T) {
	var e Every
	var allowed atomic.Int64
	var wg sync.WaitGroup
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if e.Allow() {
				allowed.Add(1)
			}
		}()
	}
	wg.Wait()
	if allowed.Load() != 1 {
		t.Fatalf("%d lines allowed at once, want 1", allowed.Load())
	}
}
