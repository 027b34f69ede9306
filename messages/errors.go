package messages

import "fmt"

// ErrorInfo describes one error code: its name, whether a client may retry
// the request that produced it, and what it means.
type ErrorInfo struct {
	Code        ErrorCode
	Retriable   bool
	Description string
}

// errorTable is the one table of error meanings. Codes missing here are
// treated as non-retriable with their enum name as description.
var errorTable = map[ErrorCode]ErrorInfo{
	ErrorCode_UNKNOWN_SERVER_ERROR:             {Retriable: false, Description: "the broker hit an unexpected error"},
	ErrorCode_UNKNOWN_TOPIC_OR_PARTITION:       {Retriable: true, Description: "the topic or partition does not exist on this broker"},
	ErrorCode_NOT_LEADER:                       {Retriable: true, Description: "this broker is not the leader of the partition"},
	ErrorCode_OFFSET_OUT_OF_RANGE:              {Retriable: false, Description: "the requested offset is outside the partition's log"},
	ErrorCode_RECORD_TOO_LARGE:                 {Retriable: false, Description: "the record batch is larger than max.message.bytes"},
	ErrorCode_CORRUPT_RECORD:                   {Retriable: false, Description: "the record batch failed its CRC or layout check"},
	ErrorCode_INVALID_REQUEST:                  {Retriable: false, Description: "the request is malformed"},
	ErrorCode_TOPIC_ALREADY_EXISTS:             {Retriable: false, Description: "a topic with this name already exists"},
	ErrorCode_NOT_ENOUGH_REPLICAS:              {Retriable: true, Description: "fewer in-sync replicas than min.insync.replicas; nothing was written"},
	ErrorCode_NOT_ENOUGH_REPLICAS_AFTER_APPEND: {Retriable: true, Description: "written by the leader, but the in-sync set shrank below min.insync.replicas before it was replicated"},
	ErrorCode_REQUEST_TIMED_OUT:                {Retriable: true, Description: "the request did not complete in time"},
	ErrorCode_STORAGE_ERROR:                    {Retriable: true, Description: "the partition's storage failed on this broker"},
	ErrorCode_INVALID_TOPIC:                    {Retriable: false, Description: "the topic name is not valid"},
	ErrorCode_INVALID_PARTITIONS:               {Retriable: false, Description: "the partition count is not valid"},
	ErrorCode_INVALID_REPLICATION_FACTOR:       {Retriable: false, Description: "the replication factor is not valid or exceeds the live brokers"},
	ErrorCode_INVALID_CONFIG:                   {Retriable: false, Description: "a topic or request configuration value is not valid"},
	ErrorCode_INVALID_REQUIRED_ACKS:            {Retriable: false, Description: "acks must be 0, 1 or -1 (all)"},
	ErrorCode_UNKNOWN_MESSAGE_TYPE:             {Retriable: false, Description: "the receiver does not know this message type"},
	ErrorCode_FENCED_LEADER_EPOCH:              {Retriable: true, Description: "the request carried a leader epoch older than the current one"},
	ErrorCode_UNKNOWN_LEADER_EPOCH:             {Retriable: true, Description: "the request carried a leader epoch newer than this broker knows"},
	ErrorCode_STALE_CONTROLLER_EPOCH:           {Retriable: false, Description: "the request came from a controller that has been replaced"},
	ErrorCode_NOT_CONTROLLER:                   {Retriable: true, Description: "this broker is not the controller"},
	ErrorCode_LEADER_NOT_AVAILABLE:             {Retriable: true, Description: "the partition has no leader right now"},
	ErrorCode_BROKER_NOT_AVAILABLE:             {Retriable: true, Description: "the broker is not reachable"},
	ErrorCode_INVALID_PARTITION_EPOCH:          {Retriable: true, Description: "the proposal was based on an outdated partition state"},
	ErrorCode_COORDINATOR_NOT_AVAILABLE:        {Retriable: true, Description: "the group coordinator is not available yet"},
	ErrorCode_NOT_COORDINATOR:                  {Retriable: true, Description: "this broker is not the group's coordinator"},
	ErrorCode_ILLEGAL_GENERATION:               {Retriable: false, Description: "the member's generation is not the group's current one"},
	ErrorCode_UNKNOWN_MEMBER_ID:                {Retriable: false, Description: "the group does not know this member"},
	ErrorCode_REBALANCE_IN_PROGRESS:            {Retriable: false, Description: "the group is rebalancing; rejoin"},
	ErrorCode_INVALID_SESSION_TIMEOUT:          {Retriable: false, Description: "the session timeout is outside the broker's limits"},
	ErrorCode_INCONSISTENT_GROUP_PROTOCOL:      {Retriable: false, Description: "the member's assignors share none with the group"},
	ErrorCode_GROUP_ID_NOT_FOUND:               {Retriable: false, Description: "the group does not exist"},
	ErrorCode_NON_EMPTY_GROUP:                  {Retriable: false, Description: "the group still has members"},
	ErrorCode_OUT_OF_ORDER_SEQUENCE:            {Retriable: false, Description: "the producer's sequence number skipped ahead of the broker's"},
	ErrorCode_PRODUCER_FENCED:                  {Retriable: false, Description: "a newer epoch of this producer id exists"},
	ErrorCode_UNKNOWN_PRODUCER_ID:              {Retriable: false, Description: "the broker has no state for this producer id"},
	ErrorCode_INVALID_OFFSET:                   {Retriable: false, Description: "the offset is not valid"},
	ErrorCode_MEMBER_ID_REQUIRED:               {Retriable: true, Description: "the member must rejoin with the member id it was given"},
	ErrorCode_FENCED_INSTANCE_ID:               {Retriable: false, Description: "another member joined with this member's group instance id"},
	ErrorCode_GROUP_SUBSCRIBED_TO_TOPIC:        {Retriable: false, Description: "the group's members consume this topic, so its offsets stay"},
	ErrorCode_CLUSTER_AUTHORIZATION_FAILED:     {Retriable: false, Description: "the principal is not allowed this operation on the cluster (or may not send this control or replication message)"},
	ErrorCode_INCONSISTENT_CLUSTER_ID:          {Retriable: false, Description: "the metadata store is not the one of this broker's cluster"},
	ErrorCode_ELECTION_NOT_NEEDED:              {Retriable: false, Description: "the preferred replica leads the partition already"},
	ErrorCode_PREFERRED_LEADER_NOT_AVAILABLE:   {Retriable: true, Description: "the preferred replica is not alive and in sync, so it cannot lead"},
	ErrorCode_STALE_BROKER_EPOCH:               {Retriable: false, Description: "the request came from an earlier run of the broker"},
	ErrorCode_TOPIC_AUTHORIZATION_FAILED:       {Retriable: false, Description: "the principal is not allowed this operation on the topic"},
	ErrorCode_GROUP_AUTHORIZATION_FAILED:       {Retriable: false, Description: "the principal is not allowed this operation on the group"},
	ErrorCode_SASL_AUTHENTICATION_FAILED:       {Retriable: false, Description: "the broker did not accept the connection's certificate or token"},
	ErrorCode_RESOURCE_NOT_FOUND:               {Retriable: false, Description: "the named user or ACL does not exist"},
	ErrorCode_DUPLICATE_RESOURCE:               {Retriable: false, Description: "a user with this name already exists"},
	ErrorCode_SECURITY_DISABLED:                {Retriable: false, Description: "ACLs and users need a broker running with TLS"},
	ErrorCode_OFFSET_METADATA_TOO_LARGE:        {Retriable: false, Description: "an offset commit's metadata is longer than 4,096 bytes"},
	ErrorCode_GROUP_MAX_SIZE_REACHED:           {Retriable: false, Description: "the group has as many members as it may (--group-max-size)"},
	ErrorCode_FENCED_MEMBER_EPOCH:              {Retriable: false, Description: "the member's epoch is not the group's view of it; it must rejoin"},
	ErrorCode_UNRELEASED_INSTANCE_ID:           {Retriable: false, Description: "the instance id is held by a member that has not left"},
	ErrorCode_UNSUPPORTED_ASSIGNOR:             {Retriable: false, Description: "the coordinator has no such server assignor (uniform, range)"},
	ErrorCode_STALE_MEMBER_EPOCH:               {Retriable: false, Description: "the member has left that epoch and did not hold the partition then"},
	ErrorCode_INVALID_REGULAR_EXPRESSION:       {Retriable: false, Description: "the subscription's regular expression does not compile"},
}

