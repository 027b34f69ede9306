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

// cpuSplit is CPU seconds spent so far by the servers the harness started
// (their processes, alive or reaped) and by the harness process itself,
// which runs the clients (and kfake, in process).
type cpuSplit struct {
	servers, harness float64
}

// takeCPUSplit reads the CPU of every started server process from
// /proc/PID/stat (user and system time) and the harness's own from
// getrusage.
func takeCPUSplit() cpuSplit {
	var s cpuSplit
	procsMu.Lock()
	for _, p := range procs {
		if p.cmd.Process != nil {
			s.servers += procCPUSeconds(p.cmd.Process.Pid)
		}
	}
	procsMu.Unlock()
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		s.harness = float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
	}
	return s
}

// procCPUSeconds is the user and system CPU of process pid and of its
// reaped children (0 when it is gone).
func procCPUSeconds(pid int) float64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// Fields after the command name, which is in parentheses and may hold
	// spaces: state is field 3, utime 14, stime 15, cutime 16, cstime 17.
	_, rest, ok := strings.Cut(string(b), ") ")
	if !ok {
		return 0
	}
	f := strings.Fields(rest)
	if len(f) < 15 {
		return 0
	}
	var ticks float64
	for _, i := range []int{11, 12, 13, 14} {
		n, _ := strconv.ParseFloat(f[i], 64)
		ticks += n
	}
	return ticks / 100 // USER_HZ
}
