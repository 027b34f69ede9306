package acl

import "github.com/sluicemq/sluice/messages"

const (
	opAll             = messages.AclOperation_ACL_OPERATION_ALL
	opRead            = messages.AclOperation_ACL_OPERATION_READ
	opWrite           = messages.AclOperation_ACL_OPERATION_WRITE
	opCreate          = messages.AclOperation_ACL_OPERATION_CREATE
	opDelete          = messages.AclOperation_ACL_OPERATION_DELETE
	opAlter           = messages.AclOperation_ACL_OPERATION_ALTER
	opDescribe        = messages.AclOperation_ACL_OPERATION_DESCRIBE
	opClusterAction   = messages.AclOperation_ACL_OPERATION_CLUSTER_ACTION
	opDescribeConfigs = messages.AclOperation_ACL_OPERATION_DESCRIBE_CONFIGS
	opAlterConfigs    = messages.AclOperation_ACL_OPERATION_ALTER_CONFIGS
	opIdempotentWrite = messages.AclOperation_ACL_OPERATION_IDEMPOTENT_WRITE

	resourceTopic   = messages.AclResourceType_ACL_RESOURCE_TOPIC
	resourceGroup   = messages.AclResourceType_ACL_RESOURCE_GROUP
	resourceCluster = messages.AclResourceType_ACL_RESOURCE_CLUSTER

	patternLiteral  = messages.AclPatternType_ACL_PATTERN_LITERAL
	patternPrefixed = messages.AclPatternType_ACL_PATTERN_PREFIXED
	patternMatch    = messages.AclPatternType_ACL_PATTERN_MATCH

	permissionAllow = messages.AclPermission_ACL_PERMISSION_ALLOW
	permissionDeny  = messages.AclPermission_ACL_PERMISSION_DENY
)

// operationsOf lists, in Kafka's order, the operations a binding on each
// resource type may name; the ones Kafka's requests never check on that
// type are left out so that a binding cannot silently do nothing.
var operationsOf = map[messages.AclResourceType][]messages.AclOperation{
	resourceTopic: {opRead, opWrite, opCreate, opDelete, opAlter, opDescribe,
		opDescribeConfigs, opAlterConfigs, opAll},
	resourceGroup: {opRead, opDescribe, opDelete, opAll},
	resourceCluster: {opCreate, opAlter, opDescribe, opClusterAction,
		opDescribeConfigs, opAlterConfigs, opIdempotentWrite, opAll},
}

func validOperationFor(rt messages.AclResourceType, op messages.AclOperation) bool {
	for _, o := range operationsOf[rt] {
		if o == op {
			return true
		}
	}
	return false
}

// grants reports whether an ALLOW binding of operation granted allows op.
// As in Kafka, being able to read, write, delete or alter a resource lets
// one describe it, and altering configs lets one describe them.
func grants(granted, op messages.AclOperation) bool {
	if granted == op || granted == opAll {
		return true
	}
	switch op {
	case opDescribe:
		return granted == opRead || granted == opWrite || granted == opDelete || granted == opAlter
	case opDescribeConfigs:
		return granted == opAlterConfigs
	}
	return false
}

// denies reports whether a DENY binding of operation denied denies op:
// only the same operation or ALL, never by implication.
func denies(denied, op messages.AclOperation) bool {
	return denied == op || denied == opAll
}

// askable reports whether op is an operation a request can be checked for;
// UNKNOWN, ANY and numbers outside the enum are not.
func askable(op messages.AclOperation) bool {
	return op >= opAll && op <= opIdempotentWrite
}
