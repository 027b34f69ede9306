package replica

import (
	"testing"

	"github.com/sluicemq/sluice/actors/producerstate"
	"github.com/sluicemq/sluice/messages"
	"github.com/sluicemq/sluice/messages/record"
)

func header(producer int64, epoch int16, seq, count int32) record.Header {
	return record.Header{ProducerID: producer, ProducerEpoch: epoch, BaseSequence: seq, RecordCount: count}
}

func TestCommit(t *testing.T) {
	st := producerstate.NewState(producerstate.Config{})
	plain := header(-1, -1, -1, 3)
	// One group: two plain batches around a producer's batches 0 and 1;
	// batch 1 is checked as if batch 0 were written.
	got := Commit(st.Begin(), []record.Header{plain, header(7, 0, 0, 2), header(7, 0, 2, 2), plain}, 100, t0)
	want := []Outcome{{Base: 100, Next: 103, Appended: true}, {Base: 103, Next: 105, Appended: true},
		{Base: 105, Next: 107, Appended: true}, {Base: 107, Next: 110, Appended: true}}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("first group: outcome %d is %+v, want %+v", i, got[i], want[i])
		}
	}
	// Nothing is recorded until the caller commits: the same batches are
	// new again.
	again := Commit(st.Begin(), []record.Header{header(7, 0, 0, 2)}, 110, t0)
	if !again[0].Appended {
		t.Fatalf("an uncommitted check was recorded: %+v", again[0])
	}
	p := st.Begin()
	Commit(p, []record.Header{header(7, 0, 0, 2), header(7, 0, 2, 2)}, 103, t0)
	p.Commit()

	for _, tc := range []struct {
		name string
		h    record.Header
		want Outcome
	}{
		{"a retry answered with the original offsets", header(7, 0, 2, 2), Outcome{Base: 105, Next: 107}},
		{"a gap in the sequence", header(7, 0, 9, 1), Outcome{Code: messages.ErrorCode_OUT_OF_ORDER_SEQUENCE}},
		{"an invalid epoch", header(7, -1, 0, 1), Outcome{Code: messages.ErrorCode_CORRUPT_RECORD}},
		{"the next batch", header(7, 0, 4, 1), Outcome{Base: 200, Next: 201, Appended: true}},
	} {
		got := Commit(st.Begin(), []record.Header{tc.h}, 200, t0)[0]
		got.Text = ""
		if got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
		if got.Duplicate() != (tc.want.Code == messages.ErrorCode_NONE && !tc.want.Appended) {
			t.Errorf("%s: Duplicate() is %v", tc.name, got.Duplicate())
		}
	}
	// A newer epoch fences the old one.
	p = st.Begin()
	if o := Commit(p, []record.Header{header(7, 1, 0, 1)}, 300, t0)[0]; !o.Appended {
		t.Fatalf("a new epoch at sequence 0: %+v", o)
	}
	p.Commit()
	if o := Commit(st.Begin(), []record.Header{header(7, 0, 4, 1)}, 301, t0)[0]; o.Code != messages.ErrorCode_PRODUCER_FENCED {
		t.Fatalf("the old epoch after a new one: %+v, want PRODUCER_FENCED", o)
	}
}
