package client

import (
	"fmt"
	"strings"

	"github.com/sluicemq/sluice/acl"
	"github.com/sluicemq/sluice/messages"
)

// ACL is one access rule, as kafka-acls.sh states it: Principal is
// allowed (or denied) Operation on the resources Resource, Name and
// Pattern select, from Host. As a filter (DeleteACLs, DescribeACLs) an
// empty field matches every value.
type ACL struct {
	Principal  string // "User:alice", or "User:*" for every user
	Permission ACLPermission
	Operation  ACLOperation
	Resource   ACLResource
	// Name is a topic or group name or prefix, "*", or ClusterName.
	Name    string
	Pattern ACLPattern
	Host    string // "*", the only host rules support
}

type (
	// ACLPermission is Allow or Deny.
	ACLPermission string
	// ACLOperation is what a rule allows or denies: Kafka's operations.
	ACLOperation string
	// ACLResource is the kind of resource a rule is about.
	ACLResource string
	// ACLPattern says how a rule's Name selects resources.
	ACLPattern string
)

const (
	Allow ACLPermission = "allow"
	Deny  ACLPermission = "deny"

	OpAll             ACLOperation = "all"
	OpRead            ACLOperation = "read"
	OpWrite           ACLOperation = "write"
	OpCreate          ACLOperation = "create"
	OpDelete          ACLOperation = "delete"
	OpAlter           ACLOperation = "alter"
	OpDescribe        ACLOperation = "describe"
	OpClusterAction   ACLOperation = "cluster-action"
	OpDescribeConfigs ACLOperation = "describe-configs"
	OpAlterConfigs    ACLOperation = "alter-configs"
	OpIdempotentWrite ACLOperation = "idempotent-write"

	TopicResource   ACLResource = "topic"
	GroupResource   ACLResource = "group"
	ClusterResource ACLResource = "cluster"

	// Literal names one resource (or every one, with "*").
	Literal ACLPattern = "literal"
	// Prefixed names every resource whose name starts with Name.
	Prefixed ACLPattern = "prefixed"
	// MatchPattern, in a filter, selects the rules that apply to the
	// resource Name: literal, prefixed or "*".
	MatchPattern ACLPattern = "match"
)

// ClusterName is the resource name of the cluster.
const ClusterName = acl.ClusterName

// String renders the rule as one line like kafka-acls.sh:
// `User:alice ALLOW READ topic:orders (literal) host=*`.
func (a ACL) String() string {
	b, err := a.wire()
	if err != nil {
		type fields ACL // without this method
		return fmt.Sprintf("%+v", fields(a))
	}
	return acl.String(b)
}

// wire is the rule as the brokers take it; an empty field is the wire's ANY.
func (a ACL) wire() (*messages.AclBinding, error) {
	perm, err := wireEnum(messages.AclPermission_value, "ACL_PERMISSION_", string(a.Permission), "permission")
	if err != nil {
		return nil, err
	}
	op, err := wireEnum(messages.AclOperation_value, "ACL_OPERATION_", string(a.Operation), "operation")
	if err != nil {
		return nil, err
	}
	rt, err := wireEnum(messages.AclResourceType_value, "ACL_RESOURCE_", string(a.Resource), "resource type")
	if err != nil {
		return nil, err
	}
	pt, err := wireEnum(messages.AclPatternType_value, "ACL_PATTERN_", string(a.Pattern), "pattern type")
	if err != nil {
		return nil, err
	}
	return &messages.AclBinding{Principal: a.Principal, Permission: messages.AclPermission(perm), Operation: messages.AclOperation(op),
		ResourceType: messages.AclResourceType(rt), ResourceName: a.Name, PatternType: messages.AclPatternType(pt), Host: a.Host}, nil
}

func wireEnum(values map[string]int32, prefix, name, what string) (int32, error) {
	if name == "" {
		return values[prefix+"ANY"], nil
	}
	v, ok := values[prefix+strings.ToUpper(strings.ReplaceAll(name, "-", "_"))]
	if !ok || v == 0 {
		return 0, fmt.Errorf("ACL %s %q is not one of Sluice's", what, name)
	}
	return v, nil
}

func aclOf(b *messages.AclBinding) ACL {
	return ACL{Principal: b.Principal, Permission: ACLPermission(enumName(b.Permission.String(), "ACL_PERMISSION_")),
		Operation: ACLOperation(enumName(b.Operation.String(), "ACL_OPERATION_")),
		Resource:  ACLResource(enumName(b.ResourceType.String(), "ACL_RESOURCE_")), Name: b.ResourceName,
		Pattern: ACLPattern(enumName(b.PatternType.String(), "ACL_PATTERN_")), Host: b.Host}
}

// enumName is a wire enum's name as the client spells it: "any" is "".
func enumName(name, prefix string) string {
	n := strings.ReplaceAll(strings.ToLower(strings.TrimPrefix(name, prefix)), "_", "-")
	if n == "any" {
		return ""
	}
	return n
}

func wireACLs(acls []ACL) ([]*messages.AclBinding, error) {
	out := make([]*messages.AclBinding, len(acls))
	for i, a := range acls {
		b, err := a.wire()
		if err != nil {
			return nil, err
		}
		out[i] = b
	}
	return out, nil
}

func aclsOf(bs []*messages.AclBinding) []ACL {
	out := make([]ACL, len(bs))
	for i, b := range bs {
		out[i] = aclOf(b)
	}
	return out
}
