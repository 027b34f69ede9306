package main

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The machine may be shared (other builds and tests running): cpuMeter
// measures how much CPU went to processes that are neither the harness nor
// its children while a system was measured, so a disturbed run shows.

type cpuSnapshot struct {
	at   time.Time
	busy float64 // seconds of non-idle CPU, whole machine (/proc/stat)
	ours float64 // seconds of CPU of the harness and its reaped children
}

func takeCPU() cpuSnapshot {
	s := cpuSnapshot{at: time.Now()}
	if b, err := os.ReadFile("/proc/stat"); err == nil {
		line, _, _ := strings.Cut(string(b), "\n")
		f := strings.Fields(line)
		var total, idle float64
		for i, v := range f[1:] {
			n, _ := strconv.ParseFloat(v, 64)
			if i >= 8 { // guest time is already counted in user
				break
			}
			total += n
			if i == 3 || i == 4 { // idle, iowait
				idle += n
			}
		}
		s.busy = (total - idle) / 100 // USER_HZ
	}
	for _, who := range []int{syscall.RUSAGE_SELF, syscall.RUSAGE_CHILDREN} {
		var ru syscall.Rusage
		if syscall.Getrusage(who, &ru) == nil {
			s.ours += float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
		}
	}
	return s
}

// otherCPU is the share (0..1) of the machine's CPU that other processes
// used between a and b; valid once the children started after a have been
// reaped.
func otherCPU(a, b cpuSnapshot, cpus int) float64 {
	wall := b.at.Sub(a.at).Seconds()
	if wall <= 0 || cpus <= 0 {
		return 0
	}
	return max(0, (b.busy-a.busy)-(b.ours-a.ours)) / (wall * float64(cpus))
}
