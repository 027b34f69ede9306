package acl

import (
	"fmt"
	"testing"

	"github.com/sluicemq/sluice/messages"
)

func TestAuthorize(t *testing.T) {
	tests := []struct {
		name      string
		bindings  []string
		super     []string
		principal string
		op        string
		resource  string
		want      bool
	}{
		{"no acl denies", nil, nil, "User:alice", "READ", "topic:orders", false},
		{"literal allow", []string{"User:alice ALLOW READ topic:orders literal"}, nil, "User:alice", "READ", "topic:orders", true},
		{"literal is exact", []string{"User:alice ALLOW READ topic:orders literal"}, nil, "User:alice", "READ", "topic:orders2", false},
		{"literal not a prefix", []string{"User:alice ALLOW READ topic:orders literal"}, nil, "User:alice", "READ", "topic:order", false},
		{"other principal", []string{"User:alice ALLOW READ topic:orders literal"}, nil, "User:bob", "READ", "topic:orders", false},
		{"other operation", []string{"User:alice ALLOW READ topic:orders literal"}, nil, "User:alice", "WRITE", "topic:orders", false},
		{"other resource type", []string{"User:alice ALLOW READ topic:orders literal"}, nil, "User:alice", "READ", "group:orders", false},
		{"literal star", []string{"User:alice ALLOW READ topic:* literal"}, nil, "User:alice", "READ", "topic:anything", true},
		{"prefixed star is a prefix", []string{"User:alice ALLOW READ topic:* prefixed"}, nil, "User:alice", "READ", "topic:anything", false},
		{"prefixed matches", []string{"User:alice ALLOW READ topic:ord prefixed"}, nil, "User:alice", "READ", "topic:orders", true},
		{"prefixed matches itself", []string{"User:alice ALLOW READ topic:ord prefixed"}, nil, "User:alice", "READ", "topic:ord", true},
		{"prefixed longer than name", []string{"User:alice ALLOW READ topic:ord prefixed"}, nil, "User:alice", "READ", "topic:or", false},
		{"prefixed not inside", []string{"User:alice ALLOW READ topic:ord prefixed"}, nil, "User:alice", "READ", "topic:xorders", false},
		{"prefixed group", []string{"User:alice ALLOW READ group:app- prefixed"}, nil, "User:alice", "READ", "group:app-1", true},
		{"deny beats allow", []string{"User:alice ALLOW READ topic:orders literal", "User:alice DENY READ topic:orders literal"}, nil, "User:alice", "READ", "topic:orders", false},
		{"deny before allow", []string{"User:alice DENY READ topic:orders literal", "User:alice ALLOW READ topic:orders literal"}, nil, "User:alice", "READ", "topic:orders", false},
		{"deny all beats allow", []string{"User:alice ALLOW READ topic:orders literal", "User:alice DENY ALL topic:orders literal"}, nil, "User:alice", "READ", "topic:orders", false},
		{"deny other op", []string{"User:alice ALLOW READ topic:orders literal", "User:alice DENY WRITE topic:orders literal"}, nil, "User:alice", "READ", "topic:orders", true},
		{"deny other principal", []string{"User:alice ALLOW READ topic:orders literal", "User:bob DENY READ topic:orders literal"}, nil, "User:alice", "READ", "topic:orders", true},
		{"deny wildcard user", []string{"User:alice ALLOW READ topic:orders literal", "User:* DENY READ topic:orders literal"}, nil, "User:alice", "READ", "topic:orders", false},
		{"deny prefixed beats literal", []string{"User:alice ALLOW READ topic:orders literal", "User:alice DENY READ topic:or prefixed"}, nil, "User:alice", "READ", "topic:orders", false},
		{"deny star beats prefixed", []string{"User:alice ALLOW READ topic:or prefixed", "User:alice DENY READ topic:* literal"}, nil, "User:alice", "READ", "topic:orders", false},
		{"deny other resource", []string{"User:alice ALLOW READ topic:* literal", "User:alice DENY READ topic:secret literal"}, nil, "User:alice", "READ", "topic:orders", true},
		{"deny read keeps describe", []string{"User:alice ALLOW READ topic:orders literal", "User:alice DENY READ topic:orders literal"}, nil, "User:alice", "DESCRIBE", "topic:orders", true},
		{"deny describe", []string{"User:alice ALLOW READ topic:orders literal", "User:alice DENY DESCRIBE topic:orders literal"}, nil, "User:alice", "DESCRIBE", "topic:orders", false},
		{"user star allows user", []string{"User:* ALLOW READ topic:orders literal"}, nil, "User:alice", "READ", "topic:orders", true},
		{"user star not broker", []string{"User:* ALLOW READ topic:orders literal"}, nil, "Broker:1", "READ", "topic:orders", false},
		{"user star not untyped", []string{"User:* ALLOW READ topic:orders literal"}, nil, "alice", "READ", "topic:orders", false},
		{"broker star allows broker", []string{"Broker:* ALLOW CLUSTER_ACTION cluster:kafka-cluster literal"}, nil, "Broker:1", "CLUSTER_ACTION", "cluster:kafka-cluster", true},
		{"broker star not user", []string{"Broker:* ALLOW CLUSTER_ACTION cluster:kafka-cluster literal"}, nil, "User:alice", "CLUSTER_ACTION", "cluster:kafka-cluster", false},
		{"describe from read", []string{"User:alice ALLOW READ topic:orders literal"}, nil, "User:alice", "DESCRIBE", "topic:orders", true},
		{"describe from write", []string{"User:alice ALLOW WRITE topic:orders literal"}, nil, "User:alice", "DESCRIBE", "topic:orders", true},
		{"describe from delete", []string{"User:alice ALLOW DELETE topic:orders literal"}, nil, "User:alice", "DESCRIBE", "topic:orders", true},
		{"describe from alter", []string{"User:alice ALLOW ALTER topic:orders literal"}, nil, "User:alice", "DESCRIBE", "topic:orders", true},
		{"describe not from create", []string{"User:alice ALLOW CREATE topic:orders literal"}, nil, "User:alice", "DESCRIBE", "topic:orders", false},
		{"describe from group read", []string{"User:alice ALLOW READ group:g literal"}, nil, "User:alice", "DESCRIBE", "group:g", true},
		{"read not from describe", []string{"User:alice ALLOW DESCRIBE topic:orders literal"}, nil, "User:alice", "READ", "topic:orders", false},
		{"describe configs from alter configs", []string{"User:alice ALLOW ALTER_CONFIGS topic:orders literal"}, nil, "User:alice", "DESCRIBE_CONFIGS", "topic:orders", true},
		{"alter configs not from describe configs", []string{"User:alice ALLOW DESCRIBE_CONFIGS topic:orders literal"}, nil, "User:alice", "ALTER_CONFIGS", "topic:orders", false},
		{"describe configs not from alter", []string{"User:alice ALLOW ALTER topic:orders literal"}, nil, "User:alice", "DESCRIBE_CONFIGS", "topic:orders", false},
		{"all allows write", []string{"User:alice ALLOW ALL topic:orders literal"}, nil, "User:alice", "WRITE", "topic:orders", true},
		{"all allows describe configs", []string{"User:alice ALLOW ALL topic:orders literal"}, nil, "User:alice", "DESCRIBE_CONFIGS", "topic:orders", true},
		{"all on cluster", []string{"User:alice ALLOW ALL cluster:kafka-cluster literal"}, nil, "User:alice", "IDEMPOTENT_WRITE", "cluster:kafka-cluster", true},
		{"asking all needs all", []string{"User:alice ALLOW READ topic:orders literal"}, nil, "User:alice", "ALL", "topic:orders", false},
		{"asking all with all", []string{"User:alice ALLOW ALL topic:orders literal"}, nil, "User:alice", "ALL", "topic:orders", true},
		{"asking any is never allowed", []string{"User:alice ALLOW ALL topic:orders literal"}, nil, "User:alice", "ANY", "topic:orders", false},
		{"asking unknown is never allowed", []string{"User:alice ALLOW ALL topic:orders literal"}, nil, "User:alice", "UNKNOWN", "topic:orders", false},
		{"cluster empty name", []string{"User:alice ALLOW CREATE cluster:- literal"}, nil, "User:alice", "CREATE", "cluster:", true},
		{"cluster by name", []string{"User:alice ALLOW CREATE cluster:- literal"}, nil, "User:alice", "CREATE", "cluster:kafka-cluster", true},
		{"invalid host ignored", []string{"User:alice ALLOW READ topic:orders literal 10.0.0.1"}, nil, "User:alice", "READ", "topic:orders", false},
		{"invalid binding ignored", []string{"User:alice ALLOW WRITE group:g literal"}, nil, "User:alice", "WRITE", "group:g", false},
		{"super user no acl", nil, []string{"User:admin"}, "User:admin", "ALTER", "cluster:kafka-cluster", true},
		{"super user beats deny", []string{"User:admin DENY ALL topic:* literal"}, []string{"User:admin"}, "User:admin", "READ", "topic:orders", true},
		{"super user any op", nil, []string{"User:admin"}, "User:admin", "ANY", "any:x", true},
		{"super users are exact", nil, []string{"User:*"}, "User:alice", "READ", "topic:orders", false},
		{"super users are per principal", nil, []string{"User:admin"}, "User:alice", "READ", "topic:orders", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := New(acls(tt.bindings...), tt.super)
			rt, name := resource(tt.resource)
			op := operation(tt.op)
			if got := a.Authorize(tt.principal, op, rt, name); got != tt.want {
				t.Errorf("Authorize(%s, %s, %s) = %v, want %v", tt.principal, tt.op, tt.resource, got, tt.want)
			}
			if why := a.Why(tt.principal, op, rt, name); (why == "") != tt.want {
				t.Errorf("Why(%s, %s, %s) = %q, want allowed=%v", tt.principal, tt.op, tt.resource, why, tt.want)
			}
		})
	}
}

