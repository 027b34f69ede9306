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
		Limits: func() ConnLimits { return ConnLimits{Max: int(total.Load()), PerIP: int(perIP.Load())} }}
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

// An address named in the overrides has its own limit (0: none admitted);
// overrides given while the node runs replace the configured ones.
func TestConnLimiterPerAddressOverrides(t *testing.T) {
	var now atomic.Pointer[ConnLimits]
	now.Store(&ConnLimits{})
	cfg := Config{MaxConnections: 100, MaxConnectionsPerIP: 2, MaxConnectionsPerIPOverrides: map[string]int{"10.0.0.9": 4, "10.0.0.6": 0},
		Limits: func() ConnLimits { return *now.Load() }}
	l := newConnLimiter(insecure.NewCredentials(), cfg, &GuardStats{}, slog.New(slog.DiscardHandler))
	admitted := func(ip string, n int) int {
		got := 0
		for range n {
			if l.admit(ip) == "" {
				got++
			}
		}
		return got
	}
	if a, b, c := admitted("10.0.0.9", 6), admitted("10.0.0.1", 6), admitted("10.0.0.6", 1); a != 4 || b != 2 || c != 0 {
		t.Fatalf("admitted %d from the address with 4, %d from another (limit 2), %d from the one with 0", a, b, c)
	}
	now.Store(&ConnLimits{PerIPOverrides: map[string]int{"10.0.0.1": 5}})
	if a, b := admitted("10.0.0.9", 1), admitted("10.0.0.1", 6); a != 0 || b != 3 {
		t.Fatalf("after the overrides changed: %d more from the one no longer named (holding 4, limit 2), %d more from the one with 5 (holding 2)", a, b)
	}
}
