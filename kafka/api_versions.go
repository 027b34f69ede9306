package kafka

import "github.com/twmb/franz-go/pkg/kmsg"

// ApiVersions (key 18), v0–4: the first request on every connection; the
// answer lists every API and version range in versions.go.

func handleApiVersions(r *request, h header, req kmsg.Request) func() kmsg.Response {
	return func() kmsg.Response {
		resp := kmsg.NewPtrApiVersionsResponse()
		resp.ApiKeys = servedKeys()
		return resp
	}
}

// unsupportedApiVersions answers an ApiVersions request at a version newer
// than served: a v0 body with UNSUPPORTED_VERSION and the served ranges,
// from which the client picks a version and asks again.
func unsupportedApiVersions() *kmsg.ApiVersionsResponse {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.SetVersion(0)
	resp.ErrorCode = errUnsupportedVersion
	resp.ApiKeys = servedKeys()
	return resp
}

func servedKeys() []kmsg.ApiVersionsResponseApiKey {
	var keys []kmsg.ApiVersionsResponseApiKey
	for _, k := range apiKeys() {
		v := apis[k].versions
		keys = append(keys, kmsg.ApiVersionsResponseApiKey{ApiKey: k, MinVersion: v.min, MaxVersion: v.max})
	}
	return keys
}
