package transport

import (
	"log/slog"
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
