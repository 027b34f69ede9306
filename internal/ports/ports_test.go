package ports

import (
	"net"
	"strconv"
	"testing"
)

// Ports handed out are distinct, free and below the ephemeral range; a
// run is free as a whole.
func TestPortsAreFreeAndNeverHandedTwice(t *testing.T) {
	_, hi := span()
	seen := map[int]bool{}
	got, err := Free(50)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range got {
		if seen[p] || p >= hi {
			t.Fatalf("port %d (seen %v, limit %d)", p, seen[p], hi)
		}
		seen[p] = true
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			t.Fatalf("port %d is not free: %v", p, err)
		}
		l.Close()
	}
	p, err := Run(3, 4)
	if err != nil {
		t.Fatal(err)
	}
	for q := p - 3; q < p+4; q++ {
		if seen[q] {
			t.Fatalf("run %d..%d overlaps a port handed out", p-3, p+3)
		}
	}
}
