package producerstate

import (
	"fmt"
	"math"
)

// InitDecision is the answer to an InitProducerId request.
type InitDecision struct {
	// NewID: hand out a new producer id (at epoch 0). Otherwise the producer
	// keeps its id at Epoch.
	NewID bool
	Epoch int16
}

// InitProducer decides an InitProducerId request (KIP-360). A producer id of 0
// or less (ids start at 1) asks for a new id. A producer id with its current
// epoch asks for the next epoch: a producer whose numbered batch failed for
// good cannot close the gap in that partition's sequence, so it restarts the
// partition at sequence 0 under epoch+1, which every leader accepts (Check)
// and which fences the batches of the older epoch. Once the epoch space is used
// up (math.MaxInt16) the producer gets a new id instead, as in Kafka.
//
// No state is checked: a non-transactional producer id belongs to one client,
// which alone knows its current epoch.
func InitProducer(producerID int64, epoch int32) (InitDecision, error) {
	switch {
	case producerID <= 0:
		return InitDecision{NewID: true}, nil
	case epoch < 0 || epoch > math.MaxInt16:
		return InitDecision{}, fmt.Errorf("producer %d: epoch %d is outside [0, %d]", producerID, epoch, math.MaxInt16)
	case epoch == math.MaxInt16:
		return InitDecision{NewID: true}, nil
	}
	return InitDecision{Epoch: int16(epoch) + 1}, nil
}
