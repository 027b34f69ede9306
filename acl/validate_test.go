package acl

import (
	"strings"
	"testing"

	"github.com/sluicemq/sluice/messages"
)

func TestValidateNormalises(t *testing.T) {
	tests := []struct{ in, want string }{
		{"User:alice ALLOW READ topic:orders literal", "User:alice ALLOW READ topic:orders (literal) host=*"},
		{"User:alice ALLOW READ topic:orders literal *", "User:alice ALLOW READ topic:orders (literal) host=*"},
		{"User:* DENY ALL topic:* literal", "User:* DENY ALL topic:* (literal) host=*"},
		{"User:alice ALLOW WRITE topic:ord prefixed", "User:alice ALLOW WRITE topic:ord (prefixed) host=*"},
		{"User:alice ALLOW DELETE group:g prefixed", "User:alice ALLOW DELETE group:g (prefixed) host=*"},
		{"Broker:1 ALLOW CLUSTER_ACTION cluster:- literal", "Broker:1 ALLOW CLUSTER_ACTION cluster:kafka-cluster (literal) host=*"},
		{"Broker:* ALLOW IDEMPOTENT_WRITE cluster:kafka-cluster literal", "Broker:* ALLOW IDEMPOTENT_WRITE cluster:kafka-cluster (literal) host=*"},
		{"User:a:b ALLOW READ topic:t literal", "User:a:b ALLOW READ topic:t (literal) host=*"},
	}
	for _, tt := range tests {
		in := acl(tt.in)
		before := String(in)
		got, err := Validate(in)
		if err != nil {
			t.Errorf("Validate(%s): %v", tt.in, err)
			continue
		}
		if String(got) != tt.want {
			t.Errorf("Validate(%s) = %s, want %s", tt.in, String(got), tt.want)
		}
		if String(in) != before {
			t.Errorf("Validate(%s) changed its input to %s", tt.in, String(in))
		}
	}
}

// Each error says what is wrong: the want strings are parts of the message.
func TestValidateErrors(t *testing.T) {
	tests := []struct{ in, want string }{
		{"User:alice ALLOW READ any:x literal", "resource type any is not allowed"},
		{"User:alice ALLOW READ -:x literal", "resource type unknown is not allowed"},
		{"User:alice ALLOW READ topic:x any", "pattern type any is not allowed"},
		{"User:alice ALLOW READ topic:x match", "pattern type match is not allowed"},
		{"User:alice ALLOW READ topic:x -", "pattern type unknown is not allowed"},
		{"User:alice ALLOW READ topic:- literal", "topic ACL has an empty resource name"},
		{"User:alice ALLOW READ topic:- prefixed", "topic ACL has an empty resource name"},
		{"User:alice ALLOW READ group:- literal", "group ACL has an empty resource name"},
		{"User:alice ALLOW ALTER cluster:kafka prefixed", "a cluster ACL must be literal, not prefixed"},
		{"User:alice ALLOW ALTER cluster:* literal", `cluster resource name "*" is not allowed; the cluster is named "kafka-cluster"`},
		{"User:alice ALLOW ALTER cluster:prod literal", `cluster resource name "prod" is not allowed`},
		{"- ALLOW READ topic:x literal", "principal is empty"},
		{"alice ALLOW READ topic:x literal", `principal "alice" has no type`},
		{"Group:x ALLOW READ topic:x literal", `principal "Group:x" has type "Group"; the type must be User or Broker`},
		{"user:alice ALLOW READ topic:x literal", `has type "user"`},
		{"User: ALLOW READ topic:x literal", `principal "User:" has an empty name`},
		{"User:alice ALLOW READ topic:x literal 10.0.0.1", `host "10.0.0.1" is not supported; only "*"`},
		{"User:alice ALLOW - topic:x literal", "operation UNKNOWN is not allowed on a topic"},
		{"User:alice ALLOW ANY topic:x literal", "operation ANY is not allowed on a topic"},
		{"User:alice ALLOW CLUSTER_ACTION topic:x literal", "operation CLUSTER_ACTION is not allowed on a topic; use one of READ, WRITE"},
		{"User:alice ALLOW IDEMPOTENT_WRITE topic:x literal", "operation IDEMPOTENT_WRITE is not allowed on a topic"},
		{"User:alice ALLOW WRITE group:g literal", "operation WRITE is not allowed on a group; use one of READ, DESCRIBE, DELETE, ALL"},
		{"User:alice ALLOW ALTER_CONFIGS group:g literal", "operation ALTER_CONFIGS is not allowed on a group"},
		{"User:alice ALLOW READ cluster:- literal", "operation READ is not allowed on a cluster"},
		{"User:alice ALLOW WRITE cluster:- literal", "operation WRITE is not allowed on a cluster"},
		{"User:alice - READ topic:x literal", "permission UNKNOWN is not allowed in an ACL binding; use ALLOW or DENY"},
		{"User:alice ANY READ topic:x literal", "permission ANY is not allowed"},
	}
	for _, tt := range tests {
		_, err := Validate(acl(tt.in))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Validate(%s) = %v, want an error containing %q", tt.in, err, tt.want)
		}
	}
	if _, err := Validate(nil); err == nil {
		t.Error("Validate(nil) passed")
	}
	if _, err := Validate(&messages.AclBinding{ResourceType: 9, ResourceName: "x", PatternType: patternLiteral,
		Principal: "User:a", Operation: opRead, Permission: permissionAllow}); err == nil || !strings.Contains(err.Error(), "resource type 9") {
		t.Errorf("out-of-range resource type: %v", err)
	}
}

