package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/sluicemq/sluice/cluster/consultest"
	"github.com/sluicemq/sluice/internal/testutil"
	"github.com/sluicemq/sluice/messages"
	"github.com/sluicemq/sluice/server"
)

var httpReady = regexp.MustCompile(`sluice broker ready.* http=(\S*)`)

// httpAddr is the HTTP listener's address from the broker's latest ready line.
func httpAddr(t *testing.T, b *brokerProc) string {
	t.Helper()
	all := httpReady.FindAllStringSubmatch(b.logs.String(), -1)
	if len(all) == 0 || all[len(all)-1][1] == "" {
		t.Fatalf("no HTTP listener in the ready line:\n%s", tail(b.logs.String(), 5))
	}
	return all[len(all)-1][1]
}

// httpGet returns the status and body of GET http://addr/path.
func httpGet(addr, path string) (int, string, error) {
	c := http.Client{Timeout: 10 * time.Second, Jar: consoleJar}
	resp, err := c.Get("http://" + addr + path)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

// scrape reads the broker's /metrics: each series (name{labels}, as
// exposed) to its value.
func scrape(t *testing.T, addr string) map[string]float64 {
	t.Helper()
	code, body, err := httpGet(addr, "/metrics")
	if err != nil || code != http.StatusOK {
		t.Fatalf("GET /metrics: %d %v", code, err)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("metrics line %q: %v", line, err)
		}
		out[line[:i]] = v
	}
	return out
}

// The probes: /healthz answers as soon as the process serves; /readyz
// says not ready while the broker cannot reach its metadata store (the
// Consul agent is frozen) and ready once it has loaded its metadata and
// opened its replicas. /metrics then shows the broker's state.
func TestHTTPProbesAndStateMetrics(t *testing.T) {
	consul := consultest.Start(t)
	if err := consul.Pause(); err != nil {
		t.Fatal(err)
	}
	addr, web := fmt.Sprintf("127.0.0.1:%d", freePort(t)), fmt.Sprintf("127.0.0.1:%d", freePort(t))
	logs := &lockedBuffer{}
	cmd := exec.Command(sluiceBin, "broker", "--data", t.TempDir(), "--addr", addr, "--id", "1", "--http", web,
		"--consul", consul.Addr(), "--cluster", fmt.Sprintf("http-%d", os.Getpid()))
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("broker log:\n%s", tail(logs.String(), 40))
		}
	}()
	eventually(t, 30*time.Second, func() string {
		code, _, err := httpGet(web, "/healthz")
		if err != nil || code != http.StatusOK {
			return fmt.Sprintf("healthz: %d %v", code, err)
		}
		return ""
	})
	if code, body, err := httpGet(web, "/readyz"); err != nil || code != http.StatusServiceUnavailable || !strings.Contains(body, "metadata") {
		t.Fatalf("readyz while the metadata store is frozen: %d %q %v", code, body, err)
	}
	if err := consul.Resume(); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, func() string {
		code, body, err := httpGet(web, "/readyz")
		if err != nil || code != http.StatusOK {
			return fmt.Sprintf("readyz: %d %q %v", code, body, err)
		}
		return ""
	})
	if out, stderr, code := runCLI(t, "", "topic", "create", "web", "--partitions", "3", "--broker", addr); code != 0 {
		t.Fatalf("topic create: %s %s", out, stderr)
	}
	if _, stderr, code := runCLI(t, "a\nb\nc\n", "produce", "web", "--partition", "1", "--broker", addr); code != 0 {
		t.Fatalf("produce: %s", stderr)
	}
	eventually(t, 30*time.Second, func() string {
		m := scrape(t, web)
		want := map[string]float64{
			"sluice_brokers": 1, "sluice_topics": 1, "sluice_partitions": 3, "sluice_controller_active": 1,
			"sluice_partitions_led": 3, "sluice_partitions_offline": 0, "sluice_partitions_under_replicated": 0,
			`sluice_partition_high_watermark{partition="1",topic="web"}`: 3,
			`sluice_partition_log_end_offset{partition="1",topic="web"}`: 3,
			`sluice_partition_high_watermark{partition="0",topic="web"}`: 0,
		}
		for series, v := range want {
			if got, ok := m[series]; !ok || got != v {
				return fmt.Sprintf("%s = %v (present %v), want %v", series, got, ok, v)
			}
		}
		if m[`sluice_partition_size_bytes{partition="1",topic="web"}`] <= 0 {
			return "partition 1 has no size"
		}
		return ""
	})
	m := scrape(t, web)
	found := false
	for series := range m {
		found = found || strings.HasPrefix(series, "sluice_build_info{")
	}
	if !found {
		t.Errorf("no sluice_build_info")
	}
}

