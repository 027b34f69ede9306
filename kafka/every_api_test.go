package kafka

import (
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Every API, at every version it serves, answers an empty request with a
// response of its own kind that decodes, in order, on a connection that
// stays open, even when every ask of the broker fails: no handler panics
// or leaves a request unanswered.
func TestEveryAPIAnswersAnEmptyRequest(t *testing.T) {
	_, addr := startServer(t, failingBroker, Config{})
	c := dial(t, addr)
	keys := make([]int16, 0, len(apis))
	for key := range apis {
		keys = append(keys, key)
	}
	slices.Sort(keys)
	id := int32(0)
	for _, key := range keys {
		a := apis[key]
		for v := a.versions.min; v <= a.versions.max; v++ {
			req := kmsg.RequestForKey(key)
			req.SetVersion(v)
			if p, ok := req.(*kmsg.ProduceRequest); ok {
				p.Acks = -1 // acks=0 is not answered
			}
			id++
			c.nc.SetDeadline(time.Now().Add(10 * time.Second))
			c.send(frameRequest(req, id))
			resp := req.ResponseKind()
			resp.SetVersion(v)
			got, err := c.read(resp)
			if err != nil || got != id {
				t.Fatalf("%s v%d: correlation %d (want %d), %v", kmsg.NameForKey(key), v, got, id, err)
			}
		}
	}
	t.Logf("%d requests over %d APIs answered", id, len(keys))
}
