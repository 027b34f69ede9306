package transport

import (
	"log/slog"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc/credentials/insecure"
)

func TestConnLimiterCounts(t *testing.T) {
	l := newConnLimiter(insecure.NewCredentials(), Config{MaxConnections: 3, MaxConnectionsPerIP: 2}, &GuardStats{}, slog.New(slog.DiscardHandler))
	for i, c := range []struct {
		ip    string
		admit bool
	}{{"10.0.0.1", true}, {"10.0.0.1", true}, {"10.0.0.1", false}, {"10.0.0.2", true}, {"10.0.0.3", false}} {
		if why := l.admit(c.ip); (why == "") != c.admit {
			t.Fatalf("connection %d from %s: admitted %v (%q), want %v", i, c.ip, why == "", why, c.admit)
		}
	}
	if l.stats.Open() != 3 || l.stats.RefusedPerIP() != 1 || l.stats.RefusedTotal() != 1 {
		t.Fatalf("open %d, refused per address %d, in all %d", l.stats.Open(), l.stats.RefusedPerIP(), l.stats.RefusedTotal())
	}
	l.release("10.0.0.1")
	if why := l.admit("10.0.0.3"); why != "" {
		t.Fatalf("a place given back was not taken: %s", why)
	}
	if why := l.admit("10.0.0.1"); why == "" {
		t.Fatal("admitted over the total limit")
	}
}

// Limits, when set, are read at each new connection: a lower limit refuses
// the next one (open ones stay), a higher one admits it, and zero keeps
// the configured limit.
func TestConnLimiterFollowsChangedLimits(t *testing.T) {
	var total, perIP atomic.Int64
	cfg := Config{MaxConnections: 10, MaxConnectionsPerIP: 10,
		Limits: func() (int, int) { return int(total.Load()), int(perIP.Load()) }}
	l := newConnLimiter(insecure.NewCredentials(), cfg, &GuardStats{}, slog.New(slog.DiscardHandler))
	for range 3 {
		if why := l.admit("10.0.0.1"); why != "" {
			t.Fatalf("admitted under the configured limits: %s", why)
		}
	}
	perIP.Store(3)
	if why := l.admit("10.0.0.1"); why == "" {
		t.Fatal("a fourth connection from one address admitted with max.connections.per.ip 3")
	}
	if why := l.admit("10.0.0.2"); why != "" {
		t.Fatalf("another address refused: %s", why)
	}
	total.Store(4)
	if why := l.admit("10.0.0.3"); why == "" {
		t.Fatal("a fifth connection admitted with max.connections 4")
	}
	total.Store(0) // back to the configured 10
	perIP.Store(5)
	if why := l.admit("10.0.0.1"); why != "" {
		t.Fatalf("refused once the limits were raised: %s", why)
	}
}
