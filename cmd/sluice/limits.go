package main

import (
	"log/slog"
	"os"
	"runtime/debug"
)

// setMemoryLimit gives the Go runtime a soft memory limit from the log
// memory budget, unless GOMEMLIMIT sets one: the logs hold at most the
// budget, and without a limit the collector lets the heap grow to twice
// what is live before it runs, so a broker whose logs hold 500 MB would
// sit at 1 GB. The rest of the broker (requests in flight, fetch answers,
// group state) gets 256 MiB more.
func setMemoryLimit(logger *slog.Logger, logMemory int64) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	limit := logMemory + 256<<20
	debug.SetMemoryLimit(limit)
	logger.Info("Go memory limit set", "bytes", limit, "from", "--log-memory-bytes (GOMEMLIMIT overrides)")
}
