package acl

import (
	"testing"

	"github.com/sluicemq/sluice/messages"
)

// FuzzRecordChanges feeds the record changes what a hostile admin request
// can carry: any enum values and strings. They never panic, never store an
// invalid binding, and removing with the added bindings as filters leaves
// the record as it was.
func FuzzRecordChanges(f *testing.F) {
	f.Add(int32(2), "orders", int32(3), "User:alice", "*", int32(3), int32(3))
	f.Add(int32(4), "kafka-cluster", int32(3), "User:*", "", int32(7), int32(2))
	f.Add(int32(99), "", int32(4), "alice", "10.0.0.1", int32(-1), int32(0))
	f.Fuzz(func(t *testing.T, rt int32, name string, pattern int32, principal, host string, op, perm int32) {
		b := &messages.AclBinding{ResourceType: messages.AclResourceType(rt), ResourceName: name, PatternType: messages.AclPatternType(pattern),
			Principal: principal, Host: host, Operation: messages.AclOperation(op), Permission: messages.AclPermission(perm)}
		base := &messages.SecurityRecord{}
		next, created, err := AddACLs(base, []*messages.AclBinding{b})
		if err != nil {
			if created != 0 || len(base.Acls) != 0 {
				t.Fatalf("a refused binding changed something: %d", created)
			}
			return
		}
		for _, stored := range next.Acls {
			if _, err := Validate(stored); err != nil {
				t.Fatalf("stored an invalid binding %v: %v", stored, err)
			}
		}
		// The same binding twice is kept once.
		again, n, err := AddACLs(next, []*messages.AclBinding{b})
		if err != nil || n != 0 || len(again.Acls) != len(next.Acls) {
			t.Fatalf("adding %v again: %d new, %v", b, n, err)
		}
		back, removed, err := RemoveACLs(next, next.Acls)
		if err != nil || len(back.Acls) != 0 || len(removed) != len(next.Acls) {
			t.Fatalf("removing what was added: %v left, %d removed, %v", back.Acls, len(removed), err)
		}
		New(next.Acls, nil).Authorize(principal, messages.AclOperation(op), messages.AclResourceType(rt), name)
	})
}
