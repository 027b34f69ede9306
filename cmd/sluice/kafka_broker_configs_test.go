package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Dynamic broker configs through kadm: the cluster default num.partitions
// shapes the next topic created without a count; a broker's own
// auto.create.topics.enable wins over the default and its flag; both are
// described with their sources, survive a restart, and a setting read at
// start is refused with the reason.
func TestKafkaDynamicBrokerConfigs(t *testing.T) {
	// A fixed Kafka port: the broker restarts below.
	kafkaAt := "127.0.0.1:" + strconv.Itoa(freePort(t))
	b := startBroker(t, "--id", "1", "--kafka-addr", kafkaAt, "--auto-create-topics")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl := newKgo(t, kafkaAt)
	adm := kadm.NewClient(cl)

	eventually(t, 10*time.Second, func() string { // a controller is elected
		if res, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Name: "num.partitions", Value: kadm.StringPtr("3")}}); err != nil || res[0].Err != nil {
			return fmt.Sprintf("cluster default num.partitions: %v %+v", err, res)
		}
		return ""
	})
	if res, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Name: "auto.create.topics.enable", Value: kadm.StringPtr("false")}}, 1); err != nil || res[0].Err != nil {
		t.Fatalf("broker 1's auto.create.topics.enable: %v %+v", err, res)
	}
	// Validated only: checked by the broker, nothing stored.
	if res, err := adm.ValidateAlterBrokerConfigs(ctx, []kadm.AlterConfig{{Name: "num.partitions", Value: kadm.StringPtr("0")}}); err != nil || !errors.Is(res[0].Err, kerr.InvalidConfig) {
		t.Errorf("validating num.partitions=0: %v %+v", err, res)
	}
	if res, err := adm.ValidateAlterBrokerConfigs(ctx, []kadm.AlterConfig{{Name: "num.partitions", Value: kadm.StringPtr("9")}}); err != nil || res[0].Err != nil {
		t.Errorf("validating num.partitions=9: %v %+v", err, res)
	}
	res, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Name: "log.dirs", Value: kadm.StringPtr("/tmp/x")}})
	if err != nil || !errors.Is(res[0].Err, kerr.InvalidConfig) || !strings.Contains(res[0].ErrMessage, "read at start") {
		t.Errorf("log.dirs: %v %+v", err, res)
	}

	eventually(t, 10*time.Second, func() string { // the change reaches the broker's metadata
		created, err := adm.CreateTopic(ctx, -1, -1, nil, "dyn-"+time.Now().Format("150405.000000"))
		if err != nil {
			return "create: " + err.Error()
		}
		if created.NumPartitions != 3 {
			return "a topic created without a partition count has " + strconv.Itoa(int(created.NumPartitions)) + " partitions"
		}
		return ""
	})
	autoCreated := func(topic string) bool {
		req := kmsg.NewPtrMetadataRequest()
		req.AllowAutoTopicCreation = true
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(topic)
		req.Topics = append(req.Topics, rt)
		for range 20 {
			resp, err := req.RequestWith(ctx, cl)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Topics[0].ErrorCode == 0 {
				return true
			}
			if resp.Topics[0].ErrorCode == kerr.UnknownTopicOrPartition.Code {
				return false
			}
			time.Sleep(100 * time.Millisecond) // being created
		}
		return false
	}
	if autoCreated("auto-off") {
		t.Error("a topic was created on its first metadata request with auto.create.topics.enable=false on the broker")
	}

	check := func() {
		t.Helper()
		described, err := adm.DescribeBrokerConfigs(ctx, 1)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]kadm.Config{}
		for _, rc := range described {
			for _, c := range rc.Configs {
				seen[c.Key] = c
			}
		}
		if c := seen["num.partitions"]; c.MaybeValue() != "3" || c.Source != kmsg.ConfigSourceDynamicDefaultBrokerConfig {
			t.Errorf("num.partitions: %+v", c)
		}
		if c := seen["auto.create.topics.enable"]; c.MaybeValue() != "false" || c.Source != kmsg.ConfigSourceDynamicBrokerConfig || len(c.Synonyms) != 2 {
			t.Errorf("auto.create.topics.enable: %+v", c)
		}
		defaults, err := adm.DescribeBrokerConfigs(ctx)
		if err != nil || len(defaults) != 1 || len(defaults[0].Configs) != 1 || defaults[0].Configs[0].Key != "num.partitions" {
			t.Errorf("the cluster default configs: %+v %v", defaults, err)
		}
	}
	check()
	b.stop()
	b.start()
	cl = newKgo(t, kafkaAt)
	adm = kadm.NewClient(cl)
	check()

	// Deleting the broker's own value gives back its flag (true).
	if res, err := adm.AlterBrokerConfigsState(ctx, []kadm.AlterConfig{{Op: kadm.DeleteConfig, Name: "auto.create.topics.enable"}}, 1); err != nil || res[0].Err != nil {
		t.Fatalf("delete: %v %+v", err, res)
	}
	eventually(t, 10*time.Second, func() string {
		if !autoCreated("auto-on") {
			return "not auto-created after the broker's value was deleted"
		}
		return ""
	})
}