// Bad HTTP requests never block the broker: an unknown path is 404, a
// huge header is refused, and connections that send half a request and
// then nothing (more than the listener serves at once) are closed by the
// listener while the broker's own door serves throughout.
func TestHTTPListenerBadRequests(t *testing.T) {
	b := startBroker(t)
	web := httpAddr(t, b)
	if code, _, err := httpGet(web, "/nope"); err != nil || code != http.StatusNotFound {
		t.Errorf("unknown path: %d %v", code, err)
	}
	req, _ := http.NewRequest("GET", "http://"+web+"/metrics", nil)
	req.Header.Set("X-Huge", strings.Repeat("x", 1<<20))
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
			t.Errorf("a 1 MiB header: %d", resp.StatusCode)
		}
	}
	var slow []net.Conn
	for i := 0; i < server.HTTPMaxConnections+16; i++ {
		c, err := net.Dial("tcp", web)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := io.WriteString(c, "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: "); err != nil {
			t.Fatal(err)
		}
		slow = append(slow, c)
	}
	// The broker serves while every HTTP connection is held.
	b.cli("", "topic", "create", "slow")
	b.cli("r1\nr2\n", "produce", "slow")
	if out := b.cli("", "consume", "slow", "--from-beginning", "--max", "2"); out != "r1\nr2\n" {
		t.Errorf("consume while HTTP is held: %q", out)
	}
	// The listener closes the half requests (after its header timeout),
	// then serves again.
	if err := slow[0].SetReadDeadline(time.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	answer, err := io.ReadAll(slow[0])
	if err != nil || strings.Contains(string(answer), "200 OK") {
		t.Errorf("a half request: %q %v, want it closed unanswered", answer, err)
	}
	eventually(t, time.Minute, func() string {
		code, _, err := httpGet(web, "/healthz")
		if err != nil || code != http.StatusOK {
			return fmt.Sprintf("healthz after the slow connections: %d %v", code, err)
		}
		return ""
	})
}

// dashboardSeries is every metric name the Grafana dashboard's queries use.
var dashboardSeries = regexp.MustCompile(`\bsluice_[a-z_]+`)

// Every series the Grafana dashboard queries exists on a running broker
// that has seen some traffic: produce with acks=1 and all, a group's
// consume and commit, a Kafka client's request and a fetch refused.
func TestGrafanaDashboardSeriesExist(t *testing.T) {
	raw, err := os.ReadFile("../../metrics/grafana/sluice.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("the dashboard is not JSON: %v", err)
	}
	b := startBroker(t, "--kafka-addr", "127.0.0.1:0", "--group-initial-rebalance-delay", "100ms")
	b.cli("", "topic", "create", "dash", "--partitions", "2")
	b.cli("a\nb\n", "produce", "dash", "--acks", "all")
	b.cli("c\n", "produce", "dash", "--acks", "1")
	b.cli("", "consume", "dash", "--group", "dg", "--from-beginning", "--max", "3")
	if _, err := kadm.NewClient(newKgo(t, kafkaAddr(t, b))).ListTopics(context.Background()); err != nil {
		t.Fatal(err)
	}
	a := newAdmin(t, b.Addr)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := a.Request(ctx, b.Addr, &messages.FetchRequest{Topic: "dash", Partition: 0, Offset: 1 << 40, MaxBytes: 1 << 20, CurrentLeaderEpoch: -1}); err != nil {
		t.Fatal(err)
	}
	web := httpAddr(t, b)
	eventually(t, 30*time.Second, func() string {
		have := map[string]bool{}
		for series := range scrape(t, web) {
			name, _, _ := strings.Cut(series, "{")
			have[name] = true
		}
		var missing []string
		for _, p := range dash.Panels {
			for _, target := range p.Targets {
				for _, name := range dashboardSeries.FindAllString(target.Expr, -1) {
					if !have[name] {
						missing = append(missing, fmt.Sprintf("%s (panel %q)", name, p.Title))
					}
				}
			}
		}
		if len(missing) > 0 {
			return "series the dashboard queries are missing: " + strings.Join(missing, ", ")
		}
		return ""
	})
	if len(dash.Panels) < 10 {
		t.Errorf("the dashboard has %d panels", len(dash.Panels))
	}
}

