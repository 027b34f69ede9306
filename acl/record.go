package acl

import (
	"fmt"
	"slices"
	"strings"

	"github.com/sluicemq/sluice/messages"
	"google.golang.org/protobuf/proto"
)

// The functions that change a SecurityRecord return a new record and never
// modify the one they are given (nil is an empty record): the controller
// stores the result with check-and-set and may have to retry from the old
// one. ACLs keep their insertion order and users are sorted by name, so
// equal changes give equal bytes.

// AddACLs validates each binding and appends those not already present
// (equal after normalisation); created counts only the new ones. When any
// binding is invalid nothing is added and err says which one and why.
func AddACLs(rec *messages.SecurityRecord, bindings []*messages.AclBinding) (next *messages.SecurityRecord, created int, err error) {
	next = cloneRecord(rec)
	have := make(map[bindingKey]bool, len(next.Acls)+len(bindings))
	for _, b := range next.Acls {
		have[keyOf(normalise(b))] = true
	}
	for i, b := range bindings {
		n, err := Validate(b)
		if err != nil {
			return nil, 0, fmt.Errorf("acl %d: %w", i, err)
		}
		if k := keyOf(n); !have[k] {
			have[k] = true
			next.Acls = append(next.Acls, n)
			created++
		}
	}
	return next, created, nil
}

// RemoveACLs removes every binding that any of the filters matches and
// returns them in record order. When any filter is invalid nothing is
// removed and err says which one and why.
func RemoveACLs(rec *messages.SecurityRecord, filters []*messages.AclBinding) (next *messages.SecurityRecord, removed []*messages.AclBinding, err error) {
	valid := make([]*messages.AclBinding, len(filters))
	for i, f := range filters {
		if valid[i], err = ValidateFilter(f); err != nil {
			return nil, nil, fmt.Errorf("acl filter %d: %w", i, err)
		}
	}
	next = cloneRecord(rec)
	kept := next.Acls[:0]
	for _, b := range next.Acls {
		if slices.ContainsFunc(valid, func(f *messages.AclBinding) bool { return Matches(f, b) }) {
			removed = append(removed, b)
		} else {
			kept = append(kept, b)
		}
	}
	next.Acls = kept
	return next, removed, nil
}

// ListACLs returns copies of the bindings filter matches (all of them for a
// nil filter), in record order.
func ListACLs(rec *messages.SecurityRecord, filter *messages.AclBinding) []*messages.AclBinding {
	var out []*messages.AclBinding
	for _, b := range rec.GetAcls() {
		if Matches(filter, b) {
			out = append(out, clone(b))
		}
	}
	return out
}

// bindingKey identifies a binding for de-duplication.
type bindingKey struct {
	rt        messages.AclResourceType
	name      string
	pattern   messages.AclPatternType
	principal string
	host      string
	op        messages.AclOperation
	perm      messages.AclPermission
}

func keyOf(b *messages.AclBinding) bindingKey {
	return bindingKey{b.ResourceType, b.ResourceName, b.PatternType, b.Principal, b.Host, b.Operation, b.Permission}
}

// cloneRecord deep-copies rec (every field: the producer id key and the
// users' passwords too) with its users sorted by name.
func cloneRecord(rec *messages.SecurityRecord) *messages.SecurityRecord {
	next := &messages.SecurityRecord{}
	if rec != nil {
		next = proto.Clone(rec).(*messages.SecurityRecord)
	}
	slices.SortStableFunc(next.Users, func(a, b *messages.UserRecord) int { return strings.Compare(a.Name, b.Name) })
	return next
}
