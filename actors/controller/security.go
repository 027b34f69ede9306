package controller

import (
	"errors"
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/sluicemq/sluice/acl"
	"github.com/sluicemq/sluice/cluster"
	"github.com/sluicemq/sluice/messages"
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
	}
	panic(fmt.Sprintf("not a security change: %T", msg))
}

// securityAttempts bounds the check-and-set retries of one change: another
// writer only exists for the moment a controller hands over.
const securityAttempts = 5

// onSecurityChange applies an ACL or user change to the stored security
// record with check-and-set, reading the store again after a conflict.
func (c *controllerActor) onSecurityChange(msg proto.Message) proto.Message {
	ch := changeOf(msg, time.Now())
	if why := c.trusted(); why != "" {
		return ch.fail(messages.ErrorCode_INCONSISTENT_CLUSTER_ID, why)
	}
	for attempt := 0; attempt < securityAttempts; attempt++ {
		if attempt > 0 || c.snap == nil {
			c.reload()
		}
		if c.snap == nil {
			return ch.fail(messages.ErrorCode_NOT_CONTROLLER, "the controller has not loaded the metadata yet")
		}
		next, err := ch.apply(c.snap.Security)
		switch {
		case errors.Is(err, acl.ErrUserExists):
			return ch.fail(messages.ErrorCode_DUPLICATE_RESOURCE, err.Error())
		case errors.Is(err, acl.ErrUserNotFound):
			return ch.fail(messages.ErrorCode_RESOURCE_NOT_FOUND, err.Error())
		case err != nil:
			return ch.fail(messages.ErrorCode_INVALID_REQUEST, err.Error())
		}
		ctx, cancel := c.storeCtx()
		err = c.store.UpdateSecurity(ctx, c.lead.Fence, next, c.snap.SecurityVersion)
		cancel()
		switch {
		case errors.Is(err, cluster.ErrConflict):
			continue
		case err != nil:
			return ch.fail(c.storeErrorCode(err, messages.ErrorCode_UNKNOWN_SERVER_ERROR), err.Error())
		}
		c.cfg.Logger.Info("security record changed", "request", string(proto.MessageName(msg)))
		c.reload()
		return ch.ok()
	}
	return ch.fail(messages.ErrorCode_REQUEST_TIMED_OUT, "the security record kept changing; try again")
}
