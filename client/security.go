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

// User is a user of the cluster: one with a token, passwords, or both.
type User struct {
	Name    string
	Created time.Time
	// Token is set when the user has a token.
	Token bool
	// Passwords are the SCRAM mechanisms the user has a password of, and
	// their iterations.
	Passwords []Password
}

// Password is one of a user's SCRAM passwords, without its keys.
type Password struct {
	Mechanism  string // SCRAM-SHA-256 or SCRAM-SHA-512
	Iterations int
}

// ListUsers lists the users, as the cluster stores them.
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
		users[i] = User{Name: u.Name, Created: time.UnixMilli(u.CreatedUnixMs).UTC(), Token: u.HasToken}
		for _, c := range u.Scram {
			users[i].Passwords = append(users[i].Passwords, Password{Mechanism: acl.ScramMechanismName(c.Mechanism), Iterations: int(c.Iterations)})
		}
	}
	return users, nil
}

// PasswordOpt configures SetPassword.
type PasswordOpt func(*passwordOptions)

type passwordOptions struct {
	mechanisms []string
	iterations int
}

// DefaultPasswordIterations is how many times SetPassword salts a password
// unless PasswordIterations says otherwise.
const DefaultPasswordIterations = 8192

// PasswordMechanisms sets the password of these SCRAM mechanisms only
// (SCRAM-SHA-256, SCRAM-SHA-512); by default both.
func PasswordMechanisms(names ...string) PasswordOpt {
	return func(o *passwordOptions) { o.mechanisms = names }
}

// PasswordIterations salts the password n times (4,096 to 16,384; by
// default DefaultPasswordIterations): what each login costs the client.
func PasswordIterations(n int) PasswordOpt { return func(o *passwordOptions) { o.iterations = n } }

// SetPassword sets the password user name logs in with over SASL SCRAM
// on the Kafka listener, creating the user if it has no token. The
// password is salted here: the cluster keeps only keys derived from the
// salted password, and never sees the password itself.
func (a *Admin) SetPassword(ctx context.Context, name, password string, opts ...PasswordOpt) error {
	o := passwordOptions{mechanisms: []string{"SCRAM-SHA-256", "SCRAM-SHA-512"}, iterations: DefaultPasswordIterations}
	for _, opt := range opts {
		opt(&o)
	}
	if err := acl.ValidUserName(name); err != nil {
		return err
	}
	if password == "" {
		return errors.New("the password is empty")
	}
	if o.iterations < acl.MinScramIterations || o.iterations > acl.MaxScramIterations {
		return fmt.Errorf("%d iterations: want %d to %d", o.iterations, acl.MinScramIterations, acl.MaxScramIterations)
	}
	req := &messages.AlterScramCredentialsRequest{}
	for _, m := range o.mechanisms {
		mech, ok := acl.ScramMechanismOf(m)
		if !ok {
			return fmt.Errorf("unknown mechanism %q: want SCRAM-SHA-256 or SCRAM-SHA-512", m)
		}
		salt, err := acl.NewScramSalt()
		if err != nil {
			return err
		}
		salted, err := acl.SaltPassword(mech, password, salt, o.iterations)
		if err != nil {
			return err
		}
		req.Upsertions = append(req.Upsertions, &messages.ScramUpsertion{Name: name,
			Credential: acl.ScramCredentialOf(mech, int32(o.iterations), salt, salted)})
	}
	return a.alterScram(ctx, req)
}

// DeletePassword removes user name's password of a SCRAM mechanism; a
// user left with neither password nor token is removed.
func (a *Admin) DeletePassword(ctx context.Context, name, mechanism string) error {
	mech, ok := acl.ScramMechanismOf(mechanism)
	if !ok {
		return fmt.Errorf("unknown mechanism %q: want SCRAM-SHA-256 or SCRAM-SHA-512", mechanism)
	}
	return a.alterScram(ctx, &messages.AlterScramCredentialsRequest{
		Deletions: []*messages.ScramDeletion{{Name: name, Mechanism: mech}}})
}

func (a *Admin) alterScram(ctx context.Context, req *messages.AlterScramCredentialsRequest) error {
	resp, err := callAnyAs[*messages.AlterScramCredentialsResponse](ctx, a, req)
	if err != nil {
		return err
	}
	if err := resp.Error.Err(resp.ErrorMessage); err != nil {
		return err
	}
	for _, r := range resp.Results {
		if err := r.Error.Err(r.ErrorMessage); err != nil {
			return err
		}
	}
	return nil
}
