package kafka

import (
	"bytes"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Any bytes a peer sends are read as a frame, a header and a request body
// without a panic; what does not parse is an error.
func FuzzRequestFrame(f *testing.F) {
	for _, v := range []int16{0, 1, 4, 9, 12} {
		req := kmsg.NewPtrMetadataRequest()
		req.SetVersion(v)
		topic := "orders"
		req.Topics = []kmsg.MetadataRequestTopic{{Topic: &topic}}
		f.Add(frameRequest(req, 1))
	}
	for _, v := range []int16{0, 3, 4} {
		req := kmsg.NewPtrApiVersionsRequest()
		req.SetVersion(v)
		f.Add(frameRequest(req, 2))
	}
	f.Add([]byte{0, 0, 0, 0})
	f.Add([]byte{0x7f, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, data []byte) {
		frame, err := readFrame(bytes.NewReader(data), 1<<20)
		if err != nil {
			return
		}
		h, body, err := parseHeader(frame)
		if err != nil {
			return
		}
		if _, ok := apis[h.key]; !ok {
			return
		}
		_, _ = decodeRequest(h, body)
	})
}
