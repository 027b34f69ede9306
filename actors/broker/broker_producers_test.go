package broker

import (
	"math"
	"testing"

	"github.com/sluicemq/sluice/messages"
)

// InitProducerId hands out new ids, and the next epoch of an id whose
// producer asks for it; a new id once the epochs are used up.
func TestInitProducerIDNewIDsAndEpochBumps(t *testing.T) {
	tb := startTestBroker(t, t.TempDir(), nil)
	init := func(req *messages.InitProducerIdRequest) *messages.InitProducerIdResponse {
		t.Helper()
		// The first request may find no controller elected yet.
		var r *messages.InitProducerIdResponse
		waitFor(t, "an InitProducerId answer", func() bool {
			r = tb.ask(req).(*messages.InitProducerIdResponse)
			return !r.Error.Retriable()
		})
		return r
	}
	first := init(&messages.InitProducerIdRequest{})
	second := init(&messages.InitProducerIdRequest{})
	if first.Error != messages.ErrorCode_NONE || first.ProducerId <= 0 || first.ProducerEpoch != 0 ||
		second.ProducerId <= 0 || second.ProducerId == first.ProducerId {
		t.Fatalf("new ids: %v, %v", first, second)
	}
	id := first.ProducerId
	for epoch := int32(0); epoch < 3; epoch++ {
		r := init(&messages.InitProducerIdRequest{ProducerId: id, ProducerEpoch: epoch})
		if r.Error != messages.ErrorCode_NONE || r.ProducerId != id || r.ProducerEpoch != epoch+1 {
			t.Fatalf("bump of %d epoch %d: %v", id, epoch, r)
		}
	}
	r := init(&messages.InitProducerIdRequest{ProducerId: id, ProducerEpoch: math.MaxInt16})
	if r.Error != messages.ErrorCode_NONE || r.ProducerId <= 0 || r.ProducerId == id || r.ProducerId == second.ProducerId || r.ProducerEpoch != 0 {
		t.Fatalf("bump of the last epoch: %v; want a new id at epoch 0", r)
	}
	r = init(&messages.InitProducerIdRequest{ProducerId: id, ProducerEpoch: -1})
	if r.Error != messages.ErrorCode_INVALID_REQUEST {
		t.Fatalf("bump of epoch -1: %v", r)
	}
}
