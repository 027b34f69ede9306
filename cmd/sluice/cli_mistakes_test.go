package main

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicemq/sluice/client"
)

// A new user's mistakes, each against a real broker: the command fails
// with a non-zero exit, names the problem in Sluice's words, answers
// within a bound (generous: it checks for waits of minutes, not speed),
// and the broker serves afterwards.
func TestCLIMistakes(t *testing.T) {
	b := startBroker(t)
	createTopic(t, newAdmin(t, b.Addr), "events", 1, nil)
	big := strings.Repeat("x", 2<<20) + "\n"
	web := httptest.NewServer(http.NotFoundHandler())
	defer web.Close()
	webAddr := strings.TrimPrefix(web.URL, "http://")
	for _, c := range []struct {
		name   string
		stdin  string
		args   []string
		within time.Duration
		want   []string // in stderr
		check  func(t *testing.T, stderr string)
	}{
		{
			name: "produce to a topic that does not exist", stdin: "1\n2\n3\n",
			args: []string{"produce", "nosuch", "--timeout", "5s"}, within: 10 * time.Second,
			want: []string{`UNKNOWN_TOPIC_OR_PARTITION: topic "nosuch" does not exist (create it with 'sluice topic create nosuch' or start the broker with --auto-create-topics)`},
			check: func(t *testing.T, stderr string) {
				// It stops at the first record, and says why once: the
				// others would fail alike.
				if n := strings.Count(stderr, "does not exist"); n != 1 {
					t.Errorf("the failure said %d times:\n%s", n, stderr)
				}
			},
		},
		{
			name: "produce to a partition the topic does not have", stdin: "1\n2\n",
			args: []string{"produce", "events", "--partition", "5"}, within: 10 * time.Second,
			want: []string{`topic "events" has partitions 0 to 0, not partition 5 (grow the topic with 'sluice topic add-partitions events --to 6')`},
			check: func(t *testing.T, stderr string) {
				if n := strings.Count(stderr, "not partition 5"); n != 1 || strings.Contains(stderr, "topic create") {
					t.Errorf("the failure said %d times, or wrongly:\n%s", n, stderr)
				}
			},
		},
		{
			name: "an oversized record", stdin: big, args: []string{"produce", "events"}, within: 30 * time.Second,
			want: []string{"record 1 (", "RECORD_TOO_LARGE"},
			check: func(t *testing.T, stderr string) {
				if len(stderr) > 4096 {
					t.Errorf("%d bytes of stderr for one oversized record", len(stderr))
				}
			},
		},
		// Nothing listens at the address: known at once, in every command.
		{name: "produce with no broker", stdin: "1\n2\n", args: []string{"produce", "events", "--broker", "127.0.0.1:1"},
			within: 5 * time.Second, want: []string{"no broker at 127.0.0.1:1 (connection refused)"}},
		{name: "topic list with no broker", args: []string{"topic", "list", "--broker", "127.0.0.1:1"},
			within: 5 * time.Second, want: []string{"no broker at 127.0.0.1:1 (connection refused)"}},
		{name: "consume with no broker", args: []string{"consume", "events", "--broker", "127.0.0.1:1"},
			within: 5 * time.Second, want: []string{"no broker at 127.0.0.1:1 (connection refused)"}},
		// Answers over connections the broker opens to the command
		// (--listen/--advertise) that it cannot open: said in seconds.
		{name: "topic list answered at an address brokers cannot reach", args: []string{"topic", "list", "--advertise", "127.0.0.1:1"},
			within: 30 * time.Second, want: []string{"its answers do not come back within 5s", "this client at 127.0.0.1:1, which they cannot reach"}},
		// The new flags' bad values: refused before anything is sent.
		{name: "a record limit below a kilobyte", stdin: "1\n", args: []string{"produce", "events", "--max-record-bytes", "10"},
			within: 5 * time.Second, want: []string{"--max-record-bytes 10: want 1024 to"}},
		{name: "a listen address without a port", args: []string{"topic", "list", "--listen", "nonsense"},
			within: 5 * time.Second, want: []string{`address "nonsense"`, "missing port"}},
		// Something else answers at the address.
		{name: "topic list at a web server", args: []string{"topic", "list", "--broker", webAddr},
			within: 5 * time.Second, want: []string{"not a Sluice broker: " + webAddr + ` answered "HTTP/1.1 `}},
		{name: "produce at a web server", stdin: "1\n", args: []string{"produce", "events", "--broker", webAddr},
			within: 5 * time.Second, want: []string{"not a Sluice broker"}},
		{name: "consume at a web server", args: []string{"consume", "events", "--broker", webAddr},
			within: 5 * time.Second, want: []string{"not a Sluice broker"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := c.args
			if !slices.Contains(args, "--broker") {
				args = append(args, "--broker", b.Addr)
			}
			start := time.Now()
			_, stderr, code := runCLI(t, c.stdin, args...)
			took := time.Since(start)
			if code == 0 {
				t.Fatalf("exit 0; stderr:\n%s", stderr)
			}
			for _, w := range c.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%.2000s", w, stderr)
				}
			}
			for _, word := range []string{"dead letter", "future"} {
				if strings.Contains(stderr, word) {
					t.Errorf("protoactor's words in a user's message:\n%s", stderr)
				}
			}
			if took > c.within {
				t.Errorf("answered after %v, more than %v", took.Round(time.Millisecond), c.within)
			}
			if c.check != nil {
				c.check(t, stderr)
			}
			produceN(t, b.Addr, "events", 0, 1)
			t.Logf("%v: %.300s", took.Round(time.Millisecond), stderr)
		})
	}
}