// httpsGet is httpGet over TLS as the certificate pair name ("" for none).
func httpsGet(t *testing.T, certs testCerts, name, addr, path string) (int, error) {
	t.Helper()
	pem, err := os.ReadFile(certs.file("ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	cfg := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	if name != "" {
		pair, err := tls.LoadX509KeyPair(certs.file(name+".crt"), certs.file(name+".key"))
		if err != nil {
			t.Fatal(err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	c := http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}
	resp, err := c.Get("https://" + addr + path)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// Under TLS the HTTP listener is HTTPS with the broker's certificates and
// serves only principals that may describe the cluster: a super user, and
// alice once an ACL allows it; without a certificate the handshake fails.
// With --http-anonymous it serves anyone over HTTPS.
func TestHTTPListenerTLS(t *testing.T) {
	certs := makeTestCerts(t)
	b := startBroker(t, append([]string{"--id", "1"}, certs.brokerFlags(1)...)...)
	web := httpAddr(t, b)
	if code, err := httpsGet(t, certs, "user-admin", web, "/metrics"); err != nil || code != http.StatusOK {
		t.Errorf("the super user: %d %v", code, err)
	}
	if code, err := httpsGet(t, certs, "user-alice", web, "/metrics"); err != nil || code != http.StatusForbidden {
		t.Errorf("alice without an ACL: %d %v", code, err)
	}
	if _, err := httpsGet(t, certs, "", web, "/healthz"); err == nil {
		t.Errorf("a client without a certificate was served")
	}
	if code, _, err := httpGet(web, "/healthz"); err == nil && code == http.StatusOK {
		t.Errorf("plain HTTP was served")
	}
	if out, errOut, code := runCLI(t, "", append([]string{"acl", "add", "--allow-principal", "User:alice", "--operation", "describe",
		"--cluster", "--broker", b.Addr}, certs.as("user-admin", "ca")...)...); code != 0 {
		t.Fatalf("acl add: %s%s", out, errOut)
	}
	eventually(t, 30*time.Second, func() string {
		if code, err := httpsGet(t, certs, "user-alice", web, "/metrics"); err != nil || code != http.StatusOK {
			return fmt.Sprintf("alice with describe on the cluster: %d %v", code, err)
		}
		return ""
	})

	anon := startBroker(t, append([]string{"--id", "1", "--http-anonymous"}, certs.brokerFlags(1)...)...)
	if code, err := httpsGet(t, certs, "", httpAddr(t, anon), "/readyz"); err != nil || code != http.StatusOK {
		t.Errorf("--http-anonymous, no certificate: %d %v", code, err)
	}
}

// An --http address that cannot be bound stops the broker at start, saying
// why; only the default falls back to a random port.
func TestBrokerRefusesBadHTTPAddress(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	for _, addr := range []string{"not-an-address", taken.Addr().String(), "127.0.0.1:99999"} {
		_, stderr, code := runCLI(t, "", "broker", "--data", t.TempDir(), "--addr", "127.0.0.1:0", "--http", addr)
		if code == 0 || !strings.Contains(stderr, "--http") {
			t.Errorf("--http %s: exit %d, stderr:\n%s", addr, code, stderr)
		}
	}
}

// After a restart every partition the broker leads has its series, those
// not written since as well: a leadership that waits for its log's sync
// publishes its state when it starts.
func TestPartitionSeriesAfterRestart(t *testing.T) {
	b := startBroker(t)
	b.cli("", "topic", "create", "kept", "--partitions", "3")
	b.cli("a\nb\n", "produce", "kept", "--partition", "1")
	b.stop()
	b.start()
	want := map[string]float64{}
	for p, hw := range []float64{0, 2, 0} {
		want[fmt.Sprintf(`sluice_partition_high_watermark{partition="%d",topic="kept"}`, p)] = hw
	}
	var got map[string]float64
	testutil.WaitFor(t, 10*time.Second, "every partition's series", func() bool {
		got = scrape(t, httpAddr(t, b))
		for series, v := range want {
			if w, ok := got[series]; !ok || w != v {
				return false
			}
		}
		return true
	})
}
