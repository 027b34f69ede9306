// Package acl is Kafka-style authorization as plain, deterministic Go: the
// decision whether a principal may perform an operation on a topic, group
// or the cluster, the checks a new ACL binding or a describe/delete filter
// must pass, the changes the controller makes to the stored
// SecurityRecord, and the bearer tokens users authenticate with.
//
// It follows Kafka's StandardAuthorizer with
// allow.everyone.if.no.acl.found=false:
//   - super users may do everything;
//   - a matching DENY binding always wins;
//   - otherwise a matching ALLOW binding is needed, where ALLOW of READ,
//     WRITE, DELETE or ALTER implies DESCRIBE and ALLOW of ALTER_CONFIGS
//     implies DESCRIBE_CONFIGS (implication never applies to DENY);
//   - with no matching binding the answer is no.
//
// A binding's principal "User:*" matches every User (and "Broker:*" every
// Broker). Only the host "*" is supported. Nothing here does I/O, reads a
// clock or keeps state beyond what it is given: the controller builds a new
// Authorizer from each SecurityRecord it stores.
//
//	a := acl.New(rec.GetAcls(), []string{"User:admin"})
//	if !a.Authorize("User:alice", messages.AclOperation_ACL_OPERATION_READ,
//		messages.AclResourceType_ACL_RESOURCE_TOPIC, "orders") {
//		// answer TOPIC_AUTHORIZATION_FAILED
//	}
//
//	next, created, err := acl.AddACLs(rec, req.GetAcls()) // store next with check-and-set
package acl
