package kafka

import (
	"context"
	"slices"

	"google.golang.org/protobuf/proto"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// versionRange is the versions of one API the listener serves.
type versionRange struct{ min, max int16 }

// request is what a handler is given besides the request itself: the
// connection it came on and a context that ends with the request's time
// or the connection.
type request struct {
	conn *conn
	ctx  context.Context
}

// call asks the broker and waits for its answer.
func (r *request) call(msg proto.Message) (proto.Message, error) {
	return r.conn.srv.cfg.Broker.Call(r.ctx, msg)
}

// handler answers one decoded request; nil means no answer (an acks=0
// produce).
type handler func(r *request, h header, req kmsg.Request) kmsg.Response

// api is one served API: its versions and its handler.
type api struct {
	versions versionRange
	handle   handler
}

// apis is every API the listener serves, by key. ApiVersions advertises
// exactly these ranges. Minimums reach back as far as the clients need:
// librdkafka enables a feature only when the range includes the old
// version it looks for (Produce 3 and Fetch 4 for v2 batches, InitProducerId
// 0 for idempotence, ...), so raising a minimum silently turns features off.
var apis map[int16]api

func init() {
	apis = map[int16]api{
		kmsg.ApiVersions.Int16(): {versionRange{0, 4}, handleApiVersions},
		kmsg.Metadata.Int16():    {versionRange{0, 12}, handleMetadata},
	}
}

// apiKeys returns the served keys in order.
func apiKeys() []int16 {
	keys := make([]int16, 0, len(apis))
	for k := range apis {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
