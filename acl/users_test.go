package acl

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
)

func TestUsers(t *testing.T) {
	now := time.UnixMilli(1_700_000_000_123)
	hash := func(s string) string { return HashToken("sluice_" + s) }
	rec, err := AddUser(nil, "carol", hash("c"), now)
	if err != nil {
		t.Fatal(err)
	}
	rec, _, _ = AddACLs(rec, acls("User:carol ALLOW READ topic:t literal"))
	for _, n := range []string{"alice", "bob.smith@example.com"} {
		if rec, err = AddUser(rec, n, hash(n), now.Add(time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	var names []string
	for _, u := range rec.Users {
		names = append(names, u.Name)
	}
	if want := []string{"alice", "bob.smith@example.com", "carol"}; !slices.Equal(names, want) {
		t.Errorf("users = %v, want %v (sorted)", names, want)
	}
	if rec.Users[2].CreatedUnixMs != 1_700_000_000_123 || rec.Users[2].TokenSha256 != hash("c") {
		t.Errorf("carol = %v", rec.Users[2])
	}
	if len(rec.Acls) != 1 {
		t.Error("AddUser lost the ACLs")
	}
	if tu := TokenUsers(rec); len(tu) != 3 || tu[hash("alice")] != "alice" || tu[hash("c")] != "carol" {
		t.Errorf("TokenUsers = %v", tu)
	}

	before := proto.Clone(rec)
	if _, err := AddUser(rec, "alice", hash("other"), now); !errors.Is(err, ErrUserExists) {
		t.Errorf("duplicate AddUser = %v, want ErrUserExists", err)
	}
	if _, err := AddUser(rec, "dave", hash("alice"), now); err == nil || !strings.Contains(err.Error(), "already has this token") {
		t.Errorf("AddUser with a used token = %v", err)
	}
	next, err := DeleteUser(rec, "bob.smith@example.com")
	if err != nil || len(next.Users) != 2 || next.Users[0].Name != "alice" || next.Users[1].Name != "carol" {
		t.Errorf("DeleteUser = %v, %v", next, err)
	}
	if len(next.Acls) != 1 {
		t.Error("DeleteUser dropped ACLs")
	}
	if _, err := DeleteUser(next, "bob.smith@example.com"); !errors.Is(err, ErrUserNotFound) {
		t.Errorf("second DeleteUser = %v, want ErrUserNotFound", err)
	}
	if _, err := DeleteUser(nil, "x"); !errors.Is(err, ErrUserNotFound) {
		t.Errorf("DeleteUser(nil) = %v, want ErrUserNotFound", err)
	}
	if !proto.Equal(rec, before) {
		t.Error("user changes modified their input record")
	}
	if tu := TokenUsers(nil); tu == nil || len(tu) != 0 {
		t.Errorf("TokenUsers(nil) = %v", tu)
	}
}

func TestAddUserRejects(t *testing.T) {
	good := HashToken("t")
	tests := []struct{ name, hash, want string }{
		{"", good, "user name is empty"},
		{"*", good, `user name "*" is reserved`},
		{"bob smith", good, `contains ' '`},
		{"bob:smith", good, `contains ':'`},
		{"böb", good, `contains 'ö'`},
		{strings.Repeat("a", 129), good, "129 characters long; the limit is 128"},
		{"bob", "", "token hash has 0 characters; want 64"},
		{"bob", strings.ToUpper(good), "want lowercase hex digits only"},
		{"bob", good[:63] + "g", `token hash contains 'g'`},
		{"bob", good + "0", "token hash has 65 characters"},
	}
	for _, tt := range tests {
		_, err := AddUser(nil, tt.name, tt.hash, time.Time{})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("AddUser(%q, %q) = %v, want an error containing %q", tt.name, tt.hash, err, tt.want)
		}
	}
	for _, ok := range []string{"a", "A-Z_a.z@0-9", strings.Repeat("x", 128)} {
		if err := ValidUserName(ok); err != nil {
			t.Errorf("ValidUserName(%q) = %v", ok, err)
		}
	}
}
