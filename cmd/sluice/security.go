package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sluicemq/sluice/acl"
	"github.com/sluicemq/sluice/client"
)

// listFlag collects a repeatable, comma-separable flag.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

func (l *listFlag) Set(s string) error {
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			*l = append(*l, v)
		}
	}
	return nil
}

// aclFlags are the resource and principal flags of `sluice acl`, named as
// kafka-acls.sh names them.
type aclFlags struct {
	allow, deny, principals listFlag
	operations              listFlag
	topics, groups          listFlag
	cluster                 *bool
	pattern                 *string
}

func addACLFlags(fs *flag.FlagSet, sub string) *aclFlags {
	f := &aclFlags{}
	if sub == "add" || sub == "remove" {
		fs.Var(&f.allow, "allow-principal", "principal the rule allows (User:alice, User:*); repeatable")
		fs.Var(&f.deny, "deny-principal", "principal the rule denies; repeatable")
	}
	if sub != "add" {
		fs.Var(&f.principals, "principal", "only rules of this principal; repeatable")
	}
	fs.Var(&f.operations, "operation", "read, write, create, delete, alter, describe, describe-configs, alter-configs, idempotent-write, cluster-action or all; repeatable")
	fs.Var(&f.topics, "topic", "topic name, prefix (with --resource-pattern-type prefixed) or *; repeatable")
	fs.Var(&f.groups, "group", "consumer group name, prefix or *; repeatable")
	f.cluster = fs.Bool("cluster", false, "the cluster itself (ACL and user admin, creating topics, idempotent producers)")
	def := "literal"
	if sub != "add" {
		def = "any"
	}
	f.pattern = fs.String("resource-pattern-type", def, "literal or prefixed (list and remove also take any and match)")
	return f
}

var aclOperations = []client.ACLOperation{client.OpRead, client.OpWrite, client.OpCreate, client.OpDelete, client.OpAlter,
	client.OpDescribe, client.OpDescribeConfigs, client.OpAlterConfigs, client.OpIdempotentWrite, client.OpClusterAction, client.OpAll}

func parseOperation(s string) (client.ACLOperation, error) {
	op := client.ACLOperation(strings.ReplaceAll(strings.ToLower(s), "_", "-"))
	if !slices.Contains(aclOperations, op) {
		return "", usageErr("--operation %q: want read, write, create, delete, alter, describe, describe-configs, alter-configs, idempotent-write, cluster-action or all", s)
	}
	return op, nil
}

func parsePattern(s string) (client.ACLPattern, error) {
	switch p := client.ACLPattern(strings.ToLower(s)); p {
	case client.Literal, client.Prefixed, client.MatchPattern:
		return p, nil
	case "any":
		return "", nil
	}
	return "", usageErr("--resource-pattern-type %q: want literal, prefixed, any or match", s)
}

// resources lists the (type, name) pairs the flags name.
func (f *aclFlags) resources() []client.ACL {
	var out []client.ACL
	for _, t := range f.topics {
		out = append(out, client.ACL{Resource: client.TopicResource, Name: t})
	}
	for _, g := range f.groups {
		out = append(out, client.ACL{Resource: client.GroupResource, Name: g})
	}
	if *f.cluster {
		out = append(out, client.ACL{Resource: client.ClusterResource, Name: client.ClusterName})
	}
	return out
}

// bindings expands the flags into one rule (or filter) per principal,
// operation and resource. With filter set, a missing part matches anything.
func (f *aclFlags) bindings(filter bool) ([]client.ACL, error) {
	pattern, err := parsePattern(*f.pattern)
	if err != nil {
		return nil, err
	}
	type who struct {
		principal string
		perm      client.ACLPermission
	}
	var whos []who
	for _, p := range f.allow {
		whos = append(whos, who{p, client.Allow})
	}
	for _, p := range f.deny {
		whos = append(whos, who{p, client.Deny})
	}
	for _, p := range f.principals {
		whos = append(whos, who{p, ""})
	}
	var ops []client.ACLOperation
	for _, o := range f.operations {
		op, err := parseOperation(o)
		if err != nil {
			return nil, err
		}
		ops = append(ops, op)
	}
	res := f.resources()
	switch {
	case !filter && len(whos) == 0:
		return nil, usageErr("name a principal with --allow-principal or --deny-principal")
	case !filter && len(ops) == 0:
		return nil, usageErr("name at least one --operation")
	case !filter && len(res) == 0:
		return nil, usageErr("name a resource: --topic, --group or --cluster")
	}
	// An empty part of a filter matches every value.
	if len(whos) == 0 {
		whos = []who{{}}
	}
	if len(ops) == 0 {
		ops = []client.ACLOperation{""}
	}
	if len(res) == 0 {
		res = []client.ACL{{}}
	}
	var out []client.ACL
	for _, w := range whos {
		for _, op := range ops {
			for _, r := range res {
				out = append(out, client.ACL{Resource: r.Resource, Name: r.Name, Pattern: pattern,
					Principal: w.principal, Host: "*", Operation: op, Permission: w.perm})
			}
		}
	}
	return out, nil
}

