package acl

import (
	"strings"

	"github.com/sluicemq/sluice/messages"
)

// The short names kafka-acls.sh prints, taken from the enum names so that
// they can never drift from the proto.

func operationName(op messages.AclOperation) string {
	return strings.TrimPrefix(op.String(), "ACL_OPERATION_")
}

func permissionName(p messages.AclPermission) string {
	return strings.TrimPrefix(p.String(), "ACL_PERMISSION_")
}

func resourceTypeName(rt messages.AclResourceType) string {
	return strings.ToLower(strings.TrimPrefix(rt.String(), "ACL_RESOURCE_"))
}

func patternName(p messages.AclPatternType) string {
	return strings.ToLower(strings.TrimPrefix(p.String(), "ACL_PATTERN_"))
}

// orEmpty shows an empty field (a filter's "any") visibly.
func orEmpty(s string) string {
	if s == "" {
		return `""`
	}
	return s
}
