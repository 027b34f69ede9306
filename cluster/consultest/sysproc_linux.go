package consultest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// sysProcAttr kills the agent if the test process dies without cleaning up
// (a panic, a test timeout), so agents do not outlive their tests. Its own
// process group keeps a terminal's ^C from reaching it before Stop does.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
}

// waitStopped waits until every thread of pid is stopped (stopped true) or
// none is: signals are delivered asynchronously, and a test that pauses
// the agent must not see it answer afterwards.
func waitStopped(pid int, stopped bool) error {
	deadline := time.Now().Add(5 * time.Second)
	for {
		if allStopped(pid) == stopped {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("consul agent %d: still not stopped=%v after 5s", pid, stopped)
		}
		time.Sleep(time.Millisecond)
	}
}

func allStopped(pid int) bool {
	stats, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/stat", pid))
	for _, path := range stats {
		data, err := os.ReadFile(path)
		if err != nil {
			continue // the thread exited
		}
		// The state follows the command name, which is in parentheses.
		rest := string(data[strings.LastIndexByte(string(data), ')')+1:])
		if f := strings.Fields(rest); len(f) == 0 || (f[0] != "T" && f[0] != "t") {
			return false
		}
	}
	return len(stats) > 0
}
