package client

import (
	"errors"

	"github.com/sluicemq/sluice/messages"
)

// Broker error codes, usable with errors.Is on any error this package returns.
var (
	ErrUnknownTopicOrPartition  error = messages.ErrorCode_UNKNOWN_TOPIC_OR_PARTITION
	ErrNotLeader                error = messages.ErrorCode_NOT_LEADER
	ErrOffsetOutOfRange         error = messages.ErrorCode_OFFSET_OUT_OF_RANGE
	ErrRecordTooLarge           error = messages.ErrorCode_RECORD_TOO_LARGE
	ErrCorruptRecord            error = messages.ErrorCode_CORRUPT_RECORD
	ErrInvalidRequest           error = messages.ErrorCode_INVALID_REQUEST
	ErrTopicAlreadyExists       error = messages.ErrorCode_TOPIC_ALREADY_EXISTS
	ErrNotEnoughReplicas        error = messages.ErrorCode_NOT_ENOUGH_REPLICAS
	ErrRequestTimedOut          error = messages.ErrorCode_REQUEST_TIMED_OUT
	ErrStorage                  error = messages.ErrorCode_STORAGE_ERROR
	ErrInvalidTopic             error = messages.ErrorCode_INVALID_TOPIC
	ErrInvalidPartitions        error = messages.ErrorCode_INVALID_PARTITIONS
	ErrInvalidReplicationFactor error = messages.ErrorCode_INVALID_REPLICATION_FACTOR
	ErrInvalidConfig            error = messages.ErrorCode_INVALID_CONFIG
	ErrInvalidRequiredAcks      error = messages.ErrorCode_INVALID_REQUIRED_ACKS
	ErrUnknownMessageType       error = messages.ErrorCode_UNKNOWN_MESSAGE_TYPE
	ErrFencedLeaderEpoch        error = messages.ErrorCode_FENCED_LEADER_EPOCH
	ErrLeaderNotAvailable       error = messages.ErrorCode_LEADER_NOT_AVAILABLE
	ErrBrokerNotAvailable       error = messages.ErrorCode_BROKER_NOT_AVAILABLE
	ErrNotController            error = messages.ErrorCode_NOT_CONTROLLER
	// ErrOutOfOrderSequence: the leader misses an earlier batch of this
	// idempotent producer. The producer handles it (resend in order, or a
	// new epoch); it shows only as the last error of a failed batch.
	ErrOutOfOrderSequence error = messages.ErrorCode_OUT_OF_ORDER_SEQUENCE
	// ErrProducerFenced: the leader has a newer epoch of this producer id.
	ErrProducerFenced error = messages.ErrorCode_PRODUCER_FENCED
	// Security: an ACL refused the request, or the broker refused the
	// client's certificate or token (or the client the broker's).
	ErrTopicAuthorizationFailed   error = messages.ErrorCode_TOPIC_AUTHORIZATION_FAILED
	ErrGroupAuthorizationFailed   error = messages.ErrorCode_GROUP_AUTHORIZATION_FAILED
	ErrClusterAuthorizationFailed error = messages.ErrorCode_CLUSTER_AUTHORIZATION_FAILED
	ErrAuthenticationFailed       error = messages.ErrorCode_SASL_AUTHENTICATION_FAILED
	ErrSecurityDisabled           error = messages.ErrorCode_SECURITY_DISABLED
	// Groups: DeleteGroup of a group with members, or of no group at all.
	ErrNonEmptyGroup   error = messages.ErrorCode_NON_EMPTY_GROUP
	ErrGroupIDNotFound error = messages.ErrorCode_GROUP_ID_NOT_FOUND
	// ErrGroupSubscribedToTopic: DeleteOffsets of a topic the group's
	// members consume.
	ErrGroupSubscribedToTopic error = messages.ErrorCode_GROUP_SUBSCRIBED_TO_TOPIC
	// ErrFencedInstanceID: another member joined with this member's
	// group instance id (static membership); this one is out for good.
	ErrFencedInstanceID error = messages.ErrorCode_FENCED_INSTANCE_ID
	// ErrOffsetMetadataTooLarge: a commit's metadata is longer than
	// actors' limit of 4,096 bytes (Kafka's offset.metadata.max.bytes).
	ErrOffsetMetadataTooLarge error = messages.ErrorCode_OFFSET_METADATA_TOO_LARGE
	// ErrGroupMaxSizeReached: the group has as many members as the broker
	// allows (--group-max-size).
	ErrGroupMaxSizeReached error = messages.ErrorCode_GROUP_MAX_SIZE_REACHED
)

// Client-side errors.
var (
	// ErrClosed is returned by calls on a closed client.
	ErrClosed = errors.New("client closed")
	// ErrNoBrokers is returned when no broker answered.
	ErrNoBrokers = errors.New("no broker reachable")
	// ErrNoCommittedOffset is reported in Fetches.Errors, once per
	// assignment, by a GroupConsumer with ConsumeResetOffset(NoResetOffset())
	// for each assigned partition the group has no committed offset for
	// (Kafka's auto.offset.reset=none). The partition is not consumed until
	// an offset is committed for it with CommitOffsets, which starts it there.
	ErrNoCommittedOffset = errors.New("no committed offset and no reset policy (auto offset reset none)")
)

// retriable reports whether err may go away when the request is sent again,
// possibly to another broker after a metadata refresh.
func retriable(err error) bool {
	var me *messages.Error
	if errors.As(err, &me) {
		return me.Code.Retriable()
	}
	var ce messages.ErrorCode
	if errors.As(err, &ce) {
		return ce.Retriable()
	}
	return false
}

// needsMetadata reports whether err means our idea of the leader is stale.
func needsMetadata(err error) bool {
	// A replica with a storage error has gone offline: leadership moves.
	for _, c := range []error{ErrNotLeader, ErrUnknownTopicOrPartition, ErrLeaderNotAvailable,
		ErrBrokerNotAvailable, ErrFencedLeaderEpoch, messages.ErrorCode_UNKNOWN_LEADER_EPOCH, ErrRequestTimedOut, ErrStorage} {
		if errors.Is(err, c) {
			return true
		}
	}
	return false
}
