package server

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicemq/sluice/internal/logspace"
)

// What an HTTP peer can make the broker hold. The listener serves
// httpMaxConns connections fully, at most httpMaxConnsPerIP of them from
// one address. A connection over a limit first takes the place of a
// kept-alive one waiting idle for its next request (closing it costs its
// client a reconnect); failing that, beyond httpMaxConns the listener
// takes httpProbeConns more that may only ask for /healthz or /readyz, so
// probes are answered while the console and metrics are busy; anything
// beyond is closed at once, logged and counted.
const (
	httpMaxConns      = 64
	httpMaxConnsPerIP = 16
	httpProbeConns    = 32
	// httpIdleTimeout closes a kept-alive connection with no request in
	// progress.
	httpIdleTimeout = 10 * time.Second
)

// HTTPMaxConnections is how many connections the HTTP listener serves
// fully (httpMaxConns).
const HTTPMaxConnections = httpMaxConns

// httpListener admits connections within the limits above.
type httpListener struct {
	net.Listener
	logger *slog.Logger

	mu        sync.Mutex
	full      int // connections served fully
	probeOnly int // connections that may ask for probes only
	byIP      map[string]map[*httpConn]struct{}

	refused atomic.Int64
	spaced  logspace.Every
}

func newHTTPListener(ln net.Listener, logger *slog.Logger) *httpListener {
	return &httpListener{Listener: ln, logger: logger, byIP: map[string]map[*httpConn]struct{}{}}
}

// Open is how many connections the listener holds.
func (l *httpListener) Open() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return int64(l.full + l.probeOnly)
}

// Refused is how many connections were closed at once by a limit.
func (l *httpListener) Refused() int64 { return l.refused.Load() }

func (l *httpListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		ip := c.RemoteAddr().String()
		if host, _, err := net.SplitHostPort(ip); err == nil {
			ip = host
		}
		hc, why := l.admit(c, ip)
		if why == "" {
			return hc, nil
		}
		l.refused.Add(1)
		c.Close()
		l.logSpaced("HTTP listener refused a connection", "remote", c.RemoteAddr().String(), "reason", why)
	}
}

// admit counts c from ip, after closing an idle connection to make room
// if a limit needs it, or says which limit refuses it.
func (l *httpListener) admit(c net.Conn, ip string) (*httpConn, string) {
	for {
		l.mu.Lock()
		var idle *httpConn
		why := ""
		switch {
		case len(l.byIP[ip]) >= httpMaxConnsPerIP:
			idle = idleOf(l.byIP[ip])
			why = fmt.Sprintf("%s holds %d connections, the most one address may", ip, httpMaxConnsPerIP)
		case l.full >= httpMaxConns:
			for _, conns := range l.byIP {
				if idle = idleOf(conns); idle != nil {
					break
				}
			}
			if idle == nil && l.probeOnly >= httpProbeConns {
				why = fmt.Sprintf("%d connections open, the most allowed", httpMaxConns+httpProbeConns)
			}
		}
		if idle == nil && why == "" {
			hc := &httpConn{Conn: c, l: l, ip: ip, probeOnly: l.full >= httpMaxConns}
			if hc.probeOnly {
				l.probeOnly++
			} else {
				l.full++
			}
			if l.byIP[ip] == nil {
				l.byIP[ip] = map[*httpConn]struct{}{}
			}
			l.byIP[ip][hc] = struct{}{}
			l.mu.Unlock()
			return hc, ""
		}
		l.mu.Unlock()
		if idle == nil {
			return nil, why
		}
		idle.Close() // frees its place; then try again
	}
}

// idleOf returns a connection of conns that waits for its next request.
func idleOf(conns map[*httpConn]struct{}) *httpConn {
	for c := range conns {
		if c.idle.Load() && !c.probeOnly {
			return c
		}
	}
	return nil
}

func (l *httpListener) release(c *httpConn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if c.probeOnly {
		l.probeOnly--
	} else {
		l.full--
	}
	if delete(l.byIP[c.ip], c); len(l.byIP[c.ip]) == 0 {
		delete(l.byIP, c.ip)
	}
}

// connState follows whether each connection is idle between requests.
func (l *httpListener) connState(c net.Conn, state http.ConnState) {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	if hc, ok := c.(*httpConn); ok {
		hc.idle.Store(state == http.StateIdle)
	}
}

// logSpaced logs at most one line a second.
func (l *httpListener) logSpaced(msg string, args ...any) {
	if l.spaced.Allow() {
		l.logger.Warn(msg, args...)
	}
}

// httpConn is an admitted connection; closing it frees its place once.
type httpConn struct {
	net.Conn
	l         *httpListener
	ip        string
	probeOnly bool
	idle      atomic.Bool // waiting for its next request
	closed    sync.Once
}

func (c *httpConn) Close() error {
	c.closed.Do(func() { c.l.release(c) })
	return c.Conn.Close()
}

type probeOnlyKey struct{}

// connContext marks the requests of a probe-only connection.
func connContext(ctx context.Context, c net.Conn) context.Context {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	if hc, ok := c.(*httpConn); ok && hc.probeOnly {
		return context.WithValue(ctx, probeOnlyKey{}, true)
	}
	return ctx
}

// probesWhenBusy answers only /healthz and /readyz on a probe-only
// connection, and closes it after the answer.
func probesWhenBusy(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Context().Value(probeOnlyKey{}) != nil {
			w.Header().Set("Connection", "close")
			if r.URL.Path != "/healthz" && r.URL.Path != "/readyz" {
				http.Error(w, "the HTTP listener is busy: only /healthz and /readyz are served now", http.StatusServiceUnavailable)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// hostAllowList refuses a request whose Host header is not a name of this
// broker, before any page, token or metric is served: a page of another
// site whose name was made to resolve to this address (DNS rebinding)
// sends its own name. IP literals, localhost and the machine's host name
// are always allowed; more names come from --http-host.
type hostAllowList struct {
	names  map[string]bool
	logger *slog.Logger
	spaced logspace.Every
}

func newHostAllowList(extra []string, logger *slog.Logger) *hostAllowList {
	a := &hostAllowList{names: map[string]bool{"localhost": true}, logger: logger}
	if h, err := os.Hostname(); err == nil && h != "" {
		a.names[strings.ToLower(h)] = true
	}
	for _, n := range extra {
		if n = strings.ToLower(strings.TrimSpace(n)); n != "" {
			a.names[n] = true
		}
	}
	return a
}

// allowed reports whether host (a Host header, with or without a port)
// names this broker.
func (a *hostAllowList) allowed(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.ToLower(strings.TrimSuffix(strings.Trim(host, "[]"), "."))
	if net.ParseIP(host) != nil || a.names[host] || strings.HasSuffix(host, ".localhost") {
		return true
	}
	return false
}

func (a *hostAllowList) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !a.allowed(r.Host) {
			if a.spaced.Allow() {
				a.logger.Warn("HTTP listener refused a request for another host name (add it with --http-host if it is this broker's)",
					"remote", r.RemoteAddr, "host", r.Host, "path", r.URL.Path)
			}
			http.Error(w, fmt.Sprintf("%q is not a name of this broker: start it with --http-host to serve that name", r.Host), http.StatusMisdirectedRequest)
			return
		}
		next.ServeHTTP(w, r)
	})
}
