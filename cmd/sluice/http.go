package main

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/net/netutil"

	"github.com/sluicemq/sluice/actors/transport"
	"github.com/sluicemq/sluice/kafka"
	"github.com/sluicemq/sluice/messages"
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
// The console's pages join the mux once the broker runs.
func httpHandler(m *metrics.Broker, logger *slog.Logger) *http.ServeMux {
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

// httpAuthorizer lets through, on a broker with TLS, the principals the
// broker allows to describe the cluster: each principal's first request
// asks the broker (a DescribeAcls of nothing, which needs exactly that),
// and the answer holds for authCacheFor, so that scrapes do not queue in
// the broker actor's mailbox.
type httpAuthorizer struct {
	broker atomic.Pointer[localBroker] // nil until the broker actor runs
	mu     sync.Mutex
	until  map[string]time.Time // principal -> allowed until
}

const authCacheFor = 10 * time.Second

func (a *httpAuthorizer) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
			http.Error(w, "a client certificate is required", http.StatusUnauthorized)
			return
		}
		principal := transport.CertPrincipal(r.TLS.PeerCertificates[0])
		if principal == "" {
			http.Error(w, "the certificate names no principal", http.StatusForbidden)
			return
		}
		if code, why := a.allowed(principal, r.RemoteAddr); code != http.StatusOK {
			http.Error(w, why, code)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// allowed answers 200, or the status and reason of a refusal.
func (a *httpAuthorizer) allowed(principal, peer string) (int, string) {
	now := time.Now()
	a.mu.Lock()
	ok := now.Before(a.until[principal])
	a.mu.Unlock()
	if ok {
		return http.StatusOK, ""
	}
	b := a.broker.Load()
	if b == nil {
		return http.StatusServiceUnavailable, "the broker is starting"
	}
	probe := &messages.DescribeAclsRequest{Filter: &messages.AclBinding{Principal: "User:sluice-http-probe"}} // the answer is not used
	res, err := b.Ask(kafka.Caller{Principal: principal, Peer: peer}, probe, 5*time.Second).Wait()
	resp, isResp := res.(*messages.DescribeAclsResponse)
	switch {
	case err != nil:
		return http.StatusServiceUnavailable, "the broker did not answer: " + err.Error()
	case !isResp:
		return http.StatusInternalServerError, fmt.Sprintf("unexpected answer %T", res)
	case resp.Error != messages.ErrorCode_NONE:
		return http.StatusForbidden, fmt.Sprintf("%s may not describe the cluster: %s", principal, resp.Error.Err(resp.ErrorMessage))
	}
	a.mu.Lock()
	a.until[principal] = now.Add(authCacheFor)
	a.mu.Unlock()
	return http.StatusOK, ""
}

// serveHTTP serves h on ln until the process ends. The timeouts keep a
// slow or silent client from holding a connection (slowloris); a profile
// may take up to its seconds parameter, hence the long write timeout.
// With tlsConfig it serves HTTPS.
func serveHTTP(ln net.Listener, h http.Handler, tlsConfig *tls.Config, logger *slog.Logger) *http.Server {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second,
		WriteTimeout: 2 * time.Minute, IdleTimeout: time.Minute, MaxHeaderBytes: 64 << 10,
		ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelDebug)}
	ln = netutil.LimitListener(ln, httpMaxConns)
	if tlsConfig != nil {
		ln = tls.NewListener(ln, tlsConfig)
	}
	go func() {
		if err := srv.Serve(ln); err != nil && err != http.ErrServerClosed {
			logger.Error("HTTP listener stopped", "error", err)
		}
	}()
	return srv
}
