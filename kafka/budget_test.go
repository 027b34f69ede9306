package kafka

import (
	"bytes"
	"crypto/rand"
	"testing"
	"testing/iotest"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/internal/budget"
)

// A frame read in pieces, small or larger than the first allocation, comes
// out whole; one cut short is an error.
func TestReadBodyInPieces(t *testing.T) {
	for _, n := range []int{0, 10, firstRead, 3*firstRead + 17} {
		want := make([]byte, n)
		rand.Read(want)
		got, err := readBody(iotest.HalfReader(bytes.NewReader(want)), n)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%d bytes: %v, equal %v", n, err, bytes.Equal(got, want))
		}
		if n > 0 {
			if _, err := readBody(bytes.NewReader(want[:n-1]), n); err == nil {
				t.Fatalf("%d bytes cut by one: no error", n)
			}
		}
	}
}

// A connection reads its next frame only when the budget has room: with a
// budget of one byte, the second request waits until the first one's
// answer is written, and nothing stays counted once both are.
func TestNextFrameWaitsForTheBudget(t *testing.T) {
	b := budget.New(1, 1)
	fb := &fakeBroker{md: testMetadata(), delays: []time.Duration{300 * time.Millisecond}}
	_, addr := startServer(t, fb, Config{Budget: b})
	c := dial(t, addr)
	for corr := range int32(2) {
		req := kmsg.NewPtrMetadataRequest()
		req.SetVersion(4)
		c.send(frameRequest(req, corr))
	}
	for want := range int32(2) {
		resp := kmsg.NewPtrMetadataResponse()
		resp.SetVersion(4)
		if corr, err := c.read(resp); err != nil || corr != want {
			t.Fatalf("answer %d: correlation %d, %v", want, corr, err)
		}
	}
	if b.Waits() == 0 {
		t.Errorf("the second request did not wait for the budget")
	}
	fb.mu.Lock()
	calls := len(fb.calls)
	fb.mu.Unlock()
	if calls != 2 {
		t.Errorf("%d calls reached the broker, want 2", calls)
	}
	deadline := time.Now().Add(5 * time.Second)
	for b.Used() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d bytes still counted after both answers were written", b.Used())
		}
		time.Sleep(5 * time.Millisecond)
	}
}
