package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sluicemq/sluice/internal/testutil"
)

// sluiceBin is the sluice binary built once for every test of this package;
// tests run brokers as real processes on 127.0.0.1. Under the race
// detector it is built with it, so that the brokers' races fail the tests.
var sluiceBin string

// cliBin is the sluice binary client commands run: without the race
// detector, whose start costs every command about a second (the client's
// races are found by the in-process tests of client and of this package).
// It is sluiceBin when the tests run without the race detector.
var cliBin string

// cliBinOf is where the client build lies beside bin.
func cliBinOf(bin string) string { return filepath.Join(filepath.Dir(bin), "cli", "sluice") }

func TestMain(m *testing.M) {
	// The test binary doubles as a consumer-group member process.
	if os.Getenv(memberEnv) != "" {
		os.Exit(runMember())
	}
	if os.Getenv(forgeEnv) != "" {
		os.Exit(runForger())
	}
	if os.Getenv(victimEnv) != "" {
		os.Exit(runVictim())
	}
	if os.Getenv(injectEnv) != "" {
		os.Exit(runInjector())
	}
	// A test that runs part of itself in a child test process hands it the
	// binary already built.
	if bin := os.Getenv(testBinEnv); bin != "" {
		sluiceBin, cliBin = bin, bin
		if _, err := os.Stat(cliBinOf(bin)); err == nil {
			cliBin = cliBinOf(bin)
		}
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "sluice-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	sluiceBin, cliBin = filepath.Join(dir, "sluice"), filepath.Join(dir, "sluice")
	builds := [][]string{{"build", "-o", sluiceBin}}
	if raceEnabled {
		cliBin = cliBinOf(sluiceBin)
		builds = [][]string{{"build", "-race", "-o", sluiceBin}, {"build", "-o", cliBin}}
	}
	errs := make(chan error, len(builds))
	for _, args := range builds {
		go func() {
			build := exec.Command("go", append(args, ".")...)
			build.Stdout, build.Stderr = os.Stderr, os.Stderr
			errs <- build.Run()
		}()
	}
	for range builds {
		if err := <-errs; err != nil {
			fmt.Fprintln(os.Stderr, "building sluice:", err)
			os.Exit(1)
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// soakEnv lengthens the tests that run faults for a while
// (SLUICE_SOAK=10m): longer runs find rarer interleavings.
const soakEnv = "SLUICE_SOAK"

// soak is how long such a test runs: SLUICE_SOAK when set, else def.
func soak(t *testing.T, def time.Duration) time.Duration {
	v := os.Getenv(soakEnv)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		t.Fatalf("%s=%q: want a duration such as 10m", soakEnv, v)
	}
	return d
}

// freePort returns a TCP port free on 127.0.0.1 right now, never handed
// to another test of this process.
func freePort(t *testing.T) int {
	t.Helper()
	return testutil.FreePort(t)
}

// brokerProc is one `sluice broker` process.
type brokerProc struct {
	t    *testing.T
	args []string
	env  []string // added to the process's environment
	// openFiles, when set, is the open-files limit (ulimit -n) the process
	// starts under.
	openFiles int
	// netns, when set, is the network namespace the process runs in.
	netns string
	Addr  string
	Data  string

	mu   sync.Mutex
	cmd  *exec.Cmd
	logs *lockedBuffer
	done chan struct{}
	// runs counts starts, so observers can tell one process run from the next.
	runs atomic.Int32
	// paused is set between pause and resume (SIGSTOP, SIGCONT).
	paused atomic.Bool
}

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// startBroker runs a broker with its own data directory and port; extra
// flags are appended. The process is killed when the test ends.
func startBroker(t *testing.T, extra ...string) *brokerProc {
	t.Helper()
	return startBrokerEnv(t, nil, extra...)
}

// startBrokerEnv is startBroker with extra environment variables.
func startBrokerEnv(t *testing.T, env []string, extra ...string) *brokerProc {
	t.Helper()
	return startBrokerAt(t, &brokerProc{t: t, Addr: fmt.Sprintf("127.0.0.1:%d", freePort(t)), env: env}, extra...)
}

// startBrokerAt starts b (its Addr, env and netns set) with extra flags.
func startBrokerAt(t *testing.T, b *brokerProc, extra ...string) *brokerProc {
	t.Helper()
	b.Data, b.logs = t.TempDir(), &lockedBuffer{}
	b.args = append([]string{"broker", "--data", b.Data, "--addr", b.Addr}, extra...)
	if !slices.Contains(extra, "--http") {
		// Not the default (the broker's port + 1000), which another test's
		// broker may have been handed as a free port meanwhile.
		b.args = append(b.args, "--http", "127.0.0.1:0")
	}
	b.start()
	t.Cleanup(func() {
		b.kill()
		if t.Failed() {
			t.Logf("broker %s log:\n%s", b.Addr, tail(b.logs.String(), 60))
		}
		// SLUICE_TEST_LOGS=DIR keeps every broker's whole log there.
		if dir := os.Getenv("SLUICE_TEST_LOGS"); dir != "" {
			name := strings.NewReplacer("/", "_", ":", "_").Replace(t.Name() + "-" + b.Addr + ".log")
			_ = os.WriteFile(filepath.Join(dir, name), []byte(b.logs.String()), 0o644)
		}
	})
	return b
}

// start launches the process and waits for its ready line.
func (b *brokerProc) start() {
	b.t.Helper()
	cmd := exec.Command(sluiceBin, b.args...)
	if b.netns != "" {
		cmd = exec.Command("ip", append([]string{"netns", "exec", b.netns, sluiceBin}, b.args...)...)
	}
	if b.openFiles > 0 {
		cmd = exec.Command("sh", append([]string{"-c", fmt.Sprintf(`ulimit -n %d && exec "$0" "$@"`, b.openFiles), sluiceBin}, b.args...)...)
	}
	cmd.Env = append(os.Environ(), b.env...)
	pr, pw := io.Pipe()
	cmd.Stdout = b.logs
	cmd.Stderr = io.MultiWriter(b.logs, pw)
	if err := cmd.Start(); err != nil {
		b.t.Fatal(err)
	}
	done := make(chan struct{})
	b.mu.Lock()
	b.cmd, b.done = cmd, done
	b.mu.Unlock()
	b.runs.Add(1)
	b.paused.Store(false)
	go func() {
		cmd.Wait()
		pw.Close()
		close(done)
	}()
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		found := false
		for sc.Scan() {
			if !found && strings.Contains(sc.Text(), "sluice broker ready") {
				found = true
				ready <- true
			}
		}
		if !found {
			ready <- false
		}
		io.Copy(io.Discard, pr)
	}()
	select {
	case ok := <-ready:
		if !ok {
			b.t.Fatalf("broker exited before it was ready:\n%s", b.logs.String())
		}
	case <-time.After(60 * time.Second):
		b.t.Fatalf("broker not ready after 60 s:\n%s", b.logs.String())
	}
}

func (b *brokerProc) signal(sig syscall.Signal) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cmd != nil && b.cmd.Process != nil {
		_ = b.cmd.Process.Signal(sig)
	}
}

// pause stops the process with SIGSTOP (a zombie: alive, silent) and
// waits until the kernel reports it stopped: the signal is asynchronous.
func (b *brokerProc) pause() {
	b.paused.Store(true)
	b.signal(syscall.SIGSTOP)
	b.mu.Lock()
	pid := b.cmd.Process.Pid
	b.mu.Unlock()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		// The state is the field after the parenthesised command name.
		if i := bytes.LastIndexByte(stat, ')'); err == nil && i > 0 && i+2 < len(stat) && stat[i+2] == 'T' {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	b.t.Fatalf("broker %s did not stop after SIGSTOP", b.Addr)
}

// resume continues a paused process.
func (b *brokerProc) resume() {
	b.signal(syscall.SIGCONT)
	b.paused.Store(false)
}

// kill9 kills the broker without warning and waits for it to be gone.
func (b *brokerProc) kill9() {
	b.signal(syscall.SIGKILL)
	b.wait(10 * time.Second)
}

// kill stops a possibly paused process at test end.
func (b *brokerProc) kill() {
	b.signal(syscall.SIGCONT)
	b.kill9()
}

// stop sends SIGTERM and waits for a clean exit.
func (b *brokerProc) stop() {
	b.t.Helper()
	b.signal(syscall.SIGTERM)
	if !b.wait(30 * time.Second) {
		b.t.Fatal("broker did not stop after SIGTERM")
	}
	if code := b.cmd.ProcessState.ExitCode(); code != 0 {
		b.t.Fatalf("broker exited with %d after SIGTERM", code)
	}
}

func (b *brokerProc) wait(d time.Duration) bool {
	b.mu.Lock()
	done := b.done
	b.mu.Unlock()
	if done == nil {
		return true
	}
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}

// alive reports whether the process is still running.
func (b *brokerProc) alive() bool {
	b.mu.Lock()
	done := b.done
	b.mu.Unlock()
	select {
	case <-done:
		return false
	default:
		return true
	}
}

func tail(s string, lines int) string {
	parts := strings.Split(s, "\n")
	if len(parts) > lines {
		parts = parts[len(parts)-lines:]
	}
	return strings.Join(parts, "\n")
}

// cli runs a sluice client command against this broker and returns its
// standard output; a non-zero exit fails the test.
func (b *brokerProc) cli(stdin string, args ...string) string {
	b.t.Helper()
	out, errOut, code := runCLI(b.t, stdin, append(args, "--broker", b.Addr)...)
	if code != 0 {
		b.t.Fatalf("sluice %v: exit %d\n%s%s", args, code, out, errOut)
	}
	return out
}

// runCLI runs the sluice binary with args and stdin, returning stdout,
// stderr and the exit code.
func runCLI(t *testing.T, stdin string, args ...string) (string, string, int) {
	t.Helper()
	return runCLIEnv(t, nil, stdin, args...)
}

// runCLIEnv is runCLI with more environment variables.
func runCLIEnv(t *testing.T, env []string, stdin string, args ...string) (string, string, int) {
	t.Helper()
	bin := cliBin
	if len(args) > 0 && args[0] == "broker" {
		bin = sluiceBin
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}