// Connection limits that cannot work are refused at start, with the reason.
func TestBrokerRefusesBadConnectionLimits(t *testing.T) {
	for _, flag := range []string{"--max-connections", "--max-connections-per-ip", "--connections-max-idle"} {
		value := "0"
		if flag == "--connections-max-idle" {
			value = "-1s"
		}
		_, stderr, code := runCLI(t, "", "broker", "--data", t.TempDir(), "--addr", "127.0.0.1:0", flag, value)
		if code == 0 || !strings.Contains(stderr, "must be positive") {
			t.Errorf("%s %s: exit %d, stderr:\n%s", flag, value, code, stderr)
		}
	}
}

// Memory limits and placement settings that cannot work are refused at
// start, naming the setting.
func TestBrokerRefusesBadMemoryLimits(t *testing.T) {
	for _, c := range []struct{ flag, value, want string }{
		{"--max-inflight-bytes", "1000", "at least 1 MiB"},
		{"--group-max-size", "0", "group max size 0: must be > 0"},
		{"--group-metadata-max-bytes", "1024", "at least 4 MiB"},
		{"--rack", "a\tb", "printable characters"},
		{"--rack", strings.Repeat("r", 256), "at most 255"},
		{"--leader-imbalance-check-interval", "0s", "leader imbalance check interval 0s: must be > 0"},
		{"--leader-imbalance-per-broker-percentage", "150", "leader imbalance ratio 1.5: want 0 to 1"},
		{"--broker-session-timeout", "0s", "broker session timeout 0s: must be > 0"},
		{"--group-consumer-heartbeat-interval", "0s", "want 0 < interval < session timeout"},
		{"--offsets-retention", "100ms", "offsets retention 100ms: must be at least 1s"},
		{"--max-connections-per-ip-overrides", "lb.example:5", `"lb.example" is not an IP address`},
		{"--group-consumer-session-timeout", "1s", "want 0 < interval < session timeout"},       // below the 5 s interval
		{"--kafka-sasl", "--kafka-addr=127.0.0.1:0", "--kafka-sasl needs --kafka-addr and TLS"}, // no TLS
		{"--kafka-security-protocol", "PLAINTEXT", "want SSL, SASL_SSL or SASL_PLAINTEXT"},
		{"--kafka-security-protocol", "SASL_PLAINTEXT", "--kafka-sasl needs --kafka-addr and TLS"}, // no TLS
		{"--kafka-sasl-session-lifetime", "-1s", "want 0 (forever) or more"},
		{"--kafka-sasl-session-lifetime", "1h", "need SASL on the Kafka listener"},
	} {
		_, stderr, code := runCLI(t, "", "broker", "--data", t.TempDir(), "--addr", "127.0.0.1:0", c.flag, c.value)
		if code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("%s %s: exit %d, stderr:\n%s", c.flag, c.value, code, stderr)
		}
	}
}

// silentListener accepts connections and never answers, as a paused
// broker does; it returns its address.
func silentListener(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return l.Addr().String()
}

// Every client command tries each bootstrap address in turn: one that
// refuses connections and one that never answers come first here.
func TestEveryCommandTriesEachBootstrapAddress(t *testing.T) {
	b := startBroker(t)
	createTopic(t, newAdmin(t, b.Addr), "events", 2, nil)
	refused := "127.0.0.1:1"
	b.cli("a\nb\nc\nd\n", "produce", "events")
	for _, c := range []struct {
		name  string
		stdin string
		args  []string
		seeds string
	}{
		{"topic list", "", []string{"topic", "list"}, refused},
		{"topic describe", "", []string{"topic", "describe", "events"}, refused},
		{"produce", "e\n", []string{"produce", "events"}, refused},
		{"consume", "", []string{"consume", "events", "--from-beginning", "--max", "4"}, refused},
		{"consume past a silent broker", "", []string{"consume", "events", "--from-beginning", "--max", "4"}, silentListener(t)},
		{"group consume", "", []string{"consume", "events", "--group", "g", "--from-beginning", "--max", "4"}, refused},
		{"group list", "", []string{"group", "list"}, refused},
	} {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			out, stderr, code := runCLI(t, c.stdin, append(c.args, "--broker", c.seeds+","+b.Addr)...)
			if code != 0 {
				t.Fatalf("exit %d after %v:\n%s", code, time.Since(start).Round(time.Millisecond), stderr)
			}
			t.Logf("%v: %.200s", time.Since(start).Round(time.Millisecond), out)
		})
	}
}

