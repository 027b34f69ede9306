package producerstate

import (
	"math"
	"testing"
)

func TestInitProducer(t *testing.T) {
	for _, tc := range []struct {
		id    int64
		epoch int32
		want  InitDecision
		err   bool
	}{
		{id: 0, epoch: 0, want: InitDecision{NewID: true}},   // no id yet
		{id: -1, epoch: -1, want: InitDecision{NewID: true}}, // Kafka's "none"
		{id: 7, epoch: 0, want: InitDecision{Epoch: 1}},
		{id: 7, epoch: 41, want: InitDecision{Epoch: 42}},
		{id: 7, epoch: math.MaxInt16 - 1, want: InitDecision{Epoch: math.MaxInt16}},
		{id: 7, epoch: math.MaxInt16, want: InitDecision{NewID: true}}, // epochs used up
		{id: 7, epoch: -1, err: true},
		{id: 7, epoch: math.MaxInt16 + 1, err: true},
	} {
		got, err := InitProducer(tc.id, tc.epoch)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("InitProducer(%d, %d) = %+v, %v; want %+v, error %v", tc.id, tc.epoch, got, err, tc.want, tc.err)
		}
	}
}

// A bumped epoch is what lets a producer go on after a lost batch: the leader
// accepts the new epoch from sequence 0 and fences the old one.
func TestBumpedEpochRestartsTheSequence(t *testing.T) {
	s := NewState(Config{})
	appendAll(t, s, 0, t0, batch(7, 0, 0, 2), batch(7, 0, 2, 2))
	// The batch at sequence 4 is lost for good: 6 can never be appended.
	wantOutcome(t, s, batch(7, 0, 6, 1), t0, OutOfOrderSequence)
	d, err := InitProducer(7, 0)
	if err != nil || d.NewID {
		t.Fatalf("InitProducer(7, 0) = %+v, %v", d, err)
	}
	appendAll(t, s, 4, t0, batch(7, d.Epoch, 0, 1), batch(7, d.Epoch, 1, 1))
	wantOutcome(t, s, batch(7, 0, 4, 1), t0, ProducerFenced)
}
