package acl

import (
	"testing"

	"github.com/sluicemq/sluice/messages"
)

func quotaEntity(parts ...string) []*messages.QuotaEntity {
	var out []*messages.QuotaEntity
	for i := 0; i+1 < len(parts); i += 2 {
		if parts[i+1] == "<default>" {
			out = append(out, &messages.QuotaEntity{Type: parts[i], IsDefault: true})
		} else {
			out = append(out, &messages.QuotaEntity{Type: parts[i], Name: parts[i+1]})
		}
	}
	return out
}

func setQuota(key string, v float64) *messages.QuotaOp { return &messages.QuotaOp{Key: key, Value: v} }

// A connection's quota is the first entity in Kafka's order that sets the
// key, and its bytes count with those of the same tags.
func TestResolveQuota(t *testing.T) {
	rec, results := AlterQuotas(nil, []*messages.QuotaAlteration{
		{Entity: quotaEntity("user", "alice", "client-id", "etl"), Ops: []*messages.QuotaOp{setQuota(ProducerByteRate, 1)}},
		{Entity: quotaEntity("client-id", "<default>", "user", "alice"), Ops: []*messages.QuotaOp{setQuota(ProducerByteRate, 2)}},
		{Entity: quotaEntity("user", "bob"), Ops: []*messages.QuotaOp{setQuota(ProducerByteRate, 3), setQuota(ConsumerByteRate, 30)}},
		{Entity: quotaEntity("user", "<default>"), Ops: []*messages.QuotaOp{setQuota(ProducerByteRate, 6)}},
		{Entity: quotaEntity("client-id", "batch"), Ops: []*messages.QuotaOp{setQuota(ConsumerByteRate, 7)}},
		{Entity: quotaEntity("client-id", "<default>"), Ops: []*messages.QuotaOp{setQuota(ConsumerByteRate, 8)}},
	})
	for i, r := range results {
		if r.Error != messages.ErrorCode_NONE {
			t.Fatalf("entry %d: %v %s", i, r.Error, r.ErrorMessage)
		}
	}
	q := QuotasOf(rec)
	for _, c := range []struct {
		key, user, client string
		rate              float64
		bucket            QuotaBucket
	}{
		{ProducerByteRate, "alice", "etl", 1, QuotaBucket{ProducerByteRate, "alice", "etl"}},
		{ProducerByteRate, "alice", "web", 2, QuotaBucket{ProducerByteRate, "alice", "web"}},
		{ProducerByteRate, "bob", "web", 3, QuotaBucket{ProducerByteRate, "bob", ""}},     // bob's own: shared by his clients
		{ProducerByteRate, "carol", "web", 6, QuotaBucket{ProducerByteRate, "carol", ""}}, // the default user's: each user's own
		{ConsumerByteRate, "bob", "batch", 30, QuotaBucket{ConsumerByteRate, "bob", ""}},
		{ConsumerByteRate, "carol", "batch", 7, QuotaBucket{ConsumerByteRate, "", "batch"}},
		{ConsumerByteRate, "carol", "web", 8, QuotaBucket{ConsumerByteRate, "", "web"}},
	} {
		rate, bucket, ok := q.Resolve(c.key, c.user, c.client)
		if !ok || rate != c.rate || bucket != c.bucket {
			t.Errorf("%s of %s/%s: %v %+v %v, want %v %+v", c.key, c.user, c.client, rate, bucket, ok, c.rate, c.bucket)
		}
	}
	if _, _, ok := QuotasOf(nil).Resolve(ProducerByteRate, "a", "b"); ok {
		t.Error("a quota without any")
	}

	// Removing the last value removes the entity; the record given is kept.
	next, _ := AlterQuotas(rec, []*messages.QuotaAlteration{{Entity: quotaEntity("user", "bob"),
		Ops: []*messages.QuotaOp{{Key: ProducerByteRate, Remove: true}, {Key: ConsumerByteRate, Remove: true}}}})
	if len(next.Quotas) != len(rec.Quotas)-1 {
		t.Errorf("%d entities after removing bob's, from %d", len(next.Quotas), len(rec.Quotas))
	}
	if _, _, ok := QuotasOf(rec).Resolve(ConsumerByteRate, "bob", "x"); !ok {
		t.Error("AlterQuotas changed the record it was given")
	}
}

// Bad entities, keys and values are refused entry by entry, naming why.
func TestAlterQuotasRefusals(t *testing.T) {
	_, results := AlterQuotas(nil, []*messages.QuotaAlteration{
		{Entity: nil, Ops: []*messages.QuotaOp{setQuota(ProducerByteRate, 1)}},
		{Entity: quotaEntity("ip", "10.0.0.1"), Ops: []*messages.QuotaOp{setQuota("connection_creation_rate", 1)}},
		{Entity: quotaEntity("group", "g"), Ops: []*messages.QuotaOp{setQuota(ProducerByteRate, 1)}},
		{Entity: quotaEntity("user", "a", "user", "b"), Ops: []*messages.QuotaOp{setQuota(ProducerByteRate, 1)}},
		{Entity: quotaEntity("user", ""), Ops: []*messages.QuotaOp{setQuota(ProducerByteRate, 1)}},
		{Entity: quotaEntity("user", "a"), Ops: []*messages.QuotaOp{setQuota("request_percentage", 50)}},
		{Entity: quotaEntity("user", "a"), Ops: []*messages.QuotaOp{setQuota("bytes_per_fortnight", 50)}},
		{Entity: quotaEntity("user", "a"), Ops: []*messages.QuotaOp{setQuota(ProducerByteRate, 0)}},
		{Entity: quotaEntity("user", "a"), Ops: []*messages.QuotaOp{setQuota(ProducerByteRate, 1.5)}},
		{Entity: quotaEntity("user", "a"), Ops: []*messages.QuotaOp{setQuota(ProducerByteRate, 1), setQuota(ProducerByteRate, 2)}},
		{Entity: quotaEntity("client-id", ""), Ops: []*messages.QuotaOp{setQuota(ProducerByteRate, 1)}}, // an empty client id is one
	})
	for i, r := range results[:len(results)-1] {
		if r.Error != messages.ErrorCode_INVALID_REQUEST || r.ErrorMessage == "" {
			t.Errorf("entry %d: %v %q", i, r.Error, r.ErrorMessage)
		}
	}
	if last := results[len(results)-1]; last.Error != messages.ErrorCode_NONE {
		t.Errorf("an empty client id: %v %s", last.Error, last.ErrorMessage)
	}
}
