package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluicemq/sluice/cluster/consultest"
	"github.com/sluicemq/sluice/internal/testutil"
)

// TestDevClusterSurvivesKill runs `sluice dev-cluster`, kills one of its
// brokers with SIGKILL, and checks that the other two keep serving produce
// and consume (bootstrapped with the dead broker first) and that the killed
// broker is started again and rejoins every ISR.
func TestDevClusterSurvivesKill(t *testing.T) {
	consulBin, err := consultest.Binary()
	if err != nil {
		t.Fatal(err)
	}
	consulPort := testutil.FreePortRun(t, 200, 1)
	basePort := testutil.FreePortRun(t, 0, 6) // brokers, then their Kafka listeners
	kafkaBase := basePort + 3
	out := &lockedBuffer{}
	dir := t.TempDir()
	dc := exec.Command(sluiceBin, "dev-cluster", "--dir", dir, "--consul-bin", consulBin,
		"--consul-port", strconv.Itoa(consulPort), "--base-port", strconv.Itoa(basePort), "--kafka-base-port", strconv.Itoa(kafkaBase),
		"--cluster", "dctest", "--restart-delay", "2s")
	dc.Stdout, dc.Stderr = out, out
	if err := dc.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- dc.Wait() }()
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = dc.Process.Signal(syscall.SIGINT)
			select {
			case <-exited:
			case <-time.After(60 * time.Second):
				_ = dc.Process.Kill()
			}
		}
		if t.Failed() {
			t.Logf("dev-cluster output:\n%s", out.String())
			logs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
			for _, l := range logs {
				b, _ := os.ReadFile(l)
				t.Logf("%s:\n%s", filepath.Base(l), tail(string(b), 30))
			}
		}
	})
	waitOutput := func(what string, re *regexp.Regexp, timeout time.Duration) []string {
		t.Helper()
		deadline := time.Now().Add(timeout)
		for time.Now().Before(deadline) {
			if m := re.FindStringSubmatch(out.String()); m != nil {
				return m
			}
			select {
			case err := <-exited:
				t.Fatalf("dev-cluster exited while waiting for %s: %v", what, err)
			case <-time.After(100 * time.Millisecond):
			}
		}
		t.Fatalf("no %s after %s", what, timeout)
		return nil
	}
	waitOutput("start", regexp.MustCompile(`Ctrl-C stops the cluster`), 2*time.Minute)
	pids := map[int]int{}
	for _, m := range regexp.MustCompile(`(?m)^broker (\d) (\S+) pid (\d+)`).FindAllStringSubmatch(out.String(), -1) {
		id, _ := strconv.Atoi(m[1])
		pids[id], _ = strconv.Atoi(m[3])
	}
	if len(pids) != 3 {
		t.Fatalf("want three brokers with pids in the output, got %v", pids)
	}
	m := regexp.MustCompile(`export SLUICE_BROKER=(\S+)`).FindStringSubmatch(out.String())
	if m == nil || len(strings.Split(m[1], ",")) != 3 {
		t.Fatalf("want the three brokers in the export line")
	}
	seeds := m[1]
	if !strings.Contains(out.String(), fmt.Sprintf("Kafka clients: 127.0.0.1:%d,127.0.0.1:%d,127.0.0.1:%d", kafkaBase, kafkaBase+1, kafkaBase+2)) {
		t.Errorf("the Kafka listeners are not printed")
	}

	cli := func(stdin string, args ...string) string {
		t.Helper()
		o, e, code := runCLI(t, stdin, append(args, "--broker", seeds)...)
		if code != 0 {
			t.Fatalf("sluice %v: exit %d\n%s%s", args, code, o, e)
		}
		return o
	}
	// The brokers register with Consul a moment after they listen.
	deadline := time.Now().Add(time.Minute)
	for {
		_, e, code := runCLI(t, "", "topic", "create", "orders", "--partitions", "3", "--replicas", "3", "--broker", seeds)
		if code == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("topic create: %s", e)
		}
		time.Sleep(500 * time.Millisecond)
	}
	var lines []string
	for i := 0; i < 60; i++ {
		lines = append(lines, fmt.Sprintf("r%d", i))
	}
	cli(strings.Join(lines[:30], "\n")+"\n", "produce", "orders", "--acks", "all")

	if err := syscall.Kill(pids[1], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitOutput("the kill reported", regexp.MustCompile(fmt.Sprintf(`broker 1 \(pid %d\) exited: signal: killed; the other brokers keep serving`, pids[1])), 30*time.Second)
	// The dead broker is first in the bootstrap list.
	cli(strings.Join(lines[30:], "\n")+"\n", "produce", "orders", "--acks", "all")
	got := cli("", "consume", "orders", "--from-beginning", "--max", "60")
	if n := len(strings.Fields(got)); n != 60 {
		t.Fatalf("consumed %d records, want 60:\n%s", n, got)
	}

	m2 := waitOutput("the restart", regexp.MustCompile(`broker 1 started again \(pid (\d+)\)`), time.Minute)
	if m2[1] == strconv.Itoa(pids[1]) {
		t.Fatalf("restarted broker has the old pid")
	}
	// Broker 1 rejoins the ISR of every partition.
	deadline = time.Now().Add(2 * time.Minute)
	for {
		desc := cli("", "topic", "describe", "orders")
		if isrHasAll(desc, 3) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("broker 1 did not rejoin every ISR:\n%s", desc)
		}
		time.Sleep(time.Second)
	}

	// A partition added to the replicated topic gets three replicas and
	// takes acks=all writes.
	cli("", "topic", "add-partitions", "orders", "--to", "4")
	cli("added\n", "produce", "orders", "--partition", "3", "--acks", "all")
	d := decodeLines[topicDescJSON](t, cli("", "topic", "describe", "orders", "--format", "json"))[0]
	if len(d.Partitions) != 4 || len(d.Partitions[3].Replicas) != 3 || d.Partitions[3].HighWatermark != 1 {
		t.Errorf("after add-partitions: %+v", d.Partitions)
	}

	// Every broker reports its version through Consul; the store is named.
	info := decodeLines[clusterJSON](t, cli("", "cluster", "info", "--format", "json"))[0]
	if len(info.Brokers) != 3 || info.Controller < 1 || !strings.HasPrefix(info.MetadataStore, fmt.Sprintf("consul 127.0.0.1:%d", consulPort)) {
		t.Errorf("cluster info: %+v", info)
	}
	version := binaryVersion(t).short()
	for _, b := range info.Brokers {
		if b.State != "alive" || b.Version != version {
			t.Errorf("broker %+v, want alive at version %s", b, version)
		}
	}

	// Ctrl-C stops everything, the restarted broker included.
	if err := dc.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	stopped = true
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("dev-cluster exit: %v", err)
		}
	case <-time.After(90 * time.Second):
		t.Fatal("dev-cluster did not stop on SIGINT")
	}
	newPid, _ := strconv.Atoi(m2[1])
	for _, pid := range []int{newPid, pids[2], pids[3]} {
		if syscall.Kill(pid, 0) == nil {
			t.Errorf("pid %d still runs after the dev cluster stopped", pid)
		}
	}
}

// isrHasAll reports whether every partition row of `topic describe` lists
// n brokers in its ISR column.
func isrHasAll(desc string, n int) bool {
	sc := bufio.NewScanner(strings.NewReader(desc))
	header, rows := -1, 0
	for sc.Scan() {
		cols := strings.Fields(sc.Text())
		if header < 0 {
			for i, c := range cols {
				if c == "ISR" {
					header = i
				}
			}
			continue
		}
		if len(cols) <= header {
			continue
		}
		rows++
		if len(strings.Split(cols[header], ",")) != n {
			return false
		}
	}
	return header >= 0 && rows > 0
}
