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

// runUser is `sluice user create|delete|list|whoami`.
func runUser(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usageErr("want create, delete, list or whoami")
	}
	sub, args := args[0], args[1:]
	fs := newFlagSet("user "+sub, stdout, stderr)
	conn := connFlags(fs)
	timeout := fs.Duration("timeout", 30*time.Second, "give up after this long")
	var format *outputFormat
	if sub == "list" {
		format = formatFlag(fs)
	}
	pos, err := parseClientArgs(fs, conn, args)
	if err != nil {
		return err
	}
	needName := sub == "create" || sub == "delete"
	switch {
	case sub != "create" && sub != "delete" && sub != "list" && sub != "whoami":
		return usageErr("unknown subcommand %q: want create, delete, list or whoami", sub)
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
				writeJSONLine(stdout, userJSON{Name: u.Name, Created: u.Created.Format(time.RFC3339)})
			}
			return nil
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "USER\tCREATED")
		for _, u := range users {
			fmt.Fprintf(tw, "%s\t%s\n", u.Name, u.Created.Format(time.RFC3339))
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
	Name    string `json:"name"`
	Created string `json:"created"`
}
