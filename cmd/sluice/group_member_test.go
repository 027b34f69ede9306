package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sluicemq/sluice/client"
)

// memberEnv makes the test binary a group member: it consumes
// SLUICE_MEMBER_TOPIC in SLUICE_MEMBER_GROUP from the brokers in memberEnv,
// commits after every poll, and reports on stdout, one JSON event a line.
const memberEnv = "SLUICE_TEST_MEMBER_BROKERS"

// memberEvent is one line a member process prints.
type memberEvent struct {
	Ev         string  `json:"ev"` // assigned, revoked, rec, commit_ok, commit_err
	Member     string  `json:"member,omitempty"`
	Generation int32   `json:"gen"`
	Partitions []int32 `json:"parts,omitempty"`
	Partition  int32   `json:"p"`
	Offset     int64   `json:"o"`
	Value      string  `json:"v,omitempty"`
	Err        string  `json:"err,omitempty"`
}

func runMember() int {
	session, _ := time.ParseDuration(os.Getenv("SLUICE_MEMBER_SESSION"))
	if session == 0 {
		session = 3 * time.Second
	}
	var mu sync.Mutex
	out := json.NewEncoder(os.Stdout)
	emit := func(e memberEvent) {
		mu.Lock()
		defer mu.Unlock()
		_ = out.Encode(e)
	}
	var c *client.GroupConsumer
	topic := os.Getenv("SLUICE_MEMBER_TOPIC")
	commit := func(why string) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		gen := c.Generation()
		if err := c.CommitUncommitted(ctx); err != nil {
			emit(memberEvent{Ev: "commit_err", Member: c.MemberID(), Generation: gen, Err: why + ": " + err.Error()})
		}
	}
	var err error
	c, err = client.NewGroupConsumer(os.Getenv(memberEnv), os.Getenv("SLUICE_MEMBER_GROUP"), []string{topic},
		client.SessionTimeout(session), client.HeartbeatInterval(session/4), client.RebalanceTimeout(10*time.Second),
		client.AutoCommitInterval(0), client.ClientID(os.Getenv("SLUICE_MEMBER_NAME")), client.RequestTimeout(5*time.Second),
		client.OnAssigned(func(parts map[string][]int32) {
			emit(memberEvent{Ev: "assigned", Member: c.MemberID(), Generation: c.Generation(), Partitions: parts[topic]})
		}),
		client.OnRevoked(func(parts map[string][]int32) {
			commit("on revoke")
			emit(memberEvent{Ev: "revoked", Member: c.MemberID(), Generation: c.Generation(), Partitions: parts[topic]})
		}))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// SLUICE_MEMBER_COMMIT=revoke commits only when partitions are revoked
	// (so a paused member holds uncommitted positions); default: after every poll.
	afterPoll := os.Getenv("SLUICE_MEMBER_COMMIT") != "revoke"
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		f := c.PollFetches(ctx)
		cancel()
		gen := c.Generation()
		for _, r := range f.Records {
			emit(memberEvent{Ev: "rec", Generation: gen, Partition: r.Partition, Offset: r.Offset, Value: string(r.Value)})
		}
		if len(f.Records) > 0 && afterPoll {
			commit("after poll")
		}
	}
}

// memberProc is a running member process and what it printed.
type memberProc struct {
	name string
	cmd  *exec.Cmd
	mu   sync.Mutex
	evs  []memberEvent
	done chan struct{}
}

func startMember(t *testing.T, brokers, group, topic, name string, session time.Duration, env ...string) *memberProc {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), memberEnv+"="+brokers, "SLUICE_MEMBER_GROUP="+group, "SLUICE_MEMBER_TOPIC="+topic,
		"SLUICE_MEMBER_NAME="+name, "SLUICE_MEMBER_SESSION="+session.String())
	cmd.Env = append(cmd.Env, env...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	m := &memberProc{name: name, cmd: cmd, done: make(chan struct{})}
	go func() {
		defer close(m.done)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var e memberEvent
			if json.Unmarshal(sc.Bytes(), &e) == nil {
				m.mu.Lock()
				m.evs = append(m.evs, e)
				m.mu.Unlock()
			}
		}
		cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGCONT)
		_ = cmd.Process.Kill()
		<-m.done
	})
	return m
}