// A broker's address may be given by a host name for it: localhost is
// what a user types first, in the CLI and in Go.
func TestLocalhostReachesTheBroker(t *testing.T) {
	b := startBroker(t)
	_, port, err := net.SplitHostPort(b.Addr)
	if err != nil {
		t.Fatal(err)
	}
	local := net.JoinHostPort("localhost", port)
	for _, c := range []struct {
		name  string
		stdin string
		args  []string
		want  string
	}{
		{"topic create", "", []string{"topic", "create", "events", "--partitions", "2"}, "created"},
		{"produce", "a\nb\n", []string{"produce", "events"}, ""},
		{"consume", "", []string{"consume", "events", "--from-beginning", "--max", "2"}, "a\n"},
		{"group consume", "", []string{"consume", "events", "--group", "g", "--from-beginning", "--max", "2"}, "b\n"},
		{"group list", "", []string{"group", "list"}, "g "},
		{"topic list", "", []string{"topic", "list"}, "events"},
	} {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			out, stderr, code := runCLI(t, c.stdin, append(c.args, "--broker", local)...)
			if code != 0 || !strings.Contains(out, c.want) {
				t.Fatalf("exit %d after %v, output %q, want %q:\n%s", code, time.Since(start).Round(time.Millisecond), out, c.want, stderr)
			}
		})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	topics, err := newAdmin(t, local).ListTopics(ctx)
	if err != nil || !slices.Equal(topics, []string{"events"}) {
		t.Fatalf("ListTopics at %s: %v, %v; want events, not the internal topic", local, topics, err)
	}
	if all, err := newAdmin(t, local).ListTopics(ctx, client.IncludeInternal()); err != nil || !slices.Contains(all, "__consumer_offsets") {
		t.Fatalf("ListTopics with IncludeInternal: %v, %v", all, err)
	}
	if out, _, _ := runCLI(t, "", "topic", "list", "--broker", local); out != "events\n" {
		t.Fatalf("topic list printed %q; want events alone", out)
	}
	if out, _, _ := runCLI(t, "", "topic", "list", "--internal", "--broker", local); !strings.Contains(out, "__consumer_offsets\n") {
		t.Fatalf("topic list --internal printed %q", out)
	}
	if strings.Contains(b.logs.String(), "claims to be this node") {
		t.Fatalf("the broker took a request by another name for a connection from itself:\n%s", b.logs.String())
	}
}

// unreachableChildEnv marks the child process of TestUnreachableClientHearsWhy.
const unreachableChildEnv = "SLUICE_TEST_UNREACHABLE_CHILD"

// A Go client whose announced address the broker cannot connect back to
// gets no answers: it finds out with its first question, in seconds, and
// the error says what to look at. The client
// runs in a test process of its own: two protoactor remotes in one
// process race on gRPC's logger.
func TestUnreachableClientHearsWhy(t *testing.T) {
	if os.Getenv(unreachableChildEnv) != "" {
		t.Skip("in the child")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestUnreachableClientHearsWhyChild$", "-test.v", "-test.timeout=2m")
	cmd.Env = append(os.Environ(), unreachableChildEnv+"=1", testBinEnv+"="+sluiceBin)
	out, err := cmd.CombinedOutput()
	t.Logf("child test:\n%s", out)
	if err != nil {
		t.Fatalf("child test: %v", err)
	}
	if !strings.Contains(string(out), "--- PASS: TestUnreachableClientHearsWhyChild") {
		t.Fatal("the child test did not run")
	}
}

func TestUnreachableClientHearsWhyChild(t *testing.T) {
	if os.Getenv(unreachableChildEnv) == "" {
		t.Skip("run by TestUnreachableClientHearsWhy")
	}
	b := startBroker(t)
	admin, err := client.NewAdmin(b.Addr, client.AdvertisedAddr("127.0.0.1:1"), client.Sessions(false))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	start := time.Now()
	topics, err := admin.ListTopics(context.Background())
	took := time.Since(start)
	if err == nil {
		t.Fatalf("listed %v with no way for answers to come back", topics)
	}
	if !errors.Is(err, client.ErrBrokerNotAvailable) || !strings.Contains(err.Error(), "which they cannot reach") ||
		!strings.Contains(err.Error(), "this client at 127.0.0.1:1") {
		t.Fatalf("error %q does not say why", err)
	}
	// Seconds, where waiting out the request timeout (30 s) would take
	// minutes.
	if took > 25*time.Second {
		t.Fatalf("gave up after %v", took)
	}
	t.Logf("after %v: %v", took.Round(time.Millisecond), err)
}
