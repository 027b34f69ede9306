package kafka

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/messages"
)

// Each handler asks the broker actor and waits for an answer of one type;
// these turn what came instead into the Kafka error code to answer with.

// errorOf waits for a group answer of type T and returns its Kafka error
// code (REQUEST_TIMED_OUT when none came).
func errorOf[T any](answer Answer, code func(T) messages.ErrorCode) int16 {
	m, failed := answerAs[T](answer)
	if failed != 0 {
		return failed
	}
	return kafkaCode(code(m))
}

// answerAs waits for answer and returns it as a T, or else the Kafka code
// of what came instead (REQUEST_TIMED_OUT when nothing came in time).
func answerAs[T any](answer Answer) (T, int16) {
	var zero T
	res, err := answer.Wait()
	if err != nil {
		return zero, int16(messages.ErrorCode_REQUEST_TIMED_OUT)
	}
	m, ok := res.(T)
	if !ok {
		return zero, errorCodeOf(res)
	}
	return m, 0
}

// errorCodeOf is the Kafka code of an answer that is not the one expected
// (an ErrorResponse, say).
func errorCodeOf(res any) int16 {
	if er, ok := res.(*messages.ErrorResponse); ok {
		return kafkaCode(er.Error)
	}
	return errUnknownServerError
}

// answered is an answer with a top-level error code and text.
type answered interface {
	GetError() messages.ErrorCode
	GetErrorMessage() string
}

// answerWithError waits for answer as a T and returns it with the Kafka
// code of the whole request (the failed ask's, else the answer's own) and
// its text (nil: none).
func answerWithError[T answered](answer Answer) (T, int16, *string) {
	m, code := answerAs[T](answer)
	if code != 0 {
		return m, code, nil
	}
	var text *string
	if m.GetErrorMessage() != "" {
		text = kmsg.StringPtr(m.GetErrorMessage())
	}
	return m, kafkaCode(m.GetError()), text
}
