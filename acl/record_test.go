package acl

import (
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/sluicemq/sluice/messages"
)

func TestAddACLs(t *testing.T) {
	rec, created, err := AddACLs(nil, acls(
		"User:alice ALLOW READ topic:orders literal",
		"User:alice ALLOW READ topic:orders literal *", // same after normalisation
		"User:bob ALLOW WRITE topic:ord prefixed",
		"Broker:1 ALLOW CLUSTER_ACTION cluster:- literal",
	))
	if err != nil || created != 3 {
		t.Fatalf("AddACLs = %d, %v; want 3 created", created, err)
	}
	before := proto.Clone(rec)
	next, created, err := AddACLs(rec, acls(
		"Broker:1 ALLOW CLUSTER_ACTION cluster:kafka-cluster literal *", // already there
		"User:alice DENY READ topic:orders literal",
		"User:alice DENY READ topic:orders literal",
	))
	if err != nil || created != 1 {
		t.Fatalf("second AddACLs = %d, %v; want 1 created", created, err)
	}
	want := []string{
		"User:alice ALLOW READ topic:orders (literal) host=*",
		"User:bob ALLOW WRITE topic:ord (prefixed) host=*",
		"Broker:1 ALLOW CLUSTER_ACTION cluster:kafka-cluster (literal) host=*",
		"User:alice DENY READ topic:orders (literal) host=*",
	}
	if got := strs(next.Acls); !slices.Equal(got, want) {
		t.Errorf("acls = %q, want %q", got, want)
	}
	if !proto.Equal(rec, before) {
		t.Error("AddACLs modified its input record")
	}
}

func TestAddACLsInvalid(t *testing.T) {
	rec, _, _ := AddACLs(nil, acls("User:alice ALLOW READ topic:orders literal"))
	next, created, err := AddACLs(rec, acls(
		"User:bob ALLOW READ topic:t literal",
		"User:bob ALLOW WRITE group:g literal",
	))
	if err == nil || !strings.Contains(err.Error(), "acl 1: operation WRITE is not allowed on a group") {
		t.Errorf("err = %v, want it to name acl 1 and the problem", err)
	}
	if next != nil || created != 0 {
		t.Errorf("an invalid batch returned %v, %d", next, created)
	}
	if len(rec.Acls) != 1 {
		t.Error("an invalid batch changed the record")
	}
}