func TestWhy(t *testing.T) {
	a := New(acls(
		"User:alice ALLOW READ topic:orders literal",
		"User:* DENY WRITE topic:ord prefixed",
	), []string{"User:admin"})
	tests := []struct {
		principal, op, resource, want string
	}{
		{"User:alice", "READ", "topic:orders", ""},
		{"User:admin", "WRITE", "topic:orders", ""},
		{"User:bob", "READ", "topic:x", `no ACL allows READ on topic "x" for User:bob`},
		{"User:alice", "WRITE", "topic:orders", "denied by ACL User:* DENY WRITE topic:ord (prefixed) host=*"},
		{"User:alice", "ALTER", "cluster:", `no ACL allows ALTER on cluster "kafka-cluster" for User:alice`},
		{"User:alice", "DESCRIBE_CONFIGS", "group:g", `no ACL allows DESCRIBE_CONFIGS on group "g" for User:alice`},
	}
	for _, tt := range tests {
		rt, name := resource(tt.resource)
		if got := a.Why(tt.principal, operation(tt.op), rt, name); got != tt.want {
			t.Errorf("Why(%s, %s, %s) = %q, want %q", tt.principal, tt.op, tt.resource, got, tt.want)
		}
	}
}

func TestIsSuperUser(t *testing.T) {
	a := New(nil, []string{"User:admin", "Broker:0"})
	for p, want := range map[string]bool{"User:admin": true, "Broker:0": true, "User:alice": false, "User:*": false, "": false} {
		if got := a.IsSuperUser(p); got != want {
			t.Errorf("IsSuperUser(%q) = %v, want %v", p, got, want)
		}
	}
}

