package acl

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/sluicemq/sluice/messages"
)

// Client quotas, as Kafka's: byte rates per user, per client id, or per
// user and client id, each named or the default of its type, kept in the
// security record. A connection's quota is the first entity in Kafka's
// order of precedence that sets the key (ResolveQuota); brokers enforce
// their own share, as in Kafka (quotas are per broker).

// Quota entity types.
const (
	QuotaUser     = "user"
	QuotaClientID = "client-id"
)

// The quota keys Sluice enforces, in bytes per second per broker.
const (
	ProducerByteRate = "producer_byte_rate"
	ConsumerByteRate = "consumer_byte_rate"
)

// notEnforced are Kafka's other quota keys, refused with the reason.
var notEnforced = map[string]string{
	"request_percentage":       "request time quotas are not enforced by Sluice",
	"controller_mutation_rate": "controller mutation quotas are not enforced by Sluice",
	"connection_creation_rate": "connection rate quotas are not enforced by Sluice: --max-connections-per-ip bounds connections",
}

// maxQuotaEntities bounds the quotas the record holds; maxQuotaName a
// user's or client id's name in one.
const (
	maxQuotaEntities = 10_000
	maxQuotaName     = 255
	maxQuotaRate     = 1e15
)

// AlterQuotas applies each entry's operations (Kafka's AlterClientQuotas):
// one result per entry, in order; a refused entry changes nothing. An
// entity left without quotas is removed.
func AlterQuotas(rec *messages.SecurityRecord, entries []*messages.QuotaAlteration) (*messages.SecurityRecord, []*messages.QuotaResult) {
	next := cloneRecord(rec)
	results := make([]*messages.QuotaResult, len(entries))
	for i, e := range entries {
		code, why := alterQuota(next, e)
		results[i] = &messages.QuotaResult{Error: code, ErrorMessage: why}
	}
	return next, results
}

func alterQuota(next *messages.SecurityRecord, e *messages.QuotaAlteration) (messages.ErrorCode, string) {
	entity, err := normaliseEntity(e.GetEntity())
	if err != nil {
		return messages.ErrorCode_INVALID_REQUEST, err.Error()
	}
	seen := map[string]bool{}
	for _, op := range e.GetOps() {
		if why, ok := notEnforced[op.GetKey()]; ok {
			return messages.ErrorCode_INVALID_REQUEST, fmt.Sprintf("%s: %s", op.GetKey(), why)
		}
		if op.GetKey() != ProducerByteRate && op.GetKey() != ConsumerByteRate {
			return messages.ErrorCode_INVALID_REQUEST, fmt.Sprintf("unknown quota %q: want %s or %s", op.GetKey(), ProducerByteRate, ConsumerByteRate)
		}
		if seen[op.GetKey()] {
			return messages.ErrorCode_INVALID_REQUEST, fmt.Sprintf("%s is changed twice in one entry", op.GetKey())
		}
		seen[op.GetKey()] = true
		if v := op.GetValue(); !op.GetRemove() && (math.IsNaN(v) || v < 1 || v > maxQuotaRate || v != math.Trunc(v)) {
			return messages.ErrorCode_INVALID_REQUEST, fmt.Sprintf("%s %v: want a whole number of bytes per second, 1 to %g", op.GetKey(), v, maxQuotaRate)
		}
	}
	i := slices.IndexFunc(next.Quotas, func(q *messages.ClientQuota) bool { return entityKeyOf(q.Entity) == entityKeyOf(entity) })
	quota := &messages.ClientQuota{Entity: entity}
	if i >= 0 {
		quota.Values = slices.Clone(next.Quotas[i].Values)
	} else if len(next.Quotas) >= maxQuotaEntities {
		return messages.ErrorCode_INVALID_REQUEST, fmt.Sprintf("the cluster has %d quota entities, the most it keeps", maxQuotaEntities)
	}
	for _, op := range e.GetOps() {
		quota.Values = slices.DeleteFunc(quota.Values, func(v *messages.QuotaValue) bool { return v.Key == op.GetKey() })
		if !op.GetRemove() {
			quota.Values = append(quota.Values, &messages.QuotaValue{Key: op.GetKey(), Value: op.GetValue()})
		}
	}
	slices.SortFunc(quota.Values, func(a, b *messages.QuotaValue) int { return strings.Compare(a.Key, b.Key) })
	switch {
	case i >= 0 && len(quota.Values) == 0:
		next.Quotas = slices.Delete(next.Quotas, i, i+1)
	case i >= 0:
		next.Quotas[i] = quota
	case len(quota.Values) > 0:
		next.Quotas = append(next.Quotas, quota)
		slices.SortFunc(next.Quotas, func(a, b *messages.ClientQuota) int {
			return cmp.Compare(entityKeyOf(a.Entity).String(), entityKeyOf(b.Entity).String())
		})
	}
	return messages.ErrorCode_NONE, ""
}