// Exactly the operations listed for a resource type validate (in enum order).
func TestValidateOperationTable(t *testing.T) {
	want := map[string]string{
		"topic":   "ALL READ WRITE CREATE DELETE ALTER DESCRIBE DESCRIBE_CONFIGS ALTER_CONFIGS",
		"group":   "ALL READ DELETE DESCRIBE",
		"cluster": "ALL CREATE ALTER DESCRIBE CLUSTER_ACTION DESCRIBE_CONFIGS ALTER_CONFIGS IDEMPOTENT_WRITE",
	}
	for rt, ops := range want {
		var got []string
		for op := int32(0); op <= 13; op++ {
			b := acl("User:a ALLOW READ " + rt + ":kafka-cluster literal")
			b.Operation = messages.AclOperation(op)
			if _, err := Validate(b); err == nil {
				got = append(got, operationName(b.Operation))
			}
		}
		if strings.Join(got, " ") != ops {
			t.Errorf("%s: valid operations %v, want %s", rt, got, ops)
		}
	}
}

func TestValidateFilter(t *testing.T) {
	tests := []struct{ in, want, err string }{
		{"- - - -:- -", `"" ANY ANY any:"" (any) host=""`, ""},
		{"- ANY ANY any:- any", `"" ANY ANY any:"" (any) host=""`, ""},
		{"User:alice ALLOW READ topic:orders match", "User:alice ALLOW READ topic:orders (match) host=\"\"", ""},
		{"User:* DENY ALL group:g prefixed *", "User:* DENY ALL group:g (prefixed) host=*", ""},
		{"- - - cluster:- literal", `"" ANY ANY cluster:"" (literal) host=""`, ""},
		{"- - - -:- - 10.0.0.1", "", `filter host "10.0.0.1" is not supported`},
		{"alice - - -:- -", "", `filter principal "alice" has no type`},
		{"User: - - -:- -", "", `filter principal "User:" has an empty name`},
	}
	for _, tt := range tests {
		got, err := ValidateFilter(acl(tt.in))
		switch {
		case tt.err != "":
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("ValidateFilter(%s) = %v, want an error containing %q", tt.in, err, tt.err)
			}
		case err != nil:
			t.Errorf("ValidateFilter(%s): %v", tt.in, err)
		case String(got) != tt.want:
			t.Errorf("ValidateFilter(%s) = %s, want %s", tt.in, String(got), tt.want)
		}
	}
	bad := []*messages.AclBinding{
		nil,
		{ResourceType: 7},
		{PatternType: 9},
		{Operation: 13},
		{Permission: 4},
	}
	wants := []string{"missing", "filter resource type 7 is unknown", "filter pattern type 9 is unknown",
		"filter operation 13 is unknown", "filter permission 4 is unknown"}
	for i, f := range bad {
		if _, err := ValidateFilter(f); err == nil || !strings.Contains(err.Error(), wants[i]) {
			t.Errorf("ValidateFilter(%v) = %v, want an error containing %q", f, err, wants[i])
		}
	}
}

func TestString(t *testing.T) {
	got := String(acl("User:alice ALLOW READ topic:orders literal *"))
	if want := "User:alice ALLOW READ topic:orders (literal) host=*"; got != want {
		t.Errorf("String = %q, want %q", got, want)
	}
	got = String(acl("Broker:1 DENY DESCRIBE_CONFIGS cluster:kafka-cluster literal *"))
	if want := "Broker:1 DENY DESCRIBE_CONFIGS cluster:kafka-cluster (literal) host=*"; got != want {
		t.Errorf("String = %q, want %q", got, want)
	}
}
