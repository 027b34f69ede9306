package client

import (
	"log/slog"
	"testing"
	"time"

	"github.com/sluicemq/sluice/messages/record"
)

// Each option is of the kinds of client that use it, and of no other: a
// producer option given to a Consumer does not compile.
func TestOptionKinds(t *testing.T) {
	const (
		P = 1 << iota // Producer
		C             // Consumer
		G             // GroupConsumer
		S             // Subscribe
	)
	cases := []struct {
		name  string
		opt   any
		kinds int
	}{
		{"ListenAddr", ListenAddr("127.0.0.1:0"), P | C | G | S},
		{"AdvertisedAddr", AdvertisedAddr("127.0.0.1:1"), P | C | G | S},
		{"WithActorSystem", WithActorSystem(nil), P | C | G | S},
		{"RequestTimeout", RequestTimeout(time.Second), P | C | G | S},
		{"MetadataMaxAge", MetadataMaxAge(time.Second), P | C | G | S},
		{"WithLogger", WithLogger(slog.Default()), P | C | G | S},
		{"TLS", TLS("c", "k", "ca"), P | C | G | S},
		{"Token", Token("t"), P | C | G | S},
		{"Options", Options(Token("t")), P | C | G | S},
		{"Acks", Acks(AllAcks), P},
		{"Linger", Linger(time.Millisecond), P},
		{"Compression", Compression(record.Zstd), P},
		{"BatchBytes", BatchBytes(1 << 20), P},
		{"MaxBufferedBytes", MaxBufferedBytes(1 << 20), P},
		{"MaxInFlight", MaxInFlight(1), P},
		{"Retries", Retries(1), P},
		{"RetryBackoff", RetryBackoff(time.Millisecond), P},
		{"DeliveryTimeout", DeliveryTimeout(time.Second), P},
		{"MaxBlock", MaxBlock(time.Second), P},
		{"Idempotence", Idempotence(true), P},
		{"WithPartitioner", WithPartitioner(ManualPartitioner()), P},
		{"ConsumePartitions", ConsumePartitions(nil), C},
		{"FetchMaxBytes", FetchMaxBytes(1), C | G},
		{"FetchMaxWait", FetchMaxWait(time.Millisecond), C | G},
		{"ConsumeResetOffset", ConsumeResetOffset(AtEnd()), C | G | S},
		{"Assignors", Assignors("range"), G | S},
		{"ClientID", ClientID("me"), G | S},
		{"SessionTimeout", SessionTimeout(time.Second), G},
		{"RebalanceTimeout", RebalanceTimeout(time.Second), G},
		{"HeartbeatInterval", HeartbeatInterval(time.Second), G},
		{"AutoCommitInterval", AutoCommitInterval(time.Second), G},
		{"OnAssigned", OnAssigned(nil), G},
		{"OnRevoked", OnRevoked(nil), G},
		{"SubscribeCredit", SubscribeCredit(1), S},
	}
	for _, c := range cases {
		got := 0
		if _, ok := c.opt.(ProducerOpt); ok {
			got |= P
		}
		if _, ok := c.opt.(ConsumerOpt); ok {
			got |= C
		}
		if _, ok := c.opt.(GroupOpt); ok {
			got |= G
		}
		if _, ok := c.opt.(SubscribeOpt); ok {
			got |= S
		}
		if got != c.kinds {
			t.Errorf("%s is an option of kinds %04b, want %04b (producer, consumer, group, subscribe from the right)", c.name, got, c.kinds)
		}
	}
}

// Options given to a GroupConsumer or a subscription reach its
// configuration as they reach a Consumer's.
func TestConfigOfAppliesInOrder(t *testing.T) {
	cfg := configOf([]GroupOpt{FetchMaxBytes(100), ConsumeResetOffset(AtEnd()), SessionTimeout(7 * time.Second),
		Options(RequestTimeout(3*time.Second), RequestTimeout(4*time.Second)), ClientID("me")})
	if cfg.fetchMaxBytes != 100 || cfg.resetOffset != AtEnd() || cfg.group.sessionTimeout != 7*time.Second ||
		cfg.requestTimeout != 4*time.Second || cfg.group.clientID != "me" {
		t.Fatalf("config %+v", cfg)
	}
	if def := configOf([]ProducerOpt(nil)); def.linger != 0 || def.acks != -1 {
		t.Fatalf("defaults: linger %v acks %d", def.linger, def.acks)
	}
}
