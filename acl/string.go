package acl

import (
	"fmt"

	"github.com/sluicemq/sluice/messages"
)

// String renders a binding as one line like kafka-acls.sh:
// `User:alice ALLOW READ topic:orders (literal) host=*`.
func String(b *messages.AclBinding) string {
	return fmt.Sprintf("%s %s %s %s:%s (%s) host=%s",
		orEmpty(b.GetPrincipal()), permissionName(b.GetPermission()), operationName(b.GetOperation()),
		resourceTypeName(b.GetResourceType()), orEmpty(b.GetResourceName()),
		patternName(b.GetPatternType()), orEmpty(b.GetHost()))
}
