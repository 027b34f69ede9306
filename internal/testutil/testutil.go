// Package testutil holds what the tests of several packages share: waiting
// for a condition, and loopback ports for the processes they start.
package testutil

import (
	"testing"
	"time"

	"github.com/sluicemq/sluice/internal/ports"
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

// FreePort returns a TCP port free on 127.0.0.1 right now.
func FreePort(t testing.TB) int {
	t.Helper()
	return FreePortRun(t, 0, 1)
}

// FreePortRun returns a port p with p-before .. p+after-1 all free on
// 127.0.0.1 right now, from below the kernel's ephemeral range and handed
// to no other test of the process (package ports).
func FreePortRun(t testing.TB, before, after int) int {
	t.Helper()
	p, err := ports.Run(before, after)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
