package controller

import (
	"errors"
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/sluicemq/sluice/acl"
	"github.com/sluicemq/sluice/actors"
	"github.com/sluicemq/sluice/cluster"
	"github.com/sluicemq/sluice/messages"
	"github.com/sluicemq/sluice/messages/brokerconfig"
)

// securityChange is one ACL or user request as a pure change of the
// security record, with the answers for success and failure.
type securityChange struct {
	apply func(rec *messages.SecurityRecord) (*messages.SecurityRecord, error)
	ok    func() proto.Message
	fail  func(code messages.ErrorCode, text string) proto.Message
}

func changeOf(msg proto.Message, now time.Time) securityChange {
	switch m := msg.(type) {
	case *messages.CreateAclsRequest:
		var created int
		return securityChange{
			apply: func(rec *messages.SecurityRecord) (next *messages.SecurityRecord, err error) {
				next, created, err = acl.AddACLs(rec, m.Acls)
				return next, err
			},
			ok: func() proto.Message { return &messages.CreateAclsResponse{Created: int32(created)} },
			fail: func(c messages.ErrorCode, t string) proto.Message {
				return &messages.CreateAclsResponse{Error: c, ErrorMessage: t}
			},
		}
	case *messages.DeleteAclsRequest:
		var removed []*messages.AclBinding
		return securityChange{
			apply: func(rec *messages.SecurityRecord) (next *messages.SecurityRecord, err error) {
				next, removed, err = acl.RemoveACLs(rec, m.Filters)
				return next, err
			},
			ok: func() proto.Message { return &messages.DeleteAclsResponse{Deleted: removed} },
			fail: func(c messages.ErrorCode, t string) proto.Message {
				return &messages.DeleteAclsResponse{Error: c, ErrorMessage: t}
			},
		}
	case *messages.CreateUserRequest:
		return securityChange{
			apply: func(rec *messages.SecurityRecord) (*messages.SecurityRecord, error) {
				return acl.AddUser(rec, m.Name, m.TokenSha256, now)
			},
			ok: func() proto.Message { return &messages.CreateUserResponse{} },
			fail: func(c messages.ErrorCode, t string) proto.Message {
				return &messages.CreateUserResponse{Error: c, ErrorMessage: t}
			},
		}
	case *messages.DeleteUserRequest:
		return securityChange{
			apply: func(rec *messages.SecurityRecord) (*messages.SecurityRecord, error) {
				return acl.DeleteUser(rec, m.Name)
			},
			ok: func() proto.Message { return &messages.DeleteUserResponse{} },
			fail: func(c messages.ErrorCode, t string) proto.Message {
				return &messages.DeleteUserResponse{Error: c, ErrorMessage: t}
			},
		}
	case *messages.AlterScramCredentialsRequest:
		var results []*messages.UserResult
		return securityChange{
			apply: func(rec *messages.SecurityRecord) (next *messages.SecurityRecord, err error) {
				next, results = acl.AlterScram(rec, m.Upsertions, m.Deletions, now)
				return next, nil
			},
			ok: func() proto.Message { return &messages.AlterScramCredentialsResponse{Results: results} },
			fail: func(c messages.ErrorCode, t string) proto.Message {
				return &messages.AlterScramCredentialsResponse{Error: c, ErrorMessage: t}
			},
		}
	case *messages.AlterBrokerConfigsRequest:
		return securityChange{
			apply: func(rec *messages.SecurityRecord) (*messages.SecurityRecord, error) {
				return actors.ApplyBrokerConfigs(rec, m)
			},
			ok: func() proto.Message { return &messages.AlterBrokerConfigsResponse{} },
			fail: func(c messages.ErrorCode, t string) proto.Message {
				return &messages.AlterBrokerConfigsResponse{Error: c, ErrorMessage: t}
			},
		}
	case *messages.AlterClientQuotasRequest:
		var results []*messages.QuotaResult
		return securityChange{
			apply: func(rec *messages.SecurityRecord) (next *messages.SecurityRecord, err error) {
				next, results = acl.AlterQuotas(rec, m.Entries)
				return next, nil
			},
			ok: func() proto.Message { return &messages.AlterClientQuotasResponse{Results: results} },
			fail: func(c messages.ErrorCode, t string) proto.Message {
				return &messages.AlterClientQuotasResponse{Error: c, ErrorMessage: t}
			},
		}
	}
	panic(fmt.Sprintf("not a security change: %T", msg))
}

