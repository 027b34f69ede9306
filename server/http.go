package server

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/sluicemq/sluice/acl"
	"github.com/sluicemq/sluice/messages"
	"github.com/sluicemq/sluice/metrics"
	"github.com/sluicemq/sluice/transport"
)

// The broker's HTTP listener: metrics, health probes and Go's profiles, on
// a mux of its own (nothing registered on http.DefaultServeMux is served).

// httpAuto is --http's default: 127.0.0.1 at the broker's port plus
// httpPortOffset (a random port when the broker's is 0).
const (
	httpAuto       = "auto"
	httpPortOffset = 1000
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

// httpHandler serves /metrics, /healthz, /readyz and /debug/pprof/, each
// behind guard. The console's pages join the mux once the broker runs.
func httpHandler(m *metrics.Broker, guard func(http.Handler) http.Handler, logger *slog.Logger) *http.ServeMux {
	mux := http.NewServeMux()
	handle := func(pattern string, h http.Handler) { mux.Handle(pattern, guard(h)) }
	handle("GET /metrics", promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{
		ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn), MaxRequestsInFlight: 4, Timeout: 10 * time.Second}))
	// healthz: the process serves HTTP (it is alive), whatever its
	// partitions' state.
	handle("GET /healthz", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "ok")
	}))
	// readyz: the broker has its metadata and every replica it hosts has
	// opened its log or reported it offline.
	handle("GET /readyz", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ok, why := m.Ready(); !ok {
			http.Error(w, "not ready: "+why, http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ready")
	}))
	handle("GET /debug/pprof/", http.HandlerFunc(pprof.Index))
	handle("GET /debug/pprof/cmdline", http.HandlerFunc(pprof.Cmdline))
	handle("GET /debug/pprof/profile", http.HandlerFunc(pprof.Profile))
	handle("GET /debug/pprof/symbol", http.HandlerFunc(pprof.Symbol))
	handle("GET /debug/pprof/trace", http.HandlerFunc(pprof.Trace))
	return mux
}

// httpAccess decides whom the HTTP listener of a broker with TLS serves.
// A visitor is the principal of its client certificate, or, with
// --http-anonymous, User:ANONYMOUS without one; the broker's ACLs, as the
// broker publishes them, say what it may see.
type httpAccess struct {
	acls      atomic.Pointer[acl.Authorizer] // nil until the metadata is loaded
	anonymous bool
}

// visitor returns r's principal, or why it has none.
func (a *httpAccess) visitor(r *http.Request) (string, error) {
	if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
		if p := transport.CertPrincipal(r.TLS.PeerCertificates[0]); p != "" {
			return p, nil
		}
		return "", errors.New("the certificate names no principal")
	}
	if a.anonymous {
		return transport.AnonymousPrincipal, nil
	}
	return "", errors.New("a client certificate is required")
}

// authorize says why principal may not perform op on a resource ("" when
// it may). Brokers and super users may do anything, as in the broker.
func (a *httpAccess) authorize(principal string, op messages.AclOperation, rt messages.AclResourceType, name string) string {
	if transport.IsBrokerPrincipal(principal) {
		return ""
	}
	authz := a.acls.Load()
	if authz == nil {
		return "the broker has not loaded the cluster's ACLs yet"
	}
	return authz.Why(principal, op, rt, name)
}

// operatorOnly guards the operator's endpoints (metrics, probes and
// profiles): they need Describe on the cluster, unless --http-anonymous
// serves them to everyone.
func (a *httpAccess) operatorOnly(next http.Handler) http.Handler {
	if a.anonymous {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		principal, err := a.visitor(r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		if why := a.authorize(principal, messages.AclOperation_ACL_OPERATION_DESCRIBE, messages.AclResourceType_ACL_RESOURCE_CLUSTER, ""); why != "" {
			http.Error(w, fmt.Sprintf("%s may not describe the cluster: %s", principal, why), http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// serveHTTP serves h on ln until the process ends, within the limits of
// http_limits.go. The timeouts keep a slow or silent client from holding a
// connection (slowloris); a profile may take up to its seconds parameter,
// hence the long write timeout. With tlsConfig it serves HTTPS; without,
// only requests for hosts (names) of this broker are served.
func serveHTTP(ln *httpListener, h http.Handler, tlsConfig *tls.Config, hosts *hostAllowList, logger *slog.Logger) *http.Server {
	if tlsConfig == nil {
		h = hosts.guard(h)
	}
	srv := &http.Server{Handler: probesWhenBusy(h), ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second,
		WriteTimeout: 2 * time.Minute, IdleTimeout: httpIdleTimeout, MaxHeaderBytes: 64 << 10, ConnContext: connContext, ConnState: ln.connState,
		ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelDebug)}
	var served net.Listener = ln
	if tlsConfig != nil {
		served = tls.NewListener(ln, tlsConfig)
	}
	go func() {
		if err := srv.Serve(served); err != nil && err != http.ErrServerClosed {
			logger.Error("HTTP listener stopped", "error", err)
		}
	}()
	return srv
}