// runACL is `sluice acl add|remove|list`.
func runACL(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || (args[0] != "add" && args[0] != "remove" && args[0] != "list") {
		return usageErr("want add, remove or list")
	}
	sub, args := args[0], args[1:]
	fs := newFlagSet("acl "+sub, stdout, stderr)
	conn := connFlags(fs)
	f := addACLFlags(fs, sub)
	timeout := fs.Duration("timeout", 30*time.Second, "give up after this long")
	var format *outputFormat
	if sub == "list" {
		format = formatFlag(fs)
	}
	pos, err := parseClientArgs(fs, conn, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageErr("unexpected argument %q", pos[0])
	}
	bindings, err := f.bindings(sub != "add")
	if err != nil {
		return err
	}
	admin, err := client.NewAdmin(*conn.broker, conn.opt(clientLogger(stderr)))
	if err != nil {
		return err
	}
	defer admin.Close()
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	switch sub {
	case "add":
		n, err := admin.CreateACLs(ctx, bindings...)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "added %d ACL(s) (%d already existed)\n", n, len(bindings)-n)
		for _, b := range bindings {
			fmt.Fprintln(stdout, "  "+b.String())
		}
	case "remove":
		removed, err := admin.DeleteACLs(ctx, bindings...)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "removed %d ACL(s)\n", len(removed))
		for _, b := range removed {
			fmt.Fprintln(stdout, "  "+b.String())
		}
	case "list":
		seen := map[string]bool{}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		if !format.json() {
			fmt.Fprintln(tw, "PRINCIPAL\tPERMISSION\tOPERATION\tRESOURCE\tNAME\tPATTERN")
		}
		for _, filter := range bindings {
			list, err := admin.DescribeACLs(ctx, filter)
			if err != nil {
				return err
			}
			for _, b := range list {
				if line := b.String(); !seen[line] {
					seen[line] = true
					if format.json() {
						writeJSONLine(stdout, aclJSON{Principal: b.Principal, Permission: string(b.Permission), Operation: string(b.Operation),
							ResourceType: string(b.Resource), ResourceName: b.Name, PatternType: string(b.Pattern)})
						continue
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", b.Principal, b.Permission, b.Operation, b.Resource, b.Name, b.Pattern)
				}
			}
		}
		return tw.Flush()
	}
	return nil
}

