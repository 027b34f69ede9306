package kafka

import "github.com/sluicemq/sluice/messages"

// Kafka error codes that Sluice's table does not have.
const (
	errUnsupportedVersion int16 = 35
	errUnknownServerError int16 = -1
	errUnknownTopicID     int16 = 100
)

// kafkaCode is the Kafka error code of a Sluice one. Sluice's codes are
// Kafka's where Kafka has the error; its own (1000 and up) have no Kafka
// meaning and answer UNKNOWN_SERVER_ERROR.
func kafkaCode(c messages.ErrorCode) int16 {
	if c >= 1000 {
		return errUnknownServerError
	}
	return int16(c)
}
