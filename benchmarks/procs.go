package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sluicemq/sluice/internal/ports"
)

// proc is a server process the harness started. Every proc is stopped by
// stopAll on any exit path; Pdeathsig kills it should the harness itself die.
type proc struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	done    chan struct{}
	err     error
}

var (
	procsMu sync.Mutex
	procs   []*proc
)

// serverEnv is added to every server's environment: Go's runtime returns
// freed memory with MADV_FREE (the sluice binary sets this itself), so that
// no Go server pays page faults the others do not.
var serverEnv = []string{"GODEBUG=madvdontneed=0"}

// startProc starts bin with args, its output going to logDir/name.log.
func startProc(name, logDir, bin string, args ...string) (*proc, error) {
	logPath := filepath.Join(logDir, name+".log")
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), serverEnv...)
	cmd.Stdout, cmd.Stderr = logf, logf
	// Own process group: a Ctrl-C in the terminal reaches the harness only,
	// which then stops its servers in order.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, logPath: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		logf.Close()
		close(p.done)
	}()
	procsMu.Lock()
	procs = append(procs, p)
	procsMu.Unlock()
	vlogf("started %s (pid %d): %s %s", name, cmd.Process.Pid, bin, strings.Join(args, " "))
	return p, nil
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM, then SIGKILL after grace, and waits for the exit.
func (p *proc) stop(grace time.Duration) {
	defer p.forget()
	if p.exited() {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		vlogf("%s (pid %d) did not stop in %s; killing it", p.name, p.cmd.Process.Pid, grace)
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// kill sends SIGKILL (kill -9: no shutdown at all) and waits for the exit.
func (p *proc) kill() {
	defer p.forget()
	if p.exited() {
		return
	}
	_ = p.cmd.Process.Kill()
	<-p.done
}

// forget drops an exited process from the list stopAll works through.
func (p *proc) forget() {
	procsMu.Lock()
	defer procsMu.Unlock()
	for i, q := range procs {
		if q == p {
			procs = append(procs[:i], procs[i+1:]...)
			break
		}
	}
}

// restart starts p's command again (same binary and arguments, so the same
// data directory and address) as a new process logging to logDir/name.log.
func (p *proc) restart(name, logDir string) (*proc, error) {
	return startProc(name, logDir, p.cmd.Path, p.cmd.Args[1:]...)
}

// exitState describes how the process ended ("exit status 0", "signal: killed").
func (p *proc) exitState() string {
	if !p.exited() || p.cmd.ProcessState == nil {
		return ""
	}
	return p.cmd.ProcessState.String()
}

// stopAll stops every process still running, newest first.
func stopAll() {
	procsMu.Lock()
	ps := append([]*proc(nil), procs...)
	procsMu.Unlock()
	for i := len(ps) - 1; i >= 0; i-- {
		ps[i].stop(10 * time.Second)
	}
}

// tail returns the last n lines of the process's log.
func (p *proc) tail(n int) string {
	b, err := os.ReadFile(p.logPath)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// waitLog waits until the process's log has a line containing want.
func (p *proc) waitLog(ctx context.Context, want string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		if f, err := os.Open(p.logPath); err == nil {
			sc := bufio.NewScanner(f)
			sc.Buffer(make([]byte, 64<<10), 1<<20)
			for sc.Scan() {
				if strings.Contains(sc.Text(), want) {
					f.Close()
					return nil
				}
			}
			f.Close()
		}
		if p.exited() {
			return fmt.Errorf("%s exited (%v) before %q; log tail:\n%s", p.name, p.err, want, p.tail(20))
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: no %q within %s; log tail:\n%s", p.name, want, timeout, p.tail(20))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// freePorts returns n loopback ports free right now, picked as the tests
// pick theirs (below the ephemeral range, none twice).
func freePorts(n int) ([]int, error) { return ports.Free(n) }

// runCmd runs a command to completion in dir, returning combined output.
func runCmd(ctx context.Context, dir string, env []string, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.CombinedOutput()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) || ctx.Err() == nil {
			return string(out), fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, lastLines(string(out), 30))
		}
		return string(out), err
	}
	return string(out), nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