// runUser is `sluice user create|password|delete|list|whoami`.
func runUser(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usageErr("want create, password, delete, list or whoami")
	}
	sub, args := args[0], args[1:]
	fs := newFlagSet("user "+sub, stdout, stderr)
	conn := connFlags(fs)
	timeout := fs.Duration("timeout", 30*time.Second, "give up after this long")
	var format *outputFormat
	if sub == "list" {
		format = formatFlag(fs)
	}
	var mechanisms *string
	var iterations *int
	var deletePassword *bool
	if sub == "password" {
		mechanisms = fs.String("mechanism", "SCRAM-SHA-256,SCRAM-SHA-512", "the SCRAM mechanisms to set (or with --delete, remove) the password of, comma-separated")
		iterations = fs.Int("iterations", client.DefaultPasswordIterations, "how many times the password is salted (4096 to 16384)")
		deletePassword = fs.Bool("delete", false, "remove the password instead of setting it")
	}
	pos, err := parseClientArgs(fs, conn, args)
	if err != nil {
		return err
	}
	needName := sub == "create" || sub == "delete" || sub == "password"
	switch {
	case sub != "create" && sub != "delete" && sub != "list" && sub != "whoami" && sub != "password":
		return usageErr("unknown subcommand %q: want create, password, delete, list or whoami", sub)
	case needName && len(pos) != 1:
		return usageErr("want exactly one user name")
	case !needName && len(pos) != 0:
		return usageErr("unexpected argument %q", pos[0])
	}
	admin, err := client.NewAdmin(*conn.broker, conn.opt(clientLogger(stderr)))
	if err != nil {
		return err
	}
	defer admin.Close()
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	switch sub {
	case "create":
		token, err := admin.CreateUser(ctx, pos[0])
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "created user %s (principal User:%s). Its token, shown only now:\n%s\n", pos[0], pos[0], token)
		fmt.Fprintf(stderr, "use it with --token or SLUICE_TOKEN (with --tls-ca), and grant rights with 'sluice acl add --allow-principal User:%s ...'\n", pos[0])
	case "password":
		return setPassword(ctx, admin, pos[0], strings.Split(*mechanisms, ","), *iterations, *deletePassword, stdin, stdout, stderr)
	case "delete":
		if err := admin.DeleteUser(ctx, pos[0]); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "deleted user %s\n", pos[0])
	case "list":
		users, err := admin.ListUsers(ctx)
		if err != nil {
			return err
		}
		if format.json() {
			for _, u := range users {
				j := userJSON{Name: u.Name, Created: u.Created.Format(time.RFC3339), Token: u.Token, Passwords: []passwordJSON{}}
				for _, p := range u.Passwords {
					j.Passwords = append(j.Passwords, passwordJSON{Mechanism: p.Mechanism, Iterations: p.Iterations})
				}
				writeJSONLine(stdout, j)
			}
			return nil
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "USER\tCREATED\tTOKEN\tPASSWORDS")
		for _, u := range users {
			token, passwords := "no", "-"
			if u.Token {
				token = "yes"
			}
			for i, p := range u.Passwords {
				if i == 0 {
					passwords = p.Mechanism
				} else {
					passwords += "," + p.Mechanism
				}
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", u.Name, u.Created.Format(time.RFC3339), token, passwords)
		}
		return tw.Flush()
	case "whoami":
		w, err := admin.WhoAmI(ctx)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "principal %s (ACLs enforced: %v, super user: %v)\n", w.Principal, w.Authorizer, w.SuperUser)
	}
	return nil
}

type aclJSON struct {
	Principal    string `json:"principal"`
	Permission   string `json:"permission"`
	Operation    string `json:"operation"`
	ResourceType string `json:"resource_type"`
	ResourceName string `json:"resource_name"`
	PatternType  string `json:"pattern_type"`
}

type userJSON struct {
	Name      string         `json:"name"`
	Created   string         `json:"created"`
	Token     bool           `json:"token"`
	Passwords []passwordJSON `json:"passwords"`
}

type passwordJSON struct {
	Mechanism  string `json:"mechanism"`
	Iterations int    `json:"iterations"`
}

// setPassword is `sluice user password NAME`: sets (or removes) the
// user's SCRAM passwords, for logins on the Kafka listener.
func setPassword(ctx context.Context, admin *client.Admin, name string, mechanisms []string, iterations int, remove bool,
	stdin io.Reader, stdout, stderr io.Writer) error {
	for _, m := range mechanisms {
		if _, ok := acl.ScramMechanismOf(m); !ok {
			return usageErr("unknown --mechanism %q: want SCRAM-SHA-256 or SCRAM-SHA-512", m)
		}
	}
	if remove {
		for _, m := range mechanisms {
			if err := admin.DeletePassword(ctx, name, m); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "removed the %s password of %s\n", strings.ToUpper(m), name)
		}
		return nil
	}
	if iterations < acl.MinScramIterations || iterations > acl.MaxScramIterations {
		return usageErr("--iterations %d: want %d to %d", iterations, acl.MinScramIterations, acl.MaxScramIterations)
	}
	password, err := readPassword(stdin, stderr, "password for "+name+": ")
	if err != nil {
		return err
	}
	if err := admin.SetPassword(ctx, name, password, client.PasswordMechanisms(mechanisms...), client.PasswordIterations(iterations)); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "set the %s password of %s (principal User:%s)\n", strings.Join(mechanisms, " and "), name, name)
	fmt.Fprintf(stderr, "log in on the Kafka listener (--kafka-sasl) with sasl.mechanism=%s, and grant rights with 'sluice acl add --allow-principal User:%s ...'\n",
		mechanisms[len(mechanisms)-1], name)
	return nil
}