// producerIDKeyChange gives the security record a producer id key if it
// has none (a retry after a conflict keeps the key another write stored).
var producerIDKeyChange = securityChange{
	apply: func(rec *messages.SecurityRecord) (*messages.SecurityRecord, error) {
		next, _ := acl.WithProducerIDKey(rec)
		return next, nil
	},
	ok: func() proto.Message { return &messages.AllocateProducerIdsResponse{} },
	fail: func(c messages.ErrorCode, t string) proto.Message {
		return &messages.AllocateProducerIdsResponse{Error: c, ErrorMessage: t}
	},
}

// securityAttempts bounds the check-and-set retries of one change: another
// writer only exists for the moment a controller hands over.
const securityAttempts = 5

// onSecurityChange applies an ACL or user change to the stored security
// record with check-and-set, loading the store again after a conflict.
func (c *controllerActor) onSecurityChange(ctx actor.Context, msg proto.Message) {
	sender := ctx.Sender()
	ch := changeOf(msg, time.Now())
	if why := c.trusted(); why != "" {
		actors.SendTo(ctx, sender, ch.fail(messages.ErrorCode_INCONSISTENT_CLUSTER_ID, why))
		return
	}
	snap := c.snap
	name := string(proto.MessageName(msg))
	c.besideFor(ctx, true, func(store cluster.MetadataStore, fence cluster.Fence) func(actor.Context) {
		resp, storeErr := changeSecurity(store, fence, snap, ch)
		return func(ctx actor.Context) {
			switch {
			case storeErr != nil:
				resp = ch.fail(c.storeErrorCode(storeErr, messages.ErrorCode_UNKNOWN_SERVER_ERROR), storeErr.Error())
			case resp == nil:
				c.cfg.Logger.Info("security record changed", "request", name)
				resp = ch.ok()
			}
			actors.SendTo(ctx, sender, resp)
		}
	})
}

// changeSecurity makes the change over snap's security record, and over
// the store's latest after a conflict (beside the actor). It returns the
// refusal (nil: done), or the store's error.
func changeSecurity(store cluster.MetadataStore, fence cluster.Fence, snap *cluster.Snapshot, ch securityChange) (proto.Message, error) {
	for attempt := 0; attempt < securityAttempts; attempt++ {
		if attempt > 0 {
			sctx, cancel := storeContext()
			latest, err := store.Load(sctx)
			cancel()
			if err != nil {
				return nil, err
			}
			snap = latest
		}
		next, err := ch.apply(snap.Security)
		switch {
		case errors.Is(err, acl.ErrUserExists):
			return ch.fail(messages.ErrorCode_DUPLICATE_RESOURCE, err.Error()), nil
		case errors.Is(err, acl.ErrUserNotFound):
			return ch.fail(messages.ErrorCode_RESOURCE_NOT_FOUND, err.Error()), nil
		case errors.Is(err, brokerconfig.ErrInvalid):
			return ch.fail(messages.ErrorCode_INVALID_CONFIG, err.Error()), nil
		case err != nil:
			return ch.fail(messages.ErrorCode_INVALID_REQUEST, err.Error()), nil
		}
		sctx, cancel := storeContext()
		err = store.UpdateSecurity(sctx, fence, next, snap.SecurityVersion)
		cancel()
		switch {
		case errors.Is(err, cluster.ErrConflict):
			continue
		case err != nil:
			return nil, err
		}
		return nil, nil
	}
	return ch.fail(messages.ErrorCode_REQUEST_TIMED_OUT, "the security record kept changing; try again"), nil
}
