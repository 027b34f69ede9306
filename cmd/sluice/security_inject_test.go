package main

import (
	"bufio"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/sluicemq/sluice/messages"
	"github.com/sluicemq/sluice/transport"
)

// Answers aimed at another client: a process that injects a response for
// a victim client's pending request.

// injectAnswer returns the high watermark of the answer the victim (with
// victimCreds) got to a parked fetch while an injector with injectCreds
// sent it forged answers.
func injectAnswer(t *testing.T, c *testCluster, victimCreds, injectCreds string) int64 {
	t.Helper()
	leader := c.brokers[c.leaderOf(faultTopic, 0)]
	victim := exec.Command(os.Args[0], "-test.run=^$")
	victim.Env = append(os.Environ(), victimEnv+"="+leader.Addr, forgeTLSEnv+"="+victimCreds)
	stdout, err := victim.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	victim.Stderr = os.Stderr
	if err := victim.Start(); err != nil {
		t.Fatal(err)
	}
	defer victim.Process.Kill()
	lines := bufio.NewScanner(stdout)
	if !lines.Scan() || !strings.HasPrefix(lines.Text(), "ready ") {
		t.Fatalf("victim: %q", lines.Text())
	}
	target := strings.TrimPrefix(lines.Text(), "ready ")
	injector := exec.Command(os.Args[0], "-test.run=^$")
	injector.Env = append(os.Environ(), injectEnv+"="+target, forgeTLSEnv+"="+injectCreds)
	if err := injector.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { injector.Process.Kill(); injector.Wait() }()
	if !lines.Scan() {
		t.Fatal("victim printed no answer")
	}
	var hw int64
	if _, err := fmt.Sscanf(lines.Text(), "answer %d", &hw); err != nil {
		t.Fatalf("victim: %q", lines.Text())
	}
	victim.Wait()
	return hw
}

// runVictim parks a fetch at the end of partition 0 of faultTopic, prints
// its node address and future id, then the answer's high watermark.
func runVictim() int {
	node, err := transport.Start(transport.Config{Host: "127.0.0.1", Security: forgerSecurity()}, slog.New(slog.DiscardHandler))
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	broker := transport.BrokerPID(os.Getenv(victimEnv))
	// The end of the log first, so that the fetch waits there.
	res, err := node.System.Root.RequestFuture(broker, &messages.ListOffsetsRequest{Topic: faultTopic, Timestamp: -1}, 10*time.Second).Result()
	lo, ok := res.(*messages.ListOffsetsResponse)
	if err != nil || !ok || lo.Error != messages.ErrorCode_NONE {
		fmt.Println("error list offsets", err, res)
		return 1
	}
	fut := node.System.Root.RequestFuture(broker, &messages.FetchRequest{Topic: faultTopic, Offset: lo.Offset, MaxBytes: 1 << 20,
		MinBytes: 1 << 20, MaxWaitMs: 4000}, 15*time.Second)
	fmt.Printf("ready %s %s\n", node.Addr, fut.PID().Id)
	res, err = fut.Result()
	fr, ok := res.(*messages.FetchResponse)
	if err != nil || !ok {
		fmt.Println("error fetch", err, res)
		return 1
	}
	fmt.Printf("answer %d\n", fr.HighWatermark)
	return 0
}

// runInjector sends forged fetch answers to the victim's future until it
// is killed (at most 20 s).
func runInjector() int {
	var addr, id string
	if _, err := fmt.Sscan(os.Getenv(injectEnv), &addr, &id); err != nil {
		return 1
	}
	node, err := transport.Start(transport.Config{Host: "127.0.0.1", Security: forgerSecurity()}, slog.New(slog.DiscardHandler))
	if err != nil {
		return 1
	}
	target := actor.NewPID(addr, id)
	forged := &messages.FetchResponse{Topic: faultTopic, HighWatermark: injectedHW, LogStartOffset: 0}
	for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		node.System.Root.Send(target, forged)
	}
	return 0
}