// Info returns the table entry of c.
func (c ErrorCode) Info() ErrorInfo {
	info, ok := errorTable[c]
	if !ok {
		info = ErrorInfo{Description: c.String()}
	}
	info.Code = c
	return info
}

// Retriable reports whether a request that failed with c may succeed when
// sent again (possibly after refreshing metadata).
func (c ErrorCode) Retriable() bool { return errorTable[c].Retriable }

// Error is a non-NONE error code returned by a broker, with the broker's
// message. Compare with errors.Is against a code: errors.Is(err, messages.ErrorCode_NOT_LEADER).
type Error struct {
	Code    ErrorCode
	Message string
}

func (e *Error) Error() string {
	if e.Message == "" {
		return fmt.Sprintf("%s: %s", e.Code, e.Code.Info().Description)
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Message)
}

// Is makes errors.Is(err, code) true for an *Error carrying code.
func (e *Error) Is(target error) bool {
	c, ok := target.(ErrorCode)
	return ok && c == e.Code
}

// Error makes an ErrorCode usable as an error target for errors.Is.
func (c ErrorCode) Error() string { return c.String() }

// Err returns nil for NONE and an *Error otherwise.
func (c ErrorCode) Err(message string) error {
	if c == ErrorCode_NONE {
		return nil
	}
	return &Error{Code: c, Message: message}
}