// The authorizer does not keep the caller's bindings: changing them after
// New changes nothing.
func TestNewCopiesBindings(t *testing.T) {
	bs := acls("User:alice ALLOW READ topic:orders literal")
	a := New(bs, nil)
	bs[0].Principal = "User:bob"
	if !a.Authorize("User:alice", opRead, resourceTopic, "orders") || a.Authorize("User:bob", opRead, resourceTopic, "orders") {
		t.Fatal("authorizer followed a change to its input")
	}
}

func TestAuthorizeConcurrently(t *testing.T) {
	a := New(acls("User:* ALLOW READ topic:t prefixed", "User:bob DENY READ topic:t1 literal"), nil)
	done := make(chan bool)
	for g := 0; g < 8; g++ {
		go func() {
			ok := true
			for i := 0; i < 1000; i++ {
				ok = ok && a.Authorize("User:alice", opRead, resourceTopic, fmt.Sprint("t", i)) &&
					!a.Authorize("User:bob", opRead, resourceTopic, "t1")
			}
			done <- ok
		}()
	}
	for g := 0; g < 8; g++ {
		if !<-done {
			t.Error("wrong answer under concurrency")
		}
	}
}

// manyBindings is a few thousand bindings over many topics, prefixes and users.
func manyBindings(n int) []*messages.AclBinding {
	var out []*messages.AclBinding
	for i := 0; i < n; i++ {
		perm := "ALLOW"
		if i%10 == 0 {
			perm = "DENY"
		}
		out = append(out,
			acl(fmt.Sprintf("User:u%d %s READ topic:topic-%d literal", i%50, perm, i)),
			acl(fmt.Sprintf("User:u%d ALLOW WRITE topic:team-%d- prefixed", i%50, i)),
		)
	}
	return out
}

func TestManyBindings(t *testing.T) {
	a := New(manyBindings(2000), nil)
	if !a.Authorize("User:u1", opRead, resourceTopic, "topic-1") {
		t.Error("u1 should read topic-1")
	}
	if a.Authorize("User:u10", opRead, resourceTopic, "topic-10") {
		t.Error("u10 is denied topic-10")
	}
	if !a.Authorize("User:u7", opWrite, resourceTopic, "team-7-x") || !a.Authorize("User:u7", opDescribe, resourceTopic, "team-7-x") {
		t.Error("u7 should write and describe team-7-x")
	}
	if a.Authorize("User:u8", opWrite, resourceTopic, "team-7-x") {
		t.Error("u8 may not write team-7-x")
	}
}

func BenchmarkAuthorize(b *testing.B) {
	a := New(manyBindings(2500), nil)
	b.ReportAllocs()
	for b.Loop() {
		a.Authorize("User:u7", opDescribe, resourceTopic, "team-1207-orders")
	}
}
