package main

import (
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/net/netutil"

	"github.com/sluicemq/sluice/metrics"
)

// The broker's HTTP listener: metrics, health probes and Go's profiles, on
// a mux of its own (nothing registered on http.DefaultServeMux is served).

// httpAuto is --http's default: 127.0.0.1 at the broker's port plus
// httpPortOffset (a random port when the broker's is 0).
const (
	httpAuto       = "auto"
	httpPortOffset = 1000
	// httpMaxConns bounds the connections served at once; more wait to be
	// accepted, never holding anything of the broker's.
	httpMaxConns = 64
)

// httpListen binds the HTTP listener: flag is --http, brokerPort the
// broker's port. An explicit address that cannot be bound is an error;
// the default falls back to a random port (it may collide with anything).
func httpListen(flag string, brokerPort int, logger *slog.Logger) (net.Listener, error) {
	if flag == "" {
		return nil, nil
	}
	if flag != httpAuto {
		ln, err := net.Listen("tcp", flag)
		if err != nil {
			return nil, fmt.Errorf("--http: %w", err)
		}
		return ln, nil
	}
	port := 0
	if brokerPort != 0 && brokerPort+httpPortOffset <= 65535 {
		port = brokerPort + httpPortOffset
	}
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil && port != 0 {
		logger.Warn("the default HTTP port is taken; using a random one (set --http)", "port", port, "error", err)
		ln, err = net.Listen("tcp", "127.0.0.1:0")
	}
	if err != nil {
		return nil, fmt.Errorf("--http: %w", err)
	}
	return ln, nil
}

// httpHandler serves /metrics, /healthz, /readyz and /debug/pprof/.
func httpHandler(m *metrics.Broker, logger *slog.Logger) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{
		ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn), MaxRequestsInFlight: 4, Timeout: 10 * time.Second}))
	// healthz: the process serves HTTP (it is alive), whatever its
	// partitions' state.
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	// readyz: the broker has its metadata and every replica it hosts has
	// opened its log or reported it offline.
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		if ok, why := m.Ready(); !ok {
			http.Error(w, "not ready: "+why, http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ready")
	})
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	return mux
}

// serveHTTP serves h on ln until the process ends. The timeouts keep a
// slow or silent client from holding a connection (slowloris); a profile
// may take up to its seconds parameter, hence the long write timeout.
func serveHTTP(ln net.Listener, h http.Handler, logger *slog.Logger) *http.Server {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second,
		WriteTimeout: 2 * time.Minute, IdleTimeout: time.Minute, MaxHeaderBytes: 64 << 10,
		ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelDebug)}
	go func() {
		if err := srv.Serve(netutil.LimitListener(ln, httpMaxConns)); err != nil && err != http.ErrServerClosed {
			logger.Error("HTTP listener stopped", "error", err)
		}
	}()
	return srv
}