// max.connections.per.ip changed while the broker runs bounds the next
// connections to both of its doors (open ones stay), and deleting it gives
// back the flag's limit.
func TestDynamicConnectionLimits(t *testing.T) {
	kafkaAt := "127.0.0.1:" + strconv.Itoa(freePort(t))
	b := startBroker(t, "--id", "1", "--kafka-addr", kafkaAt)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	adm := kadm.NewClient(newKgo(t, kafkaAt))
	eventually(t, 10*time.Second, func() string { // a controller is elected
		if res, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Name: "max.connections.per.ip", Value: kadm.StringPtr("4")}}, 1); err != nil || res[0].Err != nil {
			return fmt.Sprintf("broker 1's max.connections.per.ip: %v %+v", err, res)
		}
		return ""
	})
	adm.Close() // its connections count no more

	var open []net.Conn
	t.Cleanup(func() {
		for _, c := range open {
			c.Close()
		}
	})
	// kafkaServed opens a Kafka connection and reports whether its
	// ApiVersions is answered (a refused one is closed unanswered).
	kafkaServed := func() bool {
		c, err := net.Dial("tcp", kafkaAt)
		if err != nil {
			t.Fatal(err)
		}
		open = append(open, c)
		frame := kafkaFrame(kmsg.NewPtrApiVersionsRequest(), 0, 1)
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := c.Write(frame); err != nil {
			return false
		}
		_, err = c.Read(make([]byte, 4))
		return err == nil
	}
	// nativeAdmitted opens a connection to the broker's own door: one over
	// a limit is closed at once, unanswered; an admitted one gets the
	// server's HTTP/2 settings.
	nativeAdmitted := func() bool {
		c, err := net.Dial("tcp", b.Addr)
		if err != nil {
			t.Fatal(err)
		}
		open = append(open, c)
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		n, err := c.Read(make([]byte, 1))
		return n > 0 || errors.Is(err, os.ErrDeadlineExceeded)
	}
	eventually(t, 10*time.Second, func() string { // the change reaches the broker
		if kafkaServed() {
			return "Kafka connections are still served"
		}
		return ""
	})
	closeAll := func() {
		for _, c := range open {
			c.Close()
		}
		open = nil
	}
	closeAll()
	count := func(admitted func() bool) int {
		n := 0
		for range 6 {
			if admitted() {
				n++
			}
		}
		return n
	}
	if n := count(nativeAdmitted); n > 4 {
		t.Errorf("broker door: %d of 6 connections from one address admitted with max.connections.per.ip 4", n)
	}
	closeAll()
	eventually(t, 10*time.Second, func() string { // the closed ones are gone
		if !kafkaServed() {
			return "no Kafka connection served after the others closed"
		}
		return ""
	})
	if n := 1 + count(kafkaServed); n > 4 {
		t.Errorf("Kafka door: %d of 7 connections from one address admitted with max.connections.per.ip 4", n)
	}
	closeAll()

	// Deleted: the flag's limit (200) is back.
	eventually(t, 10*time.Second, func() string {
		adm := kadm.NewClient(newKgo(t, kafkaAt))
		defer adm.Close()
		if res, err := adm.AlterBrokerConfigsState(ctx, []kadm.AlterConfig{{Op: kadm.DeleteConfig, Name: "max.connections.per.ip"}}, 1); err != nil || res[0].Err != nil {
			return fmt.Sprintf("delete: %v %+v", err, res)
		}
		return ""
	})
	eventually(t, 10*time.Second, func() string {
		defer closeAll()
		if n := count(kafkaServed); n != 6 {
			return fmt.Sprintf("Kafka door: %d of 6 connections served after the limit was deleted", n)
		}
		if n := count(nativeAdmitted); n != 6 {
			return fmt.Sprintf("broker door: %d of 6 connections admitted after the limit was deleted", n)
		}
		return ""
	})

	// An override for this address: the broker door admits 3 of 6.
	eventually(t, 10*time.Second, func() string {
		adm := kadm.NewClient(newKgo(t, kafkaAt))
		defer adm.Close()
		if res, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Name: "max.connections.per.ip.overrides", Value: kadm.StringPtr("127.0.0.1:3")}}); err != nil || res[0].Err != nil {
			return fmt.Sprintf("max.connections.per.ip.overrides: %v %+v", err, res)
		}
		return ""
	})
	eventually(t, 10*time.Second, func() string {
		defer closeAll()
		if n := count(nativeAdmitted); n != 3 {
			return fmt.Sprintf("broker door: %d of 6 connections admitted with an override of 3 for the address", n)
		}
		return ""
	})
}

