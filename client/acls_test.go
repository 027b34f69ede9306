package client

import (
	"testing"

	"github.com/sluicemq/sluice/messages"
)

func TestACLWireRoundTrip(t *testing.T) {
	for _, a := range []ACL{
		{Principal: "User:alice", Permission: Allow, Operation: OpRead, Resource: TopicResource, Name: "orders", Pattern: Literal, Host: "*"},
		{Principal: "User:*", Permission: Deny, Operation: OpDescribeConfigs, Resource: GroupResource, Name: "bill", Pattern: Prefixed, Host: "*"},
		{Principal: "User:ops", Permission: Allow, Operation: OpIdempotentWrite, Resource: ClusterResource, Name: ClusterName, Pattern: Literal, Host: "*"},
		{Pattern: MatchPattern, Name: "orders"},
		{}, // a filter of everything
	} {
		b, err := a.wire()
		if err != nil {
			t.Fatalf("%+v: %v", a, err)
		}
		if got := aclOf(b); got != a {
			t.Errorf("round trip of %+v gave %+v", a, got)
		}
	}
	b, _ := ACL{}.wire()
	if b.Operation != messages.AclOperation_ACL_OPERATION_ANY || b.Permission != messages.AclPermission_ACL_PERMISSION_ANY ||
		b.ResourceType != messages.AclResourceType_ACL_RESOURCE_ANY || b.PatternType != messages.AclPatternType_ACL_PATTERN_ANY {
		t.Fatalf("empty fields are not ANY on the wire: %v", b)
	}
	for _, bad := range []ACL{{Operation: "reed"}, {Permission: "maybe"}, {Resource: "table"}, {Pattern: "glob"}, {Operation: "unknown"}} {
		if _, err := bad.wire(); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
	a := ACL{Principal: "User:alice", Permission: Allow, Operation: OpRead, Resource: TopicResource, Name: "orders", Pattern: Literal, Host: "*"}
	if got, want := a.String(), "User:alice ALLOW READ topic:orders (literal) host=*"; got != want {
		t.Fatalf("String() = %q, want %q", got, want)
	}
}
