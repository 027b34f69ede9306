package client

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sluicemq/sluice/acl"
	"github.com/sluicemq/sluice/messages"
	"github.com/sluicemq/sluice/transport"
	"google.golang.org/protobuf/proto"
)

// TLS connects with mutual TLS: caFile holds the cluster's CA certificates
// (brokers must present a certificate it signed, naming them as brokers),
// certFile and keyFile the client's own certificate, whose URI SAN
// sluice://user/NAME or common name NAME makes the principal User:NAME.
// Leave certFile and keyFile empty to authenticate with Token instead.
// The files are read again when they change.
func TLS(certFile, keyFile, caFile string) Opt {
	return anyOpt(func(c *config) { c.tlsCert, c.tlsKey, c.tlsCA = certFile, keyFile, caFile })
}

// Token authenticates as the user the token was created for (`sluice user
// create`). It needs TLS with at least the CA file, and is sent only to
// brokers that proved they are brokers of that CA's cluster.
func Token(token string) Opt { return anyOpt(func(c *config) { c.token = token }) }

// security returns the transport's TLS settings of cfg (nil: plaintext).
func (c *config) security() (*transport.Security, error) {
	switch {
	case c.tlsCA == "" && c.tlsCert == "" && c.tlsKey == "" && c.token == "":
		return nil, nil
	case c.tlsCA == "":
		return nil, errors.New("TLS needs the cluster's CA file (client.TLS(cert, key, ca))")
	case (c.tlsCert == "") != (c.tlsKey == ""):
		return nil, errors.New("TLS needs both a certificate and its key, or neither (with a token)")
	case c.tlsCert == "" && c.token == "":
		return nil, errors.New("TLS without a client certificate needs a token (client.Token)")
	}
	return &transport.Security{Role: transport.RoleClient, CertFile: c.tlsCert, KeyFile: c.tlsKey, CAFile: c.tlsCA, Token: c.token}, nil
}

// callAnyAs is callAny for a request whose answer must be of type T.
func callAnyAs[T proto.Message](ctx context.Context, a *Admin, req proto.Message) (T, error) {
	var zero T
	res, err := a.callAny(ctx, req)
	if err != nil {
		return zero, err
	}
	resp, ok := res.(T)
	if !ok {
		return zero, fmt.Errorf("unexpected answer %T", res)
	}
	return resp, nil
}

// WhoAmI is what a broker knows of this client's connection.
type WhoAmI struct {
	Principal string
	// Authorizer: the broker checks ACLs. SuperUser: not for this principal.
	Authorizer, SuperUser bool
}

// WhoAmI asks a broker which principal it sees this client as.
func (a *Admin) WhoAmI(ctx context.Context) (WhoAmI, error) {
	resp, err := callAnyAs[*messages.WhoAmIResponse](ctx, a, &messages.WhoAmIRequest{})
	if err != nil {
		return WhoAmI{}, err
	}
	return WhoAmI{Principal: resp.Principal, Authorizer: resp.Authorizer, SuperUser: resp.SuperUser}, nil
}

// CreateACLs adds rules (kept once each) and returns how many were new.
func (a *Admin) CreateACLs(ctx context.Context, acls ...ACL) (int, error) {
	bindings, err := wireACLs(acls)
	if err != nil {
		return 0, err
	}
	resp, err := callAnyAs[*messages.CreateAclsResponse](ctx, a, &messages.CreateAclsRequest{Acls: bindings})
	if err != nil {
		return 0, err
	}
	return int(resp.Created), resp.Error.Err(resp.ErrorMessage)
}

// DeleteACLs removes every rule a filter matches (an empty field of a
// filter matches every value) and returns them.
func (a *Admin) DeleteACLs(ctx context.Context, filters ...ACL) ([]ACL, error) {
	wire, err := wireACLs(filters)
	if err != nil {
		return nil, err
	}
	resp, err := callAnyAs[*messages.DeleteAclsResponse](ctx, a, &messages.DeleteAclsRequest{Filters: wire})
	if err != nil {
		return nil, err
	}
	return aclsOf(resp.Deleted), resp.Error.Err(resp.ErrorMessage)
}

// DescribeACLs lists the rules filter matches (the zero ACL: all).
func (a *Admin) DescribeACLs(ctx context.Context, filter ACL) ([]ACL, error) {
	var wire *messages.AclBinding
	if filter != (ACL{}) {
		var err error
		if wire, err = filter.wire(); err != nil {
			return nil, err
		}
	}
	resp, err := callAnyAs[*messages.DescribeAclsResponse](ctx, a, &messages.DescribeAclsRequest{Filter: wire})
	if err != nil {
		return nil, err
	}
	return aclsOf(resp.Acls), resp.Error.Err(resp.ErrorMessage)
}

// CreateUser adds a user who authenticates with a bearer token and returns
// the token. It is made here and only its SHA-256 reaches the cluster:
// it cannot be shown again.
func (a *Admin) CreateUser(ctx context.Context, name string) (string, error) {
	if err := acl.ValidUserName(name); err != nil {
		return "", err
	}
	token, err := acl.NewToken()
	if err != nil {
		return "", err
	}
	resp, err := callAnyAs[*messages.CreateUserResponse](ctx, a, &messages.CreateUserRequest{Name: name, TokenSha256: acl.HashToken(token)})
	if err != nil {
		return "", err
	}
	if err := resp.Error.Err(resp.ErrorMessage); err != nil {
		return "", err
	}
	return token, nil
}

// DeleteUser removes a token user; connections already open stay until
// they close.
func (a *Admin) DeleteUser(ctx context.Context, name string) error {
	resp, err := callAnyAs[*messages.DeleteUserResponse](ctx, a, &messages.DeleteUserRequest{Name: name})
	if err != nil {
		return err
	}
	return resp.Error.Err(resp.ErrorMessage)
}

// User is a token user.
type User struct {
	Name    string
	Created time.Time
}

// ListUsers lists the token users, as the cluster stores them.
func (a *Admin) ListUsers(ctx context.Context) ([]User, error) {
	resp, err := callAnyAs[*messages.ListUsersResponse](ctx, a, &messages.ListUsersRequest{})
	if err != nil {
		return nil, err
	}
	if err := resp.Error.Err(resp.ErrorMessage); err != nil {
		return nil, err
	}
	users := make([]User, len(resp.Users))
	for i, u := range resp.Users {
		users[i] = User{Name: u.Name, Created: time.UnixMilli(u.CreatedUnixMs).UTC()}
	}
	return users, nil
}
