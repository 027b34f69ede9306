package broker

import (
	"fmt"
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
}

// One metadata request naming 5,000 unknown topics creates a few of them.
func TestAutoCreateBoundedPerRequest(t *testing.T) {
	tb := startTestBroker(t, t.TempDir(), func(c *actors.BrokerConfig) { c.AutoCreateTopics = true })
	req := &messages.MetadataRequest{AllowAutoTopicCreation: true}
	for i := range 5000 {
		req.Topics = append(req.Topics, fmt.Sprintf("auto-%d", i))
	}
	resp := tb.ask(req).(*messages.MetadataResponse)
	creating := 0
	for _, tm := range resp.Topics {
		switch tm.Error {
		case messages.ErrorCode_LEADER_NOT_AVAILABLE:
			creating++
		case messages.ErrorCode_UNKNOWN_TOPIC_OR_PARTITION:
		default:
			t.Fatalf("topic %s: %v", tm.Name, tm.Error)
		}
	}
	if creating != autoCreatePerRequest {
		t.Fatalf("%d of 5,000 unknown topics are being created, want %d", creating, autoCreatePerRequest)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		all := tb.ask(&messages.MetadataRequest{}).(*messages.MetadataResponse)
		if len(all.Topics) >= autoCreatePerRequest {
			if len(all.Topics) > autoCreatePerRequest {
				t.Fatalf("%d topics created", len(all.Topics))
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d topics created after 10 s, want %d", len(all.Topics), autoCreatePerRequest)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
