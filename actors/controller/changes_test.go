package controller

import (
	"reflect"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"

	"github.com/sluicemq/sluice/messages"
)

// Every request that writes the metadata has an error answer of its own
// response type (not the generic ErrorResponse), carrying the code for
// each topic it names; anything else gets an ErrorResponse.
func TestFailureOfEachChange(t *testing.T) {
	for typ := range changes {
		req := reflect.New(typ.Elem()).Interface().(proto.Message)
		topics := true // each names two topics
		switch m := req.(type) {
		case *messages.DeleteTopicsRequest:
			m.Names = []string{"a", "b"}
		case *messages.CreateTopicsRequest:
			m.Topics = []*messages.TopicSpec{{Name: "a"}, {Name: "b"}}
		case *messages.AlterTopicConfigsRequest:
			m.Topics = []*messages.TopicConfigChange{{Name: "a"}, {Name: "b"}}
		case *messages.CreatePartitionsRequest:
			m.Topics = []*messages.PartitionCount{{Name: "a"}, {Name: "b"}}
		default:
			topics = false
		}
		resp := failureOf(req, messages.ErrorCode_NOT_CONTROLLER, "stopped")
		if _, generic := resp.(*messages.ErrorResponse); generic || !strings.HasSuffix(string(proto.MessageName(resp)), "Response") {
			t.Errorf("%s answered %T", proto.MessageName(req), resp)
			continue
		}
		if n := strings.Count(prototext.Format(resp), "NOT_CONTROLLER"); n == 0 {
			t.Errorf("%s answered %v without the code", proto.MessageName(req), resp)
		} else if topics && n != 2 {
			t.Errorf("%s of two topics: the code %d times in %v", proto.MessageName(req), n, resp)
		}
	}
	if _, ok := failureOf(&messages.MetadataRequest{}, messages.ErrorCode_NOT_CONTROLLER, "x").(*messages.ErrorResponse); !ok {
		t.Error("a request that writes nothing did not get an ErrorResponse")
	}
}
