package main

import (
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// The HTTP listener cannot be locked from one address: 64 kept-alive
// connections and 2,000 half-sent requests from 127.0.0.2 leave /healthz,
// /readyz and /metrics answering a client on 127.0.0.1.
func TestHTTPListenerCannotBeLocked(t *testing.T) {
	b := startBroker(t)
	web := httpAddr(t, b)
	var held []net.Conn
	var mu sync.Mutex
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	// Kept-alive connections, each after one answered request.
	for range 64 {
		c, err := attackerDialer.Dial("tcp", web)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"); err != nil {
			continue // closed at once: over the limit
		}
		_, _ = c.Read(make([]byte, 4096))
	}
	// Half-sent requests (slowloris).
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 250 {
				c, err := attackerDialer.Dial("tcp", web)
				if err != nil {
					continue
				}
				mu.Lock()
				held = append(held, c)
				mu.Unlock()
				_ = c.SetWriteDeadline(time.Now().Add(time.Second))
				_, _ = io.WriteString(c, "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
			}
		}()
	}
	wg.Wait()
	client := http.Client{Timeout: 5 * time.Second}
	var slowest time.Duration
	for _, path := range []string{"/healthz", "/readyz", "/metrics", "/healthz", "/readyz", "/metrics", "/healthz"} {
		start := time.Now()
		resp, err := client.Get("http://" + web + path)
		if err != nil {
			t.Fatalf("%s during the attack: %v", path, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s during the attack: %d", path, resp.StatusCode)
		}
		slowest = max(slowest, time.Since(start))
	}
	t.Logf("%d attacking connections; the slowest probe took %v", len(held), slowest)
	if !strings.Contains(b.logs.String(), "HTTP listener refused a connection") {
		t.Errorf("the refusals were not logged:\n%s", tail(b.logs.String(), 10))
	}
}

// Without TLS, the HTTP listener serves only requests for its own names: a
// page on another site whose name resolves to the broker (DNS rebinding)
// gets neither a page, nor a form token, nor a change made.
func TestHTTPRefusesForeignHostNames(t *testing.T) {
	b := startBroker(t, "--console-write", "--http-host", "broker.test")
	web := httpAddr(t, b)
	_, port, _ := net.SplitHostPort(web)
	b.cli("", "topic", "create", "kept")
	get := func(host, path string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", "http://"+web+path, nil)
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	for _, host := range []string{"evil.example", "evil.example:" + port, "127.0.0.1.evil.example"} {
		for _, path := range []string{"/topics", "/metrics", "/"} {
			if code, body := get(host, path); code != http.StatusMisdirectedRequest || strings.Contains(body, "csrf") {
				t.Errorf("GET %s with Host %s: %d %q", path, host, code, body)
			}
		}
	}
	for _, host := range []string{web, "localhost:" + port, "broker.test:" + port, "[::1]:" + port} {
		if code, _ := get(host, "/topics"); code != http.StatusOK {
			t.Errorf("GET /topics with Host %s: %d", host, code)
		}
	}
	// A token taken from the real console does not help a rebound page.
	m := csrfField.FindStringSubmatch(getPage(t, web, "/topics"))
	if m == nil {
		t.Fatal("no form token on the topics page")
	}
	form := url.Values{"csrf": {m[1]}, "confirm": {"kept"}}
	req, _ := http.NewRequest("POST", "http://"+web+"/topics/kept/delete", strings.NewReader(form.Encode()))
	req.Host = "evil.example:" + port
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", "http://evil.example:"+port)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMisdirectedRequest {
		t.Errorf("a delete from a rebound page: %d", resp.StatusCode)
	}
	if out := b.cli("", "topic", "list"); !strings.Contains(out, "kept") {
		t.Fatalf("a rebound page deleted the topic: %q", out)
	}
	if !strings.Contains(b.logs.String(), "refused a request for another host name") {
		t.Errorf("the refusal was not logged:\n%s", tail(b.logs.String(), 10))
	}
}
