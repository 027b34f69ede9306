package coordinator

import (
	"reflect"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/sluicemq/sluice/messages"
)

// Every group request names its group for routing and, but for credit,
// has an error answer carrying the code; other messages are not group
// requests.
func TestGroupRequestTable(t *testing.T) {
	for typ := range groupRequests {
		req := reflect.New(typ.Elem()).Interface().(proto.Message)
		req.ProtoReflect().Set(req.ProtoReflect().Descriptor().Fields().ByName("group"), protoreflect.ValueOfString("g1"))
		if g, ok := GroupOf(req); !ok || g != "g1" {
			t.Errorf("%s: GroupOf %q %v", proto.MessageName(req), g, ok)
		}
		resp := GroupError(req, messages.ErrorCode_NOT_COORDINATOR, "elsewhere")
		if _, credit := req.(*messages.PushCredit); credit {
			if resp != nil {
				t.Errorf("PushCredit answered %v", resp)
			}
			continue
		}
		if resp == nil {
			t.Errorf("%s has no error answer", proto.MessageName(req))
			continue
		}
		if code := resp.ProtoReflect().Get(resp.ProtoReflect().Descriptor().Fields().ByName("error")).Enum(); code != protoreflect.EnumNumber(messages.ErrorCode_NOT_COORDINATOR) {
			t.Errorf("%s answered %v", proto.MessageName(req), resp)
		}
	}
	if _, ok := GroupOf(&messages.MetadataRequest{}); ok {
		t.Error("a metadata request routed as a group request")
	}
}