func (m *memberProc) events() []memberEvent {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]memberEvent(nil), m.evs...)
}

func (m *memberProc) kill9() {
	_ = m.cmd.Process.Kill()
	<-m.done
}

// lastAssignment returns the member's latest assignment and its generation.
func (m *memberProc) lastAssignment() (int32, []int32, bool) {
	evs := m.events()
	for i := len(evs) - 1; i >= 0; i-- {
		switch evs[i].Ev {
		case "assigned":
			return evs[i].Generation, evs[i].Partitions, true
		case "revoked":
			return 0, nil, false
		}
	}
	return 0, nil, false
}

// checkExclusive fails if any generation gave one partition to two members.
func checkExclusive(t *testing.T, members []*memberProc) {
	t.Helper()
	owners := map[int32]map[int32]string{} // generation -> partition -> member name
	for _, m := range members {
		for _, e := range m.events() {
			if e.Ev != "assigned" {
				continue
			}
			if owners[e.Generation] == nil {
				owners[e.Generation] = map[int32]string{}
			}
			for _, p := range e.Partitions {
				if prev, ok := owners[e.Generation][p]; ok && prev != m.name {
					t.Errorf("generation %d: partition %d assigned to %s and %s", e.Generation, p, prev, m.name)
				}
				owners[e.Generation][p] = m.name
			}
		}
	}
}

// stableAssignment waits until the live members share one generation whose
// assignments cover every partition exactly once.
func stableAssignment(t *testing.T, members []*memberProc, partitions int) int32 {
	t.Helper()
	var gen int32
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		seen := map[int32]bool{}
		gens := map[int32]bool{}
		ok := true
		for _, m := range members {
			g, parts, assigned := m.lastAssignment()
			if !assigned {
				ok = false
				break
			}
			gens[g] = true
			gen = g
			for _, p := range parts {
				if seen[p] {
					ok = false
				}
				seen[p] = true
			}
		}
		if ok && len(gens) == 1 && len(seen) == partitions {
			return gen
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, m := range members {
		g, parts, _ := m.lastAssignment()
		t.Logf("%s: generation %d partitions %v", m.name, g, parts)
	}
	t.Fatal("no stable assignment covering every partition")
	return 0
}

// consumedValues collects every value the members printed.
func consumedValues(members []*memberProc) map[string]int {
	out := map[string]int{}
	for _, m := range members {
		for _, e := range m.events() {
			if e.Ev == "rec" {
				out[e.Value]++
			}
		}
	}
	return out
}

// producer writes numbered records at a steady pace until stopped.
type steadyProducer struct {
	stop chan struct{}
	done chan struct{}
	mu   sync.Mutex
	sent []string
}

func startSteadyProducer(t *testing.T, brokers, topic string) *steadyProducer {
	t.Helper()
	p, err := client.NewProducer(brokers, client.Acks(client.AllAcks), client.Linger(time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	sp := &steadyProducer{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(sp.done)
		defer p.Close()
		for i := 0; ; i++ {
			select {
			case <-sp.stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
			v := "r-" + strconv.Itoa(i)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			if _, _, err := p.ProduceSync(ctx, &client.Record{Topic: topic, Key: []byte(v), Value: []byte(v)}); err == nil {
				sp.mu.Lock()
				sp.sent = append(sp.sent, v)
				sp.mu.Unlock()
			}
			cancel()
		}
	}()
	t.Cleanup(sp.finish)
	return sp
}

func (sp *steadyProducer) finish() {
	select {
	case <-sp.stop:
	default:
		close(sp.stop)
	}
	<-sp.done
}

func (sp *steadyProducer) values() []string {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	return append([]string(nil), sp.sent...)
}

// waitConsumed waits until every produced value was consumed by someone.
func waitConsumed(t *testing.T, members []*memberProc, sent []string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		got := consumedValues(members)
		missing := 0
		var example string
		for _, v := range sent {
			if got[v] == 0 {
				missing++
				example = v
			}
		}
		if missing == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d acknowledged records never consumed (e.g. %s)", missing, len(sent), example)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// pause stops a member process (SIGSTOP) and resume continues it.
func (m *memberProc) pause()  { _ = m.cmd.Process.Signal(syscall.SIGSTOP) }
func (m *memberProc) resume() { _ = m.cmd.Process.Signal(syscall.SIGCONT) }
