package acl

import (
	"fmt"
	"slices"

	"github.com/sluicemq/sluice/messages"
)

// Authorizer answers access questions from a fixed set of bindings. Build a
// new one per change; safe for concurrent reads.
type Authorizer struct {
	superUsers map[string]bool
	byType     map[messages.AclResourceType]*resourceRules
}

// resourceRules are the bindings of one resource type, indexed so that a
// check looks only at bindings that can match the name: literal ones by
// name ("*" included) and prefixed ones by prefix, probed once per distinct
// prefix length.
type resourceRules struct {
	literal     map[string][]rule
	prefixed    map[string][]rule
	prefixSizes []int // ascending
}

// rule is one validated binding, reduced to what a check compares.
type rule struct {
	principal string // exact principal, or "Type:*"
	anyOfType string // "User" for "User:*": matches every principal of that type
	op        messages.AclOperation
	deny      bool
	binding   *messages.AclBinding // normalised, for Why
}

// New builds an Authorizer. Bindings that fail Validate are ignored (the
// stored record only holds validated ones); superUsers are exact principal
// strings, with no wildcards.
func New(bindings []*messages.AclBinding, superUsers []string) *Authorizer {
	a := &Authorizer{
		superUsers: make(map[string]bool, len(superUsers)),
		byType:     make(map[messages.AclResourceType]*resourceRules),
	}
	for _, s := range superUsers {
		a.superUsers[s] = true
	}
	for _, b := range bindings {
		n, err := Validate(b)
		if err != nil {
			continue
		}
		a.add(n)
	}
	for _, rr := range a.byType {
		slices.Sort(rr.prefixSizes)
	}
	return a
}

func (a *Authorizer) add(b *messages.AclBinding) {
	rr := a.byType[b.ResourceType]
	if rr == nil {
		rr = &resourceRules{literal: map[string][]rule{}, prefixed: map[string][]rule{}}
		a.byType[b.ResourceType] = rr
	}
	r := rule{principal: b.Principal, op: b.Operation, deny: b.Permission == permissionDeny, binding: b}
	if typ, name, _ := splitPrincipal(b.Principal); name == wildcardName {
		r.anyOfType = typ
	}
	if b.PatternType == patternLiteral {
		rr.literal[b.ResourceName] = append(rr.literal[b.ResourceName], r)
		return
	}
	if _, seen := rr.prefixed[b.ResourceName]; !seen && !slices.Contains(rr.prefixSizes, len(b.ResourceName)) {
		rr.prefixSizes = append(rr.prefixSizes, len(b.ResourceName))
	}
	rr.prefixed[b.ResourceName] = append(rr.prefixed[b.ResourceName], r)
}

// IsSuperUser reports whether principal is one of the super users.
func (a *Authorizer) IsSuperUser(principal string) bool { return a.superUsers[principal] }

// Authorize reports whether principal may perform op on the resource (rt, name).
func (a *Authorizer) Authorize(principal string, op messages.AclOperation, rt messages.AclResourceType, name string) bool {
	if a.superUsers[principal] {
		return true
	}
	v := a.decide(principal, op, rt, resourceName(rt, name))
	return v.allowed && v.deniedBy == nil
}

// Why is like Authorize but returns a short human reason when denied
// ("denied by ACL <binding>" or "no ACL allows READ on topic \"x\" for
// User:bob"); "" when allowed.
func (a *Authorizer) Why(principal string, op messages.AclOperation, rt messages.AclResourceType, name string) string {
	if a.superUsers[principal] {
		return ""
	}
	name = resourceName(rt, name)
	v := a.decide(principal, op, rt, name)
	switch {
	case v.deniedBy != nil:
		return "denied by ACL " + String(v.deniedBy)
	case !v.allowed:
		return fmt.Sprintf("no ACL allows %s on %s %q for %s", operationName(op), resourceTypeName(rt), name, principal)
	}
	return ""
}

// resourceName lets callers pass "" for the cluster, as bindings may.
func resourceName(rt messages.AclResourceType, name string) string {
	if rt == resourceCluster && name == "" {
		return ClusterName
	}
	return name
}

// verdict is what the matching bindings say: deniedBy is the first DENY
// found (which settles it), allowed whether any ALLOW grants the op.
type verdict struct {
	allowed  bool
	deniedBy *messages.AclBinding
}

func (a *Authorizer) decide(principal string, op messages.AclOperation, rt messages.AclResourceType, name string) verdict {
	var v verdict
	rr := a.byType[rt]
	if rr == nil || !askable(op) {
		return v
	}
	c := check{principal: principal, principalType: principalType(principal), op: op, v: &v}
	if !c.scan(rr.literal[name]) || (name != wildcardResource && !c.scan(rr.literal[wildcardResource])) {
		return v
	}
	for _, size := range rr.prefixSizes {
		if size > len(name) {
			break
		}
		if !c.scan(rr.prefixed[name[:size]]) {
			return v
		}
	}
	return v
}

// check evaluates rules for one question, recording into v.
type check struct {
	principal     string
	principalType string
	op            messages.AclOperation
	v             *verdict
}

// scan applies rules; false once a DENY matched, since nothing can undo it.
func (c check) scan(rules []rule) bool {
	for i := range rules {
		r := &rules[i]
		if !r.appliesTo(c.principal, c.principalType) {
			continue
		}
		if r.deny {
			if denies(r.op, c.op) {
				c.v.deniedBy = r.binding
				return false
			}
		} else if grants(r.op, c.op) {
			c.v.allowed = true
		}
	}
	return true
}

func (r *rule) appliesTo(principal, principalType string) bool {
	if r.anyOfType != "" {
		return principalType == r.anyOfType
	}
	return r.principal == principal
}
