package acl

import (
	"errors"
	"fmt"
	"strings"

	"github.com/sluicemq/sluice/messages"
)

const (
	resourceAny   = messages.AclResourceType_ACL_RESOURCE_ANY
	operationAny  = messages.AclOperation_ACL_OPERATION_ANY
	patternAny    = messages.AclPatternType_ACL_PATTERN_ANY
	permissionAny = messages.AclPermission_ACL_PERMISSION_ANY
)

// ValidateFilter checks a filter for describe/delete (any field may be
// UNKNOWN/ANY/"" meaning "any"), returns a normalised copy: UNKNOWN becomes
// ANY; strings stay "" for "any".
func ValidateFilter(f *messages.AclBinding) (*messages.AclBinding, error) {
	if f == nil {
		return nil, errors.New("acl filter is missing")
	}
	n := clone(f)
	if n.ResourceType == messages.AclResourceType_ACL_RESOURCE_UNKNOWN {
		n.ResourceType = resourceAny
	}
	if n.PatternType == messages.AclPatternType_ACL_PATTERN_UNKNOWN {
		n.PatternType = patternAny
	}
	if n.Operation == messages.AclOperation_ACL_OPERATION_UNKNOWN {
		n.Operation = operationAny
	}
	if n.Permission == messages.AclPermission_ACL_PERMISSION_UNKNOWN {
		n.Permission = permissionAny
	}
	if _, ok := operationsOf[n.ResourceType]; !ok && n.ResourceType != resourceAny {
		return nil, fmt.Errorf("filter resource type %s is unknown; use any, topic, group or cluster", resourceTypeName(n.ResourceType))
	}
	if n.PatternType < patternAny || n.PatternType > patternPrefixed {
		return nil, fmt.Errorf("filter pattern type %s is unknown; use any, match, literal or prefixed", patternName(n.PatternType))
	}
	if n.Operation != operationAny && !askable(n.Operation) {
		return nil, fmt.Errorf("filter operation %s is unknown", operationName(n.Operation))
	}
	if n.Permission != permissionAny && n.Permission != permissionAllow && n.Permission != permissionDeny {
		return nil, fmt.Errorf("filter permission %s is unknown; use ANY, ALLOW or DENY", permissionName(n.Permission))
	}
	if n.Principal != "" {
		if err := validatePrincipal(n.Principal); err != nil {
			return nil, fmt.Errorf("filter %w", err)
		}
	}
	if n.Host != "" {
		if err := validateHost(n.Host); err != nil {
			return nil, fmt.Errorf("filter %w", err)
		}
	}
	return n, nil
}

// Matches reports whether binding b is selected by filter f (Kafka's
// AclBindingFilter.matches). With PATTERN_MATCH the filter selects the
// bindings that would apply to its literal name: literal equal, literal
// "*", or prefixed bindings that are a prefix of the name. Any other
// pattern with a name selects bindings with exactly that name. UNKNOWN and
// "" count as "any" whether or not f was normalised; a nil f selects all.
func Matches(f, b *messages.AclBinding) bool {
	if b == nil {
		return false
	}
	if rt := f.GetResourceType(); !isAnyResource(rt) && rt != b.GetResourceType() {
		return false
	}
	if !matchesName(f, b) {
		return false
	}
	if p := f.GetPrincipal(); p != "" && p != b.GetPrincipal() {
		return false
	}
	if h := f.GetHost(); h != "" && h != hostOf(b) {
		return false
	}
	if op := f.GetOperation(); !isAnyOperation(op) && op != b.GetOperation() {
		return false
	}
	if p := f.GetPermission(); !isAnyPermission(p) && p != b.GetPermission() {
		return false
	}
	return true
}

func matchesName(f, b *messages.AclBinding) bool {
	fp, bp := f.GetPatternType(), b.GetPatternType()
	wantsMatch := fp == patternMatch
	if !isAnyPattern(fp) && !wantsMatch && fp != bp {
		return false
	}
	name := f.GetResourceName()
	if name == "" {
		return true
	}
	bname := nameOf(b)
	if !wantsMatch {
		return name == bname
	}
	switch bp {
	case patternLiteral:
		return name == bname || bname == wildcardResource
	case patternPrefixed:
		return strings.HasPrefix(name, bname)
	}
	return false
}

// hostOf and nameOf read a stored binding as Validate would normalise it.
func hostOf(b *messages.AclBinding) string {
	if b.GetHost() == "" {
		return wildcardHost
	}
	return b.GetHost()
}

func nameOf(b *messages.AclBinding) string {
	if b.GetResourceType() == resourceCluster && b.GetResourceName() == "" {
		return ClusterName
	}
	return b.GetResourceName()
}

func isAnyResource(rt messages.AclResourceType) bool {
	return rt == resourceAny || rt == messages.AclResourceType_ACL_RESOURCE_UNKNOWN
}

func isAnyPattern(p messages.AclPatternType) bool {
	return p == patternAny || p == messages.AclPatternType_ACL_PATTERN_UNKNOWN
}

func isAnyOperation(op messages.AclOperation) bool {
	return op == operationAny || op == messages.AclOperation_ACL_OPERATION_UNKNOWN
}

func isAnyPermission(p messages.AclPermission) bool {
	return p == permissionAny || p == messages.AclPermission_ACL_PERMISSION_UNKNOWN
}
