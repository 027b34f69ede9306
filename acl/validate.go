package acl

import (
	"errors"
	"fmt"
	"strings"

	"github.com/sluicemq/sluice/messages"
)

// ClusterName is the one resource name of ACL_RESOURCE_CLUSTER (Kafka's "kafka-cluster").
const ClusterName = "kafka-cluster"

// wildcardHost is the only host a binding may name: every host.
const wildcardHost = "*"

// wildcardResource as a literal binding's name matches every resource of its type.
const wildcardResource = "*"

// Validate checks a binding a user asks to create and returns a normalised
// copy (host "" becomes "*"; cluster resource name "" becomes ClusterName),
// or an error saying what is wrong.
func Validate(b *messages.AclBinding) (*messages.AclBinding, error) {
	if b == nil {
		return nil, errors.New("acl binding is missing")
	}
	n := normalise(b)
	if err := validateResource(n); err != nil {
		return nil, err
	}
	if err := validatePrincipal(n.GetPrincipal()); err != nil {
		return nil, err
	}
	if err := validateHost(n.GetHost()); err != nil {
		return nil, err
	}
	if err := validateOperation(n.GetResourceType(), n.GetOperation()); err != nil {
		return nil, err
	}
	if p := n.GetPermission(); p != permissionAllow && p != permissionDeny {
		return nil, fmt.Errorf("permission %s is not allowed in an ACL binding; use ALLOW or DENY", permissionName(p))
	}
	return n, nil
}

// normalise returns a copy of b with the defaults a user may leave out
// filled in: host "*" and, for the cluster, its one name.
func normalise(b *messages.AclBinding) *messages.AclBinding {
	n := clone(b)
	if n.Host == "" {
		n.Host = wildcardHost
	}
	if n.ResourceType == resourceCluster && n.ResourceName == "" {
		n.ResourceName = ClusterName
	}
	return n
}

func validateResource(b *messages.AclBinding) error {
	rt, name, pattern := b.GetResourceType(), b.GetResourceName(), b.GetPatternType()
	if _, ok := operationsOf[rt]; !ok {
		return fmt.Errorf("resource type %s is not allowed in an ACL binding; use topic, group or cluster", resourceTypeName(rt))
	}
	if pattern != patternLiteral && pattern != patternPrefixed {
		return fmt.Errorf("pattern type %s is not allowed in an ACL binding; use literal or prefixed", patternName(pattern))
	}
	if rt == resourceCluster {
		if pattern != patternLiteral {
			return fmt.Errorf("a cluster ACL must be literal, not %s", patternName(pattern))
		}
		if name != ClusterName {
			return fmt.Errorf("cluster resource name %q is not allowed; the cluster is named %q", name, ClusterName)
		}
		return nil
	}
	if name == "" {
		return fmt.Errorf("%s ACL has an empty resource name; name a %s, a prefix, or \"*\" for every %s",
			resourceTypeName(rt), resourceTypeName(rt), resourceTypeName(rt))
	}
	return nil
}

func validateHost(host string) error {
	if host != wildcardHost {
		return fmt.Errorf("host %q is not supported; only \"*\" (every host) is", host)
	}
	return nil
}

func validateOperation(rt messages.AclResourceType, op messages.AclOperation) error {
	if validOperationFor(rt, op) {
		return nil
	}
	names := make([]string, 0, len(operationsOf[rt]))
	for _, o := range operationsOf[rt] {
		names = append(names, operationName(o))
	}
	return fmt.Errorf("operation %s is not allowed on a %s; use one of %s",
		operationName(op), resourceTypeName(rt), strings.Join(names, ", "))
}

// clone copies the fields of b (never the proto's internal state).
func clone(b *messages.AclBinding) *messages.AclBinding {
	return &messages.AclBinding{
		ResourceType: b.GetResourceType(),
		ResourceName: b.GetResourceName(),
		PatternType:  b.GetPatternType(),
		Principal:    b.GetPrincipal(),
		Host:         b.GetHost(),
		Operation:    b.GetOperation(),
		Permission:   b.GetPermission(),
	}
}
