package broker

import (
	"reflect"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/sluicemq/sluice/messages"
)

// Every request of the table that can be refused is answered with its own
// response type, carrying the refusal's code and text.
func TestRequestTableAnswersEachRequestWithItsResponse(t *testing.T) {
	if len(requests) == 0 {
		t.Fatal("empty table")
	}
	for typ, r := range requests {
		name := typ.Elem().Name()
		if !strings.HasSuffix(name, "Request") {
			t.Errorf("%s in the request table", name)
		}
		if r.fail == nil {
			continue
		}
		msg := reflect.New(typ.Elem()).Interface().(proto.Message)
		nameATopic(msg.ProtoReflect())
		answer := r.fail(msg)(messages.ErrorCode_TOPIC_AUTHORIZATION_FAILED, "refused")
		if got, want := reflect.TypeOf(answer).Elem().Name(), strings.TrimSuffix(name, "Request")+"Response"; got != want {
			t.Errorf("%s is refused with a %s, want %s", name, got, want)
			continue
		}
		if code := errorCode(answer.ProtoReflect()); code != messages.ErrorCode_TOPIC_AUTHORIZATION_FAILED {
			t.Errorf("%s refused with code %v", name, code)
		}
	}
}

// errorCode is a response's error field, or that of its first per-topic
// result (results, or topics).
func errorCode(m protoreflect.Message) messages.ErrorCode {
	fields := m.Descriptor().Fields()
	if f := fields.ByName("error"); f != nil {
		return messages.ErrorCode(m.Get(f).Enum())
	}
	for _, name := range []protoreflect.Name{"results", "topics"} {
		if f := fields.ByName(name); f != nil && f.Kind() == protoreflect.MessageKind && m.Get(f).List().Len() > 0 {
			return errorCode(m.Get(f).List().Get(0).Message())
		}
	}
	return -1
}

// nameATopic adds topic "t" to a topic-admin request (its names or
// topics), so that its refusal has a per-topic result.
func nameATopic(m protoreflect.Message) {
	fields := m.Descriptor().Fields()
	for _, name := range []protoreflect.Name{"names", "topics"} {
		if f := fields.ByName(name); f != nil && f.IsList() && f.Kind() == protoreflect.StringKind {
			m.Mutable(f).List().Append(protoreflect.ValueOfString("t"))
		}
	}
	if f := fields.ByName("topics"); f != nil && f.IsList() && f.Kind() == protoreflect.MessageKind {
		list := m.Mutable(f).List()
		topic := list.NewElement()
		if name := topic.Message().Descriptor().Fields().ByName("name"); name != nil {
			topic.Message().Set(name, protoreflect.ValueOfString("t"))
		}
		list.Append(topic)
	}
}