// normaliseEntity checks an entity (one or two parts of distinct types)
// and sorts its parts by type.
func normaliseEntity(parts []*messages.QuotaEntity) ([]*messages.QuotaEntity, error) {
	if len(parts) == 0 || len(parts) > 2 {
		return nil, fmt.Errorf("a quota entity has %d parts: want a user, a client id, or both", len(parts))
	}
	out := make([]*messages.QuotaEntity, 0, len(parts))
	for _, p := range parts {
		switch {
		case p.GetType() == "ip":
			return nil, fmt.Errorf("ip quotas (connection_creation_rate) are not enforced by Sluice: --max-connections-per-ip bounds connections")
		case p.GetType() != QuotaUser && p.GetType() != QuotaClientID:
			return nil, fmt.Errorf("unknown quota entity type %q: want %s or %s", p.GetType(), QuotaUser, QuotaClientID)
		case slices.ContainsFunc(out, func(q *messages.QuotaEntity) bool { return q.Type == p.GetType() }):
			return nil, fmt.Errorf("the quota entity names %s twice", p.GetType())
		case p.GetIsDefault() && p.GetName() != "":
			return nil, fmt.Errorf("the default %s has no name (got %q)", p.GetType(), p.GetName())
		case !p.GetIsDefault() && p.GetType() == QuotaUser && p.GetName() == "":
			return nil, fmt.Errorf("the user of a quota has an empty name: name one, or use the default user")
		case len(p.GetName()) > maxQuotaName:
			return nil, fmt.Errorf("the %s of a quota is %d bytes long: at most %d", p.GetType(), len(p.GetName()), maxQuotaName)
		}
		out = append(out, &messages.QuotaEntity{Type: p.GetType(), Name: p.GetName(), IsDefault: p.GetIsDefault()})
	}
	slices.SortFunc(out, func(a, b *messages.QuotaEntity) int { return strings.Compare(a.Type, b.Type) })
	return out, nil
}

// quotaPart is one type's part of an entity key.
type quotaPart struct {
	set, isDefault bool
	name           string
}

// entityKey identifies a quota entity.
type entityKey struct{ user, client quotaPart }

func entityKeyOf(parts []*messages.QuotaEntity) entityKey {
	var k entityKey
	for _, p := range parts {
		part := quotaPart{set: true, isDefault: p.GetIsDefault(), name: p.GetName()}
		if p.GetType() == QuotaUser {
			k.user = part
		} else {
			k.client = part
		}
	}
	return k
}

func (k entityKey) String() string {
	show := func(p quotaPart) string {
		switch {
		case !p.set:
			return "-"
		case p.isDefault:
			return "<default>"
		}
		return "=" + p.name
	}
	return "user" + show(k.user) + " client-id" + show(k.client)
}

// QuotaBucket names whose bytes a quota counts together: Kafka's quota
// tags. A user's own quota is shared by all its client ids; a default
// one is each user's (or client id's) own.
type QuotaBucket struct {
	Key, User, ClientID string
}

// Quotas is the client quotas of a security record, indexed for
// ResolveQuota. Build one per record; it is read-only after.
type Quotas struct {
	byEntity map[entityKey]map[string]float64
}

// QuotasOf indexes rec's quotas (nil: none).
func QuotasOf(rec *messages.SecurityRecord) *Quotas {
	if len(rec.GetQuotas()) == 0 {
		return nil
	}
	q := &Quotas{byEntity: map[entityKey]map[string]float64{}}
	for _, cq := range rec.GetQuotas() {
		values := map[string]float64{}
		for _, v := range cq.Values {
			values[v.Key] = v.Value
		}
		q.byEntity[entityKeyOf(cq.Entity)] = values
	}
	return q
}

// Resolve returns the rate of quota key for a connection of user (empty:
// none) and clientID, from the first entity in Kafka's order that sets
// it, and the bucket its bytes count in; ok is false when none does.
func (q *Quotas) Resolve(key, user, clientID string) (rate float64, bucket QuotaBucket, ok bool) {
	if q == nil {
		return 0, QuotaBucket{}, false
	}
	named := func(n string) quotaPart { return quotaPart{set: true, name: n} }
	dflt := quotaPart{set: true, isDefault: true}
	none := quotaPart{}
	for _, c := range [...]struct {
		k            entityKey
		user, client string
	}{
		{entityKey{named(user), named(clientID)}, user, clientID},
		{entityKey{named(user), dflt}, user, clientID},
		{entityKey{named(user), none}, user, ""},
		{entityKey{dflt, named(clientID)}, user, clientID},
		{entityKey{dflt, dflt}, user, clientID},
		{entityKey{dflt, none}, user, ""},
		{entityKey{none, named(clientID)}, "", clientID},
		{entityKey{none, dflt}, "", clientID},
	} {
		if rate, ok := q.byEntity[c.k][key]; ok {
			return rate, QuotaBucket{Key: key, User: c.user, ClientID: c.client}, true
		}
	}
	return 0, QuotaBucket{}, false
}
