package server

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sluicemq/sluice/actors"
	"github.com/sluicemq/sluice/client"
)

// A broker started in-process serves a client that shares its actor
// system: a topic created, records produced with acks=all and read back;
// after Close and a new Start on the same data directory, the records
// are still there.
func TestEmbeddedBroker(t *testing.T) {
	dir := t.TempDir()
	start := func() *Server {
		t.Helper()
		cfg := actors.DefaultBrokerConfig()
		cfg.DataDir = dir
		srv, err := New(Config{Broker: cfg, Addr: "127.0.0.1:0"})
		if err != nil {
			t.Fatal(err)
		}
		if err := srv.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		return srv
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	srv := start()
	opts := client.WithActorSystem(srv.System())
	admin, err := client.NewAdmin(srv.Addr(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := admin.CreateTopic(ctx, client.TopicSpec{Name: "embedded", Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	p, err := client.NewProducer(srv.Addr(), opts, client.Acks(client.AllAcks))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if _, _, err := p.ProduceSync(ctx, &client.Record{Topic: "embedded", Value: fmt.Appendf(nil, "v%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	p.Close()
	admin.Close()
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}

	srv = start()
	defer srv.Close()
	c, err := client.NewConsumer(srv.Addr(), client.WithActorSystem(srv.System()),
		client.ConsumePartitions(map[string]map[int32]client.Offset{"embedded": {0: client.AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var got []string
	for len(got) < 10 {
		f := c.PollFetches(ctx)
		if len(f.Errors) > 0 {
			t.Fatal(f.Errors)
		}
		for _, r := range f.Records {
			got = append(got, string(r.Value))
		}
	}
	if got[0] != "v0" || got[9] != "v9" {
		t.Fatalf("read back %v", got)
	}
}

// A configuration that cannot run is refused by New with the reason.
func TestConfigMistakes(t *testing.T) {
	base := actors.DefaultBrokerConfig()
	base.DataDir = t.TempDir()
	for _, c := range []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"half of TLS", func(c *Config) { c.TLSCert = "cert.pem" }, "TLS needs all of"},
		{"super users without TLS", func(c *Config) { c.Broker.SuperUsers = []string{"User:admin"} }, "needs TLS"},
		{"a bad address", func(c *Config) { c.Addr = "nowhere" }, "--addr"},
		{"kafka advertise alone", func(c *Config) { c.KafkaAdvertise = "x:1" }, "needs --kafka-addr"},
		{"a tiny in-flight budget", func(c *Config) { c.MaxInflightBytes = 10 }, "at least 1 MiB"},
	} {
		cfg := Config{Broker: base, Addr: "127.0.0.1:0"}
		c.edit(&cfg)
		_, err := New(cfg)
		var ce *ConfigError
		if !errors.As(err, &ce) || !strings.Contains(ce.Reason, c.want) {
			t.Errorf("%s: %v, want a ConfigError saying %q", c.name, err, c.want)
		}
	}
}
