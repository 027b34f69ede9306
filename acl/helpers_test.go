package acl

import (
	"fmt"
	"strings"

	"github.com/sluicemq/sluice/messages"
)

// acl parses the test shorthand "PRINCIPAL PERMISSION OPERATION type:name
// pattern [host]", e.g. "User:alice ALLOW READ topic:orders literal".
// A field "-" stays at its zero value.
func acl(s string) *messages.AclBinding {
	f := strings.Fields(s)
	if len(f) != 5 && len(f) != 6 {
		panic(fmt.Sprintf("acl %q: want 5 or 6 fields", s))
	}
	rt, name, _ := strings.Cut(f[3], ":")
	b := &messages.AclBinding{
		Principal:    dash(f[0]),
		Permission:   messages.AclPermission(enum(messages.AclPermission_value, "ACL_PERMISSION_", f[1])),
		Operation:    messages.AclOperation(enum(messages.AclOperation_value, "ACL_OPERATION_", f[2])),
		ResourceType: messages.AclResourceType(enum(messages.AclResourceType_value, "ACL_RESOURCE_", rt)),
		ResourceName: dash(name),
		PatternType:  messages.AclPatternType(enum(messages.AclPatternType_value, "ACL_PATTERN_", f[4])),
	}
	if len(f) == 6 {
		b.Host = dash(f[5])
	}
	return b
}

func acls(ss ...string) []*messages.AclBinding {
	out := make([]*messages.AclBinding, len(ss))
	for i, s := range ss {
		out[i] = acl(s)
	}
	return out
}

func dash(s string) string {
	if s == "-" {
		return ""
	}
	return s
}

func enum(values map[string]int32, prefix, name string) int32 {
	if name == "-" {
		return 0
	}
	v, ok := values[prefix+strings.ToUpper(name)]
	if !ok {
		panic(fmt.Sprintf("no enum %s%s", prefix, strings.ToUpper(name)))
	}
	return v
}

// resource parses "type:name".
func resource(s string) (messages.AclResourceType, string) {
	rt, name, _ := strings.Cut(s, ":")
	return messages.AclResourceType(enum(messages.AclResourceType_value, "ACL_RESOURCE_", rt)), name
}

func operation(s string) messages.AclOperation {
	return messages.AclOperation(enum(messages.AclOperation_value, "ACL_OPERATION_", s))
}

func strs(bs []*messages.AclBinding) []string {
	out := make([]string, len(bs))
	for i, b := range bs {
		out[i] = String(b)
	}
	return out
}
