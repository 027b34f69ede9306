package server

import (
	"log/slog"
	"syscall"
)

// brokerLimits are how many partition logs a broker opens at once and
// hosts in all, from its memory budget and open-files limit.
type brokerLimits struct {
	openFiles  uint64
	openLogs   int
	partitions int
}

const (
	// reservedFiles are descriptors kept for connections, the metadata
	// store and the syncs in flight.
	reservedFiles = 1000
	// partitionShare is the least of the log memory budget one hosted
	// partition may count on: at the limit, with every partition written at
	// once, the pool keeps the budget by closing logs rather than by
	// shrinking segments further.
	partitionShare = 128 << 10
)

// openFilesLimit is the process's soft RLIMIT_NOFILE (the Go runtime raises
// it to the hard limit at start); 0 when it cannot be read.
func openFilesLimit() uint64 {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0
	}
	return rl.Cur
}

// partitionLimits: every open log holds a descriptor (its segment being
// written) and one more while an fsync of it runs, so at most half of the
// descriptors left after reservedFiles go to open logs; a hosted partition
// needs a descriptor whenever it is in use, and partitionShare of the
// memory budget.
func partitionLimits(logMemory int64, openFiles uint64) brokerLimits {
	l := brokerLimits{openFiles: openFiles, partitions: int(logMemory / partitionShare)}
	if openFiles == 0 {
		return l // unknown: no descriptor limit
	}
	spare := int(max(int64(openFiles)-reservedFiles, 64))
	l.openLogs = max(spare/2, 32)
	l.partitions = min(l.partitions, spare)
	return l
}

// logLimits reports the limits at start, and warns when the open-files
// limit is what holds the partitions back.
func logLimits(logger *slog.Logger, l brokerLimits, maxPartitions int) {
	logger.Info("partition limits", "open_files_limit", l.openFiles, "open_logs_at_once", l.openLogs,
		"max_partitions", maxPartitions)
	if l.openFiles != 0 && int(l.openFiles)-reservedFiles < l.partitions*2 {
		logger.Warn("the open-files limit caps the partitions this broker can host; raise it (ulimit -n) for more",
			"open_files_limit", l.openFiles, "max_partitions", maxPartitions)
	}
}