// The dynamic defaults of topic configs (Kafka's message.max.bytes,
// log.retention.ms and friends) apply to the running topics that set none
// of their own: a cluster default message.max.bytes refuses a larger batch
// at once, topics with their own value keep it, DescribeConfigs shows where
// each value comes from, a value out of the topic config's range is
// refused, and deleting it gives back the flag.
func TestDynamicTopicConfigDefaults(t *testing.T) {
	kafkaAt := "127.0.0.1:" + strconv.Itoa(freePort(t))
	startBroker(t, "--id", "1", "--kafka-addr", kafkaAt)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl := newKgo(t, kafkaAt)
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "plain"); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"max.message.bytes": kadm.StringPtr("1048576")}, "own"); err != nil {
		t.Fatal(err)
	}
	big := make([]byte, 4096)
	rand.Read(big) // not compressed below the limit
	produce := func(topic string) error {
		return cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: big}).FirstErr()
	}
	if err := produce("plain"); err != nil {
		t.Fatalf("4 KiB under the flag's 1 MiB: %v", err)
	}
	eventually(t, 10*time.Second, func() string { // a controller is elected
		if res, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Name: "message.max.bytes", Value: kadm.StringPtr("2048")}}); err != nil || res[0].Err != nil {
			return fmt.Sprintf("cluster default message.max.bytes: %v %+v", err, res)
		}
		return ""
	})
	res, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Name: "log.segment.bytes", Value: kadm.StringPtr("1")}})
	if err != nil || !errors.Is(res[0].Err, kerr.InvalidConfig) || !strings.Contains(res[0].ErrMessage, "segment.bytes") {
		t.Errorf("log.segment.bytes=1: %v %+v", err, res)
	}
	eventually(t, 10*time.Second, func() string { // the default reaches the topic's partition
		if err := produce("plain"); !errors.Is(err, kerr.MessageTooLarge) {
			return fmt.Sprintf("4 KiB to a topic without its own max.message.bytes: %v, want MESSAGE_TOO_LARGE", err)
		}
		return ""
	})
	if err := produce("own"); err != nil {
		t.Errorf("4 KiB to a topic with its own max.message.bytes: %v", err)
	}
	described, err := adm.DescribeTopicConfigs(ctx, "plain")
	if err != nil {
		t.Fatal(err)
	}
	c, err := described.On("plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range c.Configs {
		if kv.Key == "max.message.bytes" && (kv.MaybeValue() != "2048" || kv.Source != kmsg.ConfigSourceDynamicDefaultBrokerConfig) {
			t.Errorf("plain's max.message.bytes: %+v", kv)
		}
	}

	if res, err := adm.AlterBrokerConfigsState(ctx, []kadm.AlterConfig{{Op: kadm.DeleteConfig, Name: "message.max.bytes"}}); err != nil || res[0].Err != nil {
		t.Fatalf("delete: %v %+v", err, res)
	}
	eventually(t, 10*time.Second, func() string {
		if err := produce("plain"); err != nil {
			return fmt.Sprintf("4 KiB after the default was deleted: %v", err)
		}
		return ""
	})
}