func TestRemoveACLs(t *testing.T) {
	rec, _, _ := AddACLs(nil, acls(
		"User:alice ALLOW READ topic:orders literal",
		"User:alice ALLOW READ topic:* literal",
		"User:alice ALLOW WRITE topic:ord prefixed",
		"User:bob DENY READ topic:orders literal",
		"User:* ALLOW READ group:g literal",
	))
	rec.Users = []*messages.UserRecord{{Name: "bob", TokenSha256: HashToken("b")}, {Name: "alice", TokenSha256: HashToken("a")}}
	before := proto.Clone(rec)
	tests := []struct {
		filters []string
		removed []string
		left    int
	}{
		{nil, nil, 5},
		{[]string{"User:carol - - -:- -"}, nil, 5},
		{[]string{"- DENY - -:- -"}, []string{"User:bob DENY READ topic:orders (literal) host=*"}, 4},
		{[]string{"- - - topic:orders literal"}, []string{
			"User:alice ALLOW READ topic:orders (literal) host=*",
			"User:bob DENY READ topic:orders (literal) host=*"}, 3},
		{[]string{"User:alice - - topic:orders match"}, []string{
			"User:alice ALLOW READ topic:orders (literal) host=*",
			"User:alice ALLOW READ topic:* (literal) host=*",
			"User:alice ALLOW WRITE topic:ord (prefixed) host=*"}, 2},
		{[]string{"- - - group:- -", "- - WRITE -:- -", "- - WRITE -:- -"}, []string{
			"User:alice ALLOW WRITE topic:ord (prefixed) host=*",
			"User:* ALLOW READ group:g (literal) host=*"}, 3},
		{[]string{"- - - -:- -"}, strs(rec.Acls), 0},
	}
	for _, tt := range tests {
		next, removed, err := RemoveACLs(rec, acls(tt.filters...))
		if err != nil {
			t.Errorf("RemoveACLs(%q): %v", tt.filters, err)
			continue
		}
		if got := strs(removed); !slices.Equal(got, tt.removed) && (len(got) > 0 || len(tt.removed) > 0) {
			t.Errorf("RemoveACLs(%q) removed %q, want %q", tt.filters, got, tt.removed)
		}
		if len(next.Acls) != tt.left {
			t.Errorf("RemoveACLs(%q) left %d, want %d", tt.filters, len(next.Acls), tt.left)
		}
		for _, r := range removed {
			if slices.ContainsFunc(next.Acls, func(b *messages.AclBinding) bool { return String(b) == String(r) }) {
				t.Errorf("RemoveACLs(%q) kept %s", tt.filters, String(r))
			}
		}
		if len(next.Users) != 2 || next.Users[0].Name != "alice" {
			t.Errorf("RemoveACLs(%q) lost or did not sort the users: %v", tt.filters, next.Users)
		}
	}
	if !proto.Equal(rec, before) {
		t.Error("RemoveACLs modified its input record")
	}
	if _, _, err := RemoveACLs(rec, acls("- - - -:- - 10.0.0.1")); err == nil || !strings.Contains(err.Error(), "acl filter 0: filter host") {
		t.Errorf("invalid filter: %v", err)
	}
	next, removed, err := RemoveACLs(nil, acls("- - - -:- -"))
	if err != nil || len(removed) != 0 || len(next.GetAcls()) != 0 {
		t.Errorf("RemoveACLs(nil) = %v, %v, %v", next, removed, err)
	}
}

func TestListACLs(t *testing.T) {
	rec, _, _ := AddACLs(nil, acls(
		"User:alice ALLOW READ topic:orders literal",
		"User:bob ALLOW READ group:g literal",
	))
	if got := ListACLs(rec, nil); len(got) != 2 {
		t.Errorf("ListACLs(nil filter) = %d bindings, want 2", len(got))
	}
	got := ListACLs(rec, acl("- - - group:- -"))
	if want := []string{"User:bob ALLOW READ group:g (literal) host=*"}; !slices.Equal(strs(got), want) {
		t.Errorf("ListACLs(group) = %q, want %q", strs(got), want)
	}
	got[0].Principal = "User:mallory"
	if rec.Acls[1].Principal != "User:bob" {
		t.Error("ListACLs returned the record's own bindings")
	}
	if got := ListACLs(nil, nil); len(got) != 0 {
		t.Errorf("ListACLs(nil) = %v", got)
	}
}

// Every change of the record keeps what it does not change: the producer
// id key (which binds every producer id issued) and users' passwords.
func TestChangesKeepTheRestOfTheRecord(t *testing.T) {
	rec, _ := WithProducerIDKey(nil)
	key := string(rec.ProducerIdKey)
	rec, _ = AlterScram(rec, []*messages.ScramUpsertion{{Name: "bob",
		Credential: ScramCredentialOf(ScramSHA256, 4096, []byte("salt"), []byte("salted password"))}}, nil, time.Now())
	next, _, err := AddACLs(rec, acls("User:bob ALLOW READ topic:t literal"))
	if err != nil {
		t.Fatal(err)
	}
	next, _, _ = RemoveACLs(next, acls("User:bob ALLOW READ topic:t literal"))
	next, _ = AddUser(next, "carol", HashToken("sluice_c"), time.Now())
	if string(next.ProducerIdKey) != key {
		t.Error("the producer id key was lost")
	}
	if c := ScramCredentials(next)[ScramKey{"bob", ScramSHA256}]; c == nil || len(c.StoredKey) != 32 {
		t.Errorf("bob's password was lost: %v", c)
	}
}
