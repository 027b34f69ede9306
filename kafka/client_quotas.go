package kafka

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/messages"
)

// DescribeClientQuotas (key 48) and AlterClientQuotas (key 49), v0–1: the
// cluster's client quotas (quotas.go enforces them). Describe needs
// DescribeConfigs on the cluster and is answered from the broker's
// metadata; Alter needs AlterConfigs on the cluster and is made by the
// controller (validate_only: checked by the broker, nothing stored).

// The match types of a DescribeClientQuotas component.
const (
	quotaMatchExact   = 0
	quotaMatchDefault = 1
	quotaMatchAny     = 2
)

func handleDescribeClientQuotas(r *request, h header, kreq kmsg.Request) func() kmsg.Response {
	req := kreq.(*kmsg.DescribeClientQuotasRequest)
	resp := kmsg.NewPtrDescribeClientQuotasResponse()
	if err := checkQuotaFilter(req); err != nil {
		return func() kmsg.Response {
			resp.ErrorCode, resp.ErrorMessage = int16(messages.ErrorCode_INVALID_REQUEST), kmsg.StringPtr(err.Error())
			return resp
		}
	}
	answer := r.ask(&messages.ListClientQuotasRequest{})
	return func() kmsg.Response {
		m, code, text := answerWithError[*messages.ListClientQuotasResponse](answer)
		if code != 0 {
			resp.ErrorCode, resp.ErrorMessage = code, text
			return resp
		}
		for _, q := range m.Quotas {
			if !quotaMatches(req, q) {
				continue
			}
			e := kmsg.NewDescribeClientQuotasResponseEntry()
			for _, p := range q.Entity {
				ent := kmsg.NewDescribeClientQuotasResponseEntryEntity()
				ent.Type = p.Type
				if !p.IsDefault {
					ent.Name = kmsg.StringPtr(p.Name)
				}
				e.Entity = append(e.Entity, ent)
			}
			for _, v := range q.Values {
				val := kmsg.NewDescribeClientQuotasResponseEntryValue()
				val.Key, val.Value = v.Key, v.Value
				e.Values = append(e.Values, val)
			}
			resp.Entries = append(resp.Entries, e)
		}
		return resp
	}
}

// checkQuotaFilter refuses a filter that names a type twice, an exact
// match without a name, or an unknown match type.
func checkQuotaFilter(req *kmsg.DescribeClientQuotasRequest) error {
	seen := map[string]bool{}
	for _, c := range req.Components {
		switch {
		case seen[c.EntityType]:
			return fmt.Errorf("the filter names entity type %q twice", c.EntityType)
		case c.MatchType == quotaMatchExact && c.Match == nil:
			return fmt.Errorf("an exact match of %q without a name", c.EntityType)
		case c.MatchType < quotaMatchExact || c.MatchType > quotaMatchAny:
			return fmt.Errorf("unknown match type %d: want 0 (exact), 1 (default) or 2 (any)", c.MatchType)
		}
		seen[c.EntityType] = true
	}
	return nil
}

// quotaMatches reports whether q passes every component of the filter
// (and, when strict, has no entity type the filter does not name).
func quotaMatches(req *kmsg.DescribeClientQuotasRequest, q *messages.ClientQuota) bool {
	for _, c := range req.Components {
		var part *messages.QuotaEntity
		for _, p := range q.Entity {
			if p.Type == c.EntityType {
				part = p
			}
		}
		switch {
		case part == nil:
			return false
		case c.MatchType == quotaMatchExact && (part.IsDefault || part.Name != *c.Match):
			return false
		case c.MatchType == quotaMatchDefault && !part.IsDefault:
			return false
		}
	}
	return !req.Strict || len(q.Entity) == len(req.Components)
}

func handleAlterClientQuotas(r *request, h header, kreq kmsg.Request) func() kmsg.Response {
	req := kreq.(*kmsg.AlterClientQuotasRequest)
	alter := &messages.AlterClientQuotasRequest{ValidateOnly: req.ValidateOnly}
	for _, e := range req.Entries {
		a := &messages.QuotaAlteration{}
		for _, p := range e.Entity {
			part := &messages.QuotaEntity{Type: p.Type, IsDefault: p.Name == nil}
			if p.Name != nil {
				part.Name = *p.Name
			}
			a.Entity = append(a.Entity, part)
		}
		for _, op := range e.Ops {
			a.Ops = append(a.Ops, &messages.QuotaOp{Key: op.Key, Value: op.Value, Remove: op.Remove})
		}
		alter.Entries = append(alter.Entries, a)
	}
	answer := r.ask(alter)
	return func() kmsg.Response {
		resp := kmsg.NewPtrAlterClientQuotasResponse()
		m, code, text := answerWithError[*messages.AlterClientQuotasResponse](answer)
		for i, e := range req.Entries {
			re := kmsg.NewAlterClientQuotasResponseEntry()
			for _, p := range e.Entity {
				ent := kmsg.NewAlterClientQuotasResponseEntryEntity()
				ent.Type, ent.Name = p.Type, p.Name
				re.Entity = append(re.Entity, ent)
			}
			switch {
			case code != 0:
				re.ErrorCode, re.ErrorMessage = code, text
			case i < len(m.Results):
				re.ErrorCode = kafkaCode(m.Results[i].Error)
				if m.Results[i].ErrorMessage != "" {
					re.ErrorMessage = kmsg.StringPtr(m.Results[i].ErrorMessage)
				}
			default:
				re.ErrorCode, re.ErrorMessage = errUnknownServerError, kmsg.StringPtr("no result for this entry")
			}
			resp.Entries = append(resp.Entries, re)
		}
		return resp
	}
}
