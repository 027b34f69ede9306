package kafka

import (
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
	"google.golang.org/protobuf/proto"

	"github.com/sluicemq/sluice/acl"
	"github.com/sluicemq/sluice/messages"
)

// DescribeClientQuotas filters as Kafka's: exact names, defaults, any
// entity of a type, and strict filters that admit no other types.
func TestQuotaFilter(t *testing.T) {
	alice := &messages.ClientQuota{Entity: []*messages.QuotaEntity{{Type: "user", Name: "alice"}}}
	aliceETL := &messages.ClientQuota{Entity: []*messages.QuotaEntity{{Type: "client-id", Name: "etl"}, {Type: "user", Name: "alice"}}}
	defaultUser := &messages.ClientQuota{Entity: []*messages.QuotaEntity{{Type: "user", IsDefault: true}}}
	all := []*messages.ClientQuota{alice, aliceETL, defaultUser}
	component := func(typ string, match int8, name *string) kmsg.DescribeClientQuotasRequestComponent {
		c := kmsg.NewDescribeClientQuotasRequestComponent()
		c.EntityType, c.MatchType, c.Match = typ, kmsg.QuotasMatchType(match), name
		return c
	}
	for _, c := range []struct {
		name   string
		strict bool
		comps  []kmsg.DescribeClientQuotasRequestComponent
		want   []*messages.ClientQuota
	}{
		{"everything", false, nil, all},
		{"exact user", false, []kmsg.DescribeClientQuotasRequestComponent{component("user", 0, kmsg.StringPtr("alice"))}, []*messages.ClientQuota{alice, aliceETL}},
		{"exact user, strict", true, []kmsg.DescribeClientQuotasRequestComponent{component("user", 0, kmsg.StringPtr("alice"))}, []*messages.ClientQuota{alice}},
		{"default user", false, []kmsg.DescribeClientQuotasRequestComponent{component("user", 1, nil)}, []*messages.ClientQuota{defaultUser}},
		{"any client id", false, []kmsg.DescribeClientQuotasRequestComponent{component("client-id", 2, nil)}, []*messages.ClientQuota{aliceETL}},
	} {
		req := kmsg.NewPtrDescribeClientQuotasRequest()
		req.Components, req.Strict = c.comps, c.strict
		if err := checkQuotaFilter(req); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var got []*messages.ClientQuota
		for _, q := range all {
			if quotaMatches(req, q) {
				got = append(got, q)
			}
		}
		if len(got) != len(c.want) {
			t.Errorf("%s: %d entities, want %d", c.name, len(got), len(c.want))
			continue
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("%s: entity %d is %v, want %v", c.name, i, got[i], c.want[i])
			}
		}
	}
	for name, comps := range map[string][]kmsg.DescribeClientQuotasRequestComponent{
		"a type twice":         {component("user", 2, nil), component("user", 1, nil)},
		"exact without a name": {component("user", 0, nil)},
		"unknown match type":   {component("user", 7, nil)},
	} {
		req := kmsg.NewPtrDescribeClientQuotasRequest()
		req.Components = comps
		if checkQuotaFilter(req) == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// A produce over the client's quota is answered with the wait in
// throttle_time_ms, and the connection's next request is not read until
// the wait is over (KIP-219).
func TestQuotaThrottlesAndMutes(t *testing.T) {
	rec, results := acl.AlterQuotas(nil, []*messages.QuotaAlteration{{
		Entity: []*messages.QuotaEntity{{Type: acl.QuotaClientID, Name: "test"}}, // frameRequest's client id
		Ops:    []*messages.QuotaOp{{Key: acl.ProducerByteRate, Value: 100}},
	}})
	if results[0].Error != messages.ErrorCode_NONE {
		t.Fatal(results[0].ErrorMessage)
	}
	quotas := acl.QuotasOf(rec)
	_, addr := startServer(t, answerBy(func(proto.Message) (proto.Message, error) {
		return &messages.ProduceResponse{BaseOffset: 0}, nil
	}), Config{Quotas: func() *acl.Quotas { return quotas }})
	c := dial(t, addr)
	produce := func(corr int32) (*kmsg.ProduceResponse, time.Time) {
		t.Helper()
		req := kmsg.NewPtrProduceRequest()
		req.SetVersion(9)
		req.Acks, req.TimeoutMillis = 1, 5000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = "orders"
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = batch(t)
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		c.send(frameRequest(req, corr))
		resp := kmsg.NewPtrProduceResponse()
		resp.SetVersion(9)
		if _, err := c.read(resp); err != nil {
			t.Fatal(err)
		}
		return resp, time.Now()
	}
	size := len(batch(t)) // about 70 bytes: the first fits in the second's burst of 100
	if first, _ := produce(1); first.ThrottleMillis != 0 {
		t.Fatalf("within the burst: throttled %d ms", first.ThrottleMillis)
	}
	second, answered := produce(2)
	debt := 2*size - 100 // bytes over the burst, refilled at 100 bytes/s
	if max := int32(debt * 10); second.ThrottleMillis <= 0 || second.ThrottleMillis > max {
		t.Fatalf("over the quota by %d bytes: throttled %d ms, want up to %d", debt, second.ThrottleMillis, max)
	}
	if _, third := produce(3); third.Sub(answered) < time.Duration(second.ThrottleMillis)*time.Millisecond*9/10 {
		t.Errorf("the next request was answered %v after a throttle of %d ms", third.Sub(answered), second.ThrottleMillis)
	}
}

// The buckets kept are bounded: a client id beyond the bound takes the
// place of an idle one (or of any), and is throttled like the others.
func TestQuotaBucketsAreBounded(t *testing.T) {
	var q quotaBuckets
	now := time.Unix(1_700_000_000, 0)
	for i := range maxQuotaBuckets {
		q.bucket(acl.QuotaBucket{Key: acl.ProducerByteRate, ClientID: strconv.Itoa(i)}, now).Take(10, 100, now)
	}
	later := now.Add(time.Second)
	newcomer := acl.QuotaBucket{Key: acl.ProducerByteRate, ClientID: "newcomer"}
	if d := q.bucket(newcomer, later).Take(150, 100, later); d <= 0 {
		t.Fatalf("the newcomer over its quota was not throttled: %v", d)
	}
	if d := q.bucket(newcomer, later).Take(10, 100, later); d <= 0 || len(q.buckets) > maxQuotaBuckets {
		t.Errorf("the newcomer's bucket was not kept (%v) or the buckets grew to %d", d, len(q.buckets))
	}
}
