package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// tourCommands returns the shell lines of the README's five-minute tour.
func tourCommands(t *testing.T) []string { return readmeCommands(t, "## Five-minute tour") }

// readmeCommands returns the shell lines of the first sh block after the
// README's heading.
func readmeCommands(t *testing.T, heading string) []string {
	t.Helper()
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(readme), "\n"+heading+"\n")
	if !ok {
		t.Fatalf("README has no %q", heading)
	}
	_, rest, ok = strings.Cut(rest, "```sh\n")
	if !ok {
		t.Fatalf("%q has no sh block", heading)
	}
	block, _, _ := strings.Cut(rest, "```")
	var lines []string
	for _, l := range strings.Split(block, "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		lines = append(lines, l)
	}
	return lines
}

// The README's tour runs as written against a real broker, each command
// exiting 0. Two changes only: the binary is the one the tests built, and
// the benchmark's million records become 20,000 so the suite stays short.
func TestReadmeTour(t *testing.T) {
	b := startBroker(t)
	lines := tourCommands(t)
	if len(lines) < 8 {
		t.Fatalf("the tour has %d commands:\n%s", len(lines), strings.Join(lines, "\n"))
	}
	outputs := map[string]string{}
	for _, line := range lines {
		if strings.HasPrefix(line, "go build ") {
			continue
		}
		cmdLine := strings.ReplaceAll(line, "./sluice ", cliBin+" ")
		cmdLine = strings.ReplaceAll(cmdLine, "--records 1000000", "--records 20000")
		cmd := exec.Command("sh", "-c", cmdLine)
		cmd.Env = append(os.Environ(), "SLUICE_BROKER="+b.Addr)
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s: %v\n%s%s", line, err, out.String(), errOut.String())
		}
		outputs[line] = out.String()
	}

	got := func(prefix string) []string {
		for line, out := range outputs {
			if strings.HasPrefix(line, prefix) {
				return strings.Split(strings.TrimSpace(out), "\n")
			}
		}
		t.Fatalf("the tour has no %q", prefix)
		return nil
	}
	if l := got("./sluice consume events --from-beginning --max 5"); len(l) != 5 {
		t.Errorf("--max 5 printed %d lines: %q", len(l), l)
	}
	if l := got("./sluice consume events --partition 0 --offset 10 --max 3"); len(l) != 3 || !strings.HasPrefix(l[0], "visit ") {
		t.Errorf("partition 0 from offset 10 printed %q", l)
	}
	// Every record of the tour is younger than the time it asks for.
	for _, line := range got("./sluice topic offsets events --time") {
		if f := strings.Fields(line); len(f) != 3 || f[0] != "events" || f[2] != "0" {
			t.Errorf("topic offsets printed %q", line)
		}
	}
	l := got("./sluice consume events --partition 1 --offset -2 --to-end --format json")
	if len(l) != 2 {
		t.Fatalf("the last two records of partition 1: %q", l)
	}
	for _, line := range l {
		var r struct {
			Partition int32
			Key       string
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil || r.Partition != 1 || !strings.HasPrefix(r.Key, "user-") {
			t.Errorf("decoded %+v (%v) from %s", r, err, line)
		}
	}
}

// The README's consumer-group commands run as written, in order, against
// a broker with the tour's topic.
func TestReadmeGroupCommands(t *testing.T) {
	b := startBroker(t, "--group-initial-rebalance-delay", "100ms")
	b.cli("", "topic", "create", "events", "--partitions", "3")
	b.cli(strings.Repeat("a record\n", 100), "produce", "events")
	for _, line := range readmeCommands(t, "## Consumer groups") {
		cmd := exec.Command("sh", "-c", strings.ReplaceAll(line, "./sluice ", cliBin+" "))
		cmd.Env = append(os.Environ(), "SLUICE_BROKER="+b.Addr)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", line, err, out)
		}
		if strings.Contains(line, "--to-end") && strings.Count(string(out), "a record\n") != 100 {
			t.Fatalf("%s printed %d records, want 100", line, strings.Count(string(out), "a record\n"))
		}
	}
}

// The README's security commands run as written, in one shell, in a
// directory of their own: the broker line is started beside them (on a
// free port: the tests run brokers side by side), and the token that
// `user create` prints takes the place of the README's placeholder.
func TestReadmeSecurityCommands(t *testing.T) {
	lines := readmeCommands(t, "## Security: mutual TLS, principals and ACLs")
	dir := t.TempDir()
	bin := regexp.MustCompile(`(^|\s)sluice `)
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	shell := func(script string) string {
		t.Helper()
		cmd := exec.Command("sh", "-ec", script)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "SLUICE_BROKER="+addr)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", script, err, out)
		}
		return string(out)
	}
	// One shell for all but the broker, as a user's terminal: the exports
	// carry over from one part to the next.
	var script, exports []string
	for _, line := range lines {
		line = bin.ReplaceAllString(line, "${1}"+sluiceBin+" ")
		if strings.HasPrefix(line, "export ") {
			exports = append(exports, line)
		}
		switch {
		case strings.Contains(line, " broker "):
			shell(strings.Join(script, "\n"))
			script = slices.Clone(exports)
			args := strings.Fields(strings.TrimPrefix(strings.SplitN(line, "#", 2)[0], sluiceBin+" "))
			for i, a := range args {
				if strings.HasPrefix(a, "certs/") {
					args[i] = filepath.Join(dir, a) // the broker runs elsewhere
				}
			}
			b := &brokerProc{t: t, Addr: addr, Data: filepath.Join(dir, "data"), logs: &lockedBuffer{},
				args: append(args, "--addr", addr, "--http", "127.0.0.1:0", "--data", filepath.Join(dir, "data"))}
			b.start()
			t.Cleanup(b.kill)
		case strings.Contains(line, "user create"):
			out := shell(strings.Join(append(script, line), "\n"))
			script = slices.Clone(exports)
			token := regexp.MustCompile(`sluice_[A-Za-z0-9_-]+`).FindString(out)
			if token == "" {
				t.Fatalf("no token in %q", out)
			}
			for i := range lines {
				lines[i] = strings.ReplaceAll(lines[i], "sluice_...", token)
			}
		default:
			script = append(script, line)
		}
	}
	if out := shell(strings.Join(script, "\n")); !strings.Contains(out, "User:bob") {
		t.Fatalf("whoami printed %q", out)
	}
}
