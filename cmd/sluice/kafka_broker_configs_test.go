package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
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
