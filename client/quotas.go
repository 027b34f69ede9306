package client

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/sluicemq/sluice/messages"
)

// Quota keys: bytes per second a client may produce or fetch, over which
// the Kafka listener delays its answers (throttle_time_ms), as Kafka.
const (
	ProducerByteRate = "producer_byte_rate"
	ConsumerByteRate = "consumer_byte_rate"
)

// QuotaEntity names whom a client quota is for: a user, a client id, or a
// user's client id. DefaultUser (DefaultClientID) stands for every user
// (client id) without a quota of its own; leave a type empty to leave it
// out.
type QuotaEntity struct {
	User, ClientID               string
	DefaultUser, DefaultClientID bool
}

func (e QuotaEntity) String() string {
	part := func(kind, name string, def bool) string {
		switch {
		case def:
			return kind + "=<default>"
		case name != "":
			return kind + "=" + name
		}
		return ""
	}
	user, id := part("user", e.User, e.DefaultUser), part("client-id", e.ClientID, e.DefaultClientID)
	switch {
	case user != "" && id != "":
		return user + " " + id
	case user != "":
		return user
	}
	return id
}

func (e QuotaEntity) wire() ([]*messages.QuotaEntity, error) {
	var out []*messages.QuotaEntity
	if e.ClientID != "" || e.DefaultClientID {
		if e.ClientID != "" && e.DefaultClientID {
			return nil, fmt.Errorf("quota entity %v: a client id or the default client id, not both", e)
		}
		out = append(out, &messages.QuotaEntity{Type: "client-id", Name: e.ClientID, IsDefault: e.DefaultClientID})
	}
	if e.User != "" || e.DefaultUser {
		if e.User != "" && e.DefaultUser {
			return nil, fmt.Errorf("quota entity %v: a user or the default user, not both", e)
		}
		out = append(out, &messages.QuotaEntity{Type: "user", Name: e.User, IsDefault: e.DefaultUser})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("quota entity: name a user, a client id or a default")
	}
	return out, nil
}

// ClientQuota is the quotas of one entity, by key.
type ClientQuota struct {
	Entity QuotaEntity
	Values map[string]float64
}

// ClientQuotas lists every client quota. It needs DescribeConfigs on the
// cluster.
func (a *Admin) ClientQuotas(ctx context.Context) ([]ClientQuota, error) {
	resp, err := callAnyAs[*messages.ListClientQuotasResponse](ctx, a, &messages.ListClientQuotasRequest{})
	if err != nil {
		return nil, err
	}
	if err := resp.Error.Err(resp.ErrorMessage); err != nil {
		return nil, err
	}
	var out []ClientQuota
	for _, q := range resp.Quotas {
		cq := ClientQuota{Values: map[string]float64{}}
		for _, e := range q.Entity {
			switch e.Type {
			case "user":
				cq.Entity.User, cq.Entity.DefaultUser = e.Name, e.IsDefault
			case "client-id":
				cq.Entity.ClientID, cq.Entity.DefaultClientID = e.Name, e.IsDefault
			}
		}
		for _, v := range q.Values {
			cq.Values[v.Key] = v.Value
		}
		out = append(out, cq)
	}
	return out, nil
}

// AlterClientQuota sets and removes quotas of one entity (keys
// ProducerByteRate, ConsumerByteRate). A bad key or value refuses the
// change. It needs AlterConfigs on the cluster.
func (a *Admin) AlterClientQuota(ctx context.Context, entity QuotaEntity, set map[string]float64, remove []string) error {
	wire, err := entity.wire()
	if err != nil {
		return err
	}
	alt := &messages.QuotaAlteration{Entity: wire}
	for _, key := range slices.Sorted(maps.Keys(set)) {
		alt.Ops = append(alt.Ops, &messages.QuotaOp{Key: key, Value: set[key]})
	}
	for _, key := range remove {
		alt.Ops = append(alt.Ops, &messages.QuotaOp{Key: key, Remove: true})
	}
	resp, err := callAnyAs[*messages.AlterClientQuotasResponse](ctx, a, &messages.AlterClientQuotasRequest{Entries: []*messages.QuotaAlteration{alt}})
	if err != nil {
		return err
	}
	if err := resp.Error.Err(resp.ErrorMessage); err != nil {
		return err
	}
	if len(resp.Results) != 1 {
		return fmt.Errorf("unexpected answer with %d results", len(resp.Results))
	}
	return resp.Results[0].Error.Err(resp.Results[0].ErrorMessage)
}
