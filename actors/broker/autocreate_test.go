package broker

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sluicemq/sluice/actors"
	"github.com/sluicemq/sluice/messages"
)

func TestAutoCreateLimit(t *testing.T) {
	var l autoCreateLimit
	now := time.Unix(1000, 0)
	asked := 0
	for i := range 50 {
		if ask, _ := l.allow(fmt.Sprint("t", i), asked, now); ask {
			asked++
		}
	}
	if asked != autoCreatePerRequest {
		t.Fatalf("one request asked for %d topics, want %d", asked, autoCreatePerRequest)
	}
	if ask, creating := l.allow("t0", 0, now.Add(time.Second)); ask || !creating {
		t.Fatalf("a name asked for a second ago: ask %v creating %v", ask, creating)
	}
	// Requests of one name each drain the burst, then the rate refills it.
	total := asked
	for i := range 1000 {
		if ask, _ := l.allow(fmt.Sprint("u", i), 0, now); ask {
			total++
		}
	}
	if total != int(autoCreateBurst) {
		t.Fatalf("%d topics asked for at once, want the burst of %d", total, int(autoCreateBurst))
	}
	if ask, _ := l.allow("later", 0, now.Add(time.Second)); !ask {
		t.Fatal("a second later nothing may be asked for")
	}
	// A name whose creation failed is asked for again at once.
	l.forget("later")
	if ask, _ := l.allow("later", 0, now.Add(time.Second)); !ask {
		t.Fatal("a name whose creation failed is not asked for again")
	}
}

// One metadata request naming 5,000 unknown topics creates a few of them.
// Asked before the broker has a controller (it has just started), none
// is taken as being created: the request is answered retriably and the
// retry, as a client's, creates them.
func TestAutoCreateBoundedPerRequest(t *testing.T) {
	tb := startTestBroker(t, t.TempDir(), func(c *actors.BrokerConfig) { c.AutoCreateTopics = true })
	// Once the controller can place replicas (it sees this broker live),
	// the creations it is asked for succeed.
	tb.createTopic("ready", 1, nil)
	req := &messages.MetadataRequest{AllowAutoTopicCreation: true}
	for i := range 5000 {
		req.Topics = append(req.Topics, fmt.Sprintf("auto-%d", i))
	}
	waitFor(t, "a request that creates topics", func() bool {
		resp := tb.ask(req).(*messages.MetadataResponse)
		creating, waiting := 0, 0
		for _, tm := range resp.Topics {
			switch {
			case tm.Error == messages.ErrorCode_LEADER_NOT_AVAILABLE && strings.HasPrefix(tm.ErrorMessage, "not created yet"):
				waiting++ // no controller yet
			case tm.Error == messages.ErrorCode_LEADER_NOT_AVAILABLE:
				creating++
			case tm.Error == messages.ErrorCode_UNKNOWN_TOPIC_OR_PARTITION:
			default:
				t.Fatalf("topic %s: %v", tm.Name, tm.Error)
			}
		}
		if waiting > 0 {
			if waiting != len(resp.Topics) {
				t.Fatalf("%d topics wait for a controller, %d do not", waiting, len(resp.Topics)-waiting)
			}
			return false
		}
		if creating != autoCreatePerRequest {
			t.Fatalf("%d of 5,000 unknown topics are being created, want %d", creating, autoCreatePerRequest)
		}
		return true
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		all := tb.ask(&messages.MetadataRequest{}).(*messages.MetadataResponse)
		created := len(all.Topics) - 1 // and "ready"
		if created >= autoCreatePerRequest {
			if created > autoCreatePerRequest {
				t.Fatalf("%d topics created", created)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d topics created after 10 s, want %d", created, autoCreatePerRequest)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
