package consultest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"
)

func TestAgentRestartKeepsDataAndPauses(t *testing.T) {
	a := Start(t)
	kv := a.Client().KV()
	if _, err := kv.Put(&api.KVPair{Key: "k", Value: []byte("v")}, nil); err != nil {
		t.Fatal(err)
	}
	addr := a.Addr()
	if err := a.Restart(); err != nil {
		t.Fatal(err)
	}
	if a.Addr() != addr {
		t.Fatalf("address moved from %s to %s", addr, a.Addr())
	}
	p, _, err := kv.Get("k", nil)
	if err != nil || p == nil || string(p.Value) != "v" {
		t.Fatalf("after restart: %v, %v", p, err)
	}

	if err := a.Pause(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	_, _, err = kv.Get("k", (&api.QueryOptions{}).WithContext(ctx))
	cancel()
	if err == nil {
		t.Fatal("a paused agent answered")
	}
	if err := a.Resume(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := kv.Get("k", nil); err != nil {
		t.Fatalf("after resume: %v", err)
	}
}

func TestBinaryMissing(t *testing.T) {
	t.Setenv("SLUICE_CONSUL_BIN", "/nonexistent/consul")
	if _, err := Binary(); err == nil || !strings.Contains(err.Error(), "SLUICE_CONSUL_BIN") {
		t.Fatalf("Binary() error %v", err)
	}
}
