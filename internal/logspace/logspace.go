// Package logspace spaces the log lines of one kind to at most one a
// second, so a peer that provokes them (refused connections, denied
// requests) cannot flood the log.
package logspace

import (
	"sync/atomic"
	"time"
)

// Every lets one line through per second. The zero value is ready; it is
// safe for concurrent use.
type Every struct {
	last atomic.Int64 // unix nanos of the last line let through
}

// Allow reports whether a line may be logged now, and if so counts it.
func (e *Every) Allow() bool {
	now, last := time.Now().UnixNano(), e.last.Load()
	return now-last >= int64(time.Second) && e.last.CompareAndSwap(last, now)
}
