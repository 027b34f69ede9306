package server

import (
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Once the fully served connections are taken by requests in progress
// (from several addresses, each within its own limit), a new connection is
// served probes only, and one from an address at its limit is closed at
// once; a connection idle between requests gives its place up instead.
func TestHTTPProbesServedWhenFull(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	limited := newHTTPListener(ln, slog.New(slog.DiscardHandler))
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok\n") })
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "m 1\n") })
	// /busy answers once release is closed: a request in progress.
	release := make(chan struct{})
	mux.HandleFunc("GET /busy", func(w http.ResponseWriter, r *http.Request) { <-release })
	srv := serveHTTP(limited, mux, nil, newHostAllowList(nil, slog.New(slog.DiscardHandler)), slog.New(slog.DiscardHandler))
	defer srv.Close()
	addr := ln.Addr().String()

	// request sends one request on c and returns the status line.
	request := func(c net.Conn, path string) string {
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"); err != nil {
			return err.Error()
		}
		buf := make([]byte, 4096)
		n, err := c.Read(buf)
		if err != nil {
			return err.Error()
		}
		line, _, _ := strings.Cut(string(buf[:n]), "\r")
		return line
	}
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := range httpMaxConns {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(2+i/httpMaxConnsPerIP))}}
		c, err := d.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		if _, err := io.WriteString(c, "GET /busy HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
	}
	// Every /busy request is in its handler once the listener holds them
	// all and none is idle.
	for !allActive(limited, httpMaxConns) {
		time.Sleep(5 * time.Millisecond)
	}
	probe := func(path string) string {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		return request(c, path)
	}
	if got := probe("/healthz"); got != "HTTP/1.1 200 OK" {
		t.Errorf("/healthz with every full place taken: %q", got)
	}
	if got := probe("/metrics"); got != "HTTP/1.1 503 Service Unavailable" {
		t.Errorf("/metrics with every full place taken: %q", got)
	}
	// A 17th connection from an address that holds 16 is closed unanswered.
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got := request(c, "/healthz"); got == "HTTP/1.1 200 OK" {
		t.Errorf("a connection over the per-address limit was served")
	}
	if limited.Refused() == 0 {
		t.Errorf("no refusal counted")
	}
	close(release)
	for _, c := range conns {
		c.Close()
	}
	conns = nil
	deadline := time.Now().Add(10 * time.Second)
	for limited.Open() > 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}

	// Kept-alive idle connections: a new one from the same address takes
	// the place of one of them.
	from := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 9)}}
	for range httpMaxConnsPerIP + 4 {
		c, err := from.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		if got := request(c, "/metrics"); got != "HTTP/1.1 200 OK" {
			t.Fatalf("a kept-alive connection beyond the limit: %q", got)
		}
	}
	limited.mu.Lock()
	open := len(limited.byIP["127.0.0.9"])
	limited.mu.Unlock()
	if open > httpMaxConnsPerIP {
		t.Errorf("%d connections open from one address", open)
	}
}

// allActive reports whether l holds n fully served connections, none of
// them idle.
func allActive(l *httpListener, n int) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.full != n {
		return false
	}
	for _, conns := range l.byIP {
		if idleOf(conns) != nil {
			return false
		}
	}
	return true
}
