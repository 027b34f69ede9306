package replica

import (
	"testing"

	"github.com/sluicemq/sluice/messages"
)

func TestCheckEpoch(t *testing.T) {
	for _, tc := range []struct {
		epoch int32
		want  messages.ErrorCode
	}{{-1, messages.ErrorCode_NONE}, {5, messages.ErrorCode_NONE}, {4, messages.ErrorCode_FENCED_LEADER_EPOCH}, {6, messages.ErrorCode_UNKNOWN_LEADER_EPOCH}} {
		if got, _ := CheckEpoch(tc.epoch, 5); got != tc.want {
			t.Errorf("epoch %d against 5: %v, want %v", tc.epoch, got, tc.want)
		}
	}
}

func TestCheckFetch(t *testing.T) {
	for _, tc := range []struct {
		name        string
		req         *messages.FetchRequest
		fromNetwork bool
		ok          bool
	}{
		{"plain", &messages.FetchRequest{MaxBytes: 10, MinBytes: 1, MaxWaitMs: 500}, true, true},
		{"negative max bytes", &messages.FetchRequest{MaxBytes: -1}, true, false},
		{"negative min bytes", &messages.FetchRequest{MinBytes: -1}, false, false},
		{"negative wait", &messages.FetchRequest{MaxWaitMs: -1}, false, false},
		{"log end isolation in the process", &messages.FetchRequest{Isolation: IsolationLogEnd}, false, true},
		{"log end isolation from the network", &messages.FetchRequest{Isolation: IsolationLogEnd}, true, false},
		{"an unknown isolation", &messages.FetchRequest{Isolation: 7}, false, false},
	} {
		code, why := CheckFetch(tc.req, tc.fromNetwork)
		if (code == messages.ErrorCode_NONE) != tc.ok || (!tc.ok && (code != messages.ErrorCode_INVALID_REQUEST || why == "")) {
			t.Errorf("%s: %v %q", tc.name, code, why)
		}
	}
}

func TestPlanFetch(t *testing.T) {
	b := LogBounds{Start: 10, End: 100, Durable: 90, HW: 80}
	for _, tc := range []struct {
		name string
		req  *messages.FetchRequest
		want FetchPlan
	}{
		{"below the log start", &messages.FetchRequest{Offset: 9}, FetchPlan{Code: messages.ErrorCode_OFFSET_OUT_OF_RANGE}},
		{"past the log end", &messages.FetchRequest{Offset: 101}, FetchPlan{Code: messages.ErrorCode_OFFSET_OUT_OF_RANGE}},
		{"below the HW", &messages.FetchRequest{Offset: 50, MaxBytes: 100}, FetchPlan{Read: true, Limit: 80, MaxBytes: 100}},
		{"no max bytes: the broker's cap", &messages.FetchRequest{Offset: 50}, FetchPlan{Read: true, Limit: 80, MaxBytes: 1000}},
		{"above the cap", &messages.FetchRequest{Offset: 50, MaxBytes: 5000}, FetchPlan{Read: true, Limit: 80, MaxBytes: 1000}},
		{"at the HW: nothing yet", &messages.FetchRequest{Offset: 80}, FetchPlan{Limit: 80, NothingYet: true}},
		{"at the log end, which is allowed", &messages.FetchRequest{Offset: 100}, FetchPlan{Limit: 80, NothingYet: true}},
		{"log end isolation reads to the durable end", &messages.FetchRequest{Offset: 80, Isolation: IsolationLogEnd},
			FetchPlan{Read: true, Limit: 90, MaxBytes: 1000}},
		{"offsets only", &messages.FetchRequest{Offset: 50, OffsetsOnly: true}, FetchPlan{Limit: 80}},
	} {
		got := PlanFetch(tc.req, b, 1000)
		got.Reason = ""
		if got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
	// The HW never lets a consumer past what every in-sync replica has,
	// even when more is durable here.
	for off := b.Start; off <= b.End; off++ {
		if p := PlanFetch(&messages.FetchRequest{Offset: off}, b, 1000); p.Read && p.Limit > b.HW {
			t.Fatalf("offset %d reads below %d, past the HW %d", off, p.Limit, b.HW)
		}
	}
}

func TestFetchReady(t *testing.T) {
	read := FetchPlan{Read: true, Limit: 80, MaxBytes: 1000}
	for _, tc := range []struct {
		name     string
		minBytes int32
		plan     FetchPlan
		size     int
		must     bool
		want     bool
	}{
		{"an error", 0, FetchPlan{Code: messages.ErrorCode_OFFSET_OUT_OF_RANGE}, 0, false, true},
		{"offsets only", 0, FetchPlan{Limit: 80}, 0, false, true},
		{"nothing yet", 0, FetchPlan{Limit: 80, NothingYet: true}, 0, false, false},
		{"nothing yet, must answer", 0, FetchPlan{Limit: 80, NothingYet: true}, 0, true, true},
		{"some data, no min bytes", 0, read, 1, false, true},
		{"less than min bytes", 100, read, 99, false, false},
		{"min bytes", 100, read, 100, false, true},
		{"less than min bytes, must answer", 100, read, 1, true, true},
	} {
		if got := FetchReady(&messages.FetchRequest{MinBytes: tc.minBytes}, tc.plan, tc.size, tc.must); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestFollowerFetchParking(t *testing.T) {
	if !FollowerFetchWaits(0, messages.ErrorCode_NONE, 500) {
		t.Error("an empty fetch that may wait is answered")
	}
	for _, tc := range []struct {
		batches int
		code    messages.ErrorCode
		wait    int32
	}{{1, messages.ErrorCode_NONE, 500}, {0, messages.ErrorCode_NOT_LEADER, 500}, {0, messages.ErrorCode_NONE, 0}} {
		if FollowerFetchWaits(tc.batches, tc.code, tc.wait) {
			t.Errorf("%d batches, %v, wait %d: parked", tc.batches, tc.code, tc.wait)
		}
	}
	for _, tc := range []struct {
		durable, hw int64
		want        bool
	}{{10, 5, false}, {11, 5, true}, {10, 6, true}} {
		if got := FollowerFetchNews(10, 5, tc.durable, tc.hw); got != tc.want {
			t.Errorf("parked at 10 with HW 5, durable %d HW %d: news %v", tc.durable, tc.hw, got)
		}
	}
}
