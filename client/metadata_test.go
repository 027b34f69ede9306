package client

import (
	"slices"
	"testing"
	"time"
)

// Requests that may go to any broker try the brokers the user named
// first, in the order given, then the others by id, and those that failed
// in the last minute last: a client inside a broker asks that broker, not
// one that may just have stopped.
func TestAddrsTrySeedsFirst(t *testing.T) {
	m := newMetadata(nil, "10.0.0.2:9470, 10.0.0.9:9470", time.Second, time.Minute)
	m.brokers = map[int32]string{3: "10.0.0.3:9470", 1: "10.0.0.1:9470", 2: "10.0.0.2:9470"}
	want := []string{"10.0.0.2:9470", "10.0.0.9:9470", "10.0.0.1:9470", "10.0.0.3:9470"}
	for i := 0; i < 20; i++ { // map order varies between runs of the loop
		if got := m.addrs(); !slices.Equal(got, want) {
			t.Fatalf("addrs %v, want %v", got, want)
		}
	}
	failedAt.Store("10.0.0.2:9470", time.Now())
	defer failedAt.Delete("10.0.0.2:9470")
	if got, want := m.addrs(), []string{"10.0.0.9:9470", "10.0.0.1:9470", "10.0.0.3:9470", "10.0.0.2:9470"}; !slices.Equal(got, want) {
		t.Fatalf("with the first seed failed: addrs %v, want %v", got, want)
	}
}
