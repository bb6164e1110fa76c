package extauthz

import (
	"slices"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
)

// TestEnvoyHeaders: the server reads the forwarded request's headers by
// canonical name from Envoy's lower-case keys — every value of a repeated
// header_map entry (raw values first), one value of the headers map — and
// a header Envoy did not forward is absent.
func TestEnvoyHeaders(t *testing.T) {
	asMap := &authv3.AttributeContext_HttpRequest{Headers: map[string]string{"authorization": "Bearer a", "x-token": "t"}}
	asHeaderMap := &authv3.AttributeContext_HttpRequest{HeaderMap: &corev3.HeaderMap{Headers: []*corev3.HeaderValue{
		{Key: "cookie", RawValue: []byte("a=1")},
		{Key: "Cookie", Value: "b=2"},
		{Key: "authorization", Value: "ignored", RawValue: []byte("Bearer raw")},
	}}}
	tests := []struct {
		name string
		hr   *authv3.AttributeContext_HttpRequest
		key  string
		want []string
	}{
		{"map", asMap, "Authorization", []string{"Bearer a"}},
		{"map-dashed", asMap, "X-Token", []string{"t"}},
		{"map-absent", asMap, "Cookie", nil},
		{"header-map-repeated", asHeaderMap, "Cookie", []string{"a=1", "b=2"}},
		{"header-map-raw-first", asHeaderMap, "Authorization", []string{"Bearer raw"}},
		{"header-map-absent", asHeaderMap, "X-Token", nil},
		{"no-attributes", nil, "Authorization", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := envoyHeaders{tt.hr}
			if got := h.Values(tt.key); !slices.Equal(got, tt.want) {
				t.Errorf("Values(%q) = %q, want %q", tt.key, got, tt.want)
			}
			if got, want := h.Get(tt.key), append(tt.want, "")[0]; got != want {
				t.Errorf("Get(%q) = %q, want %q", tt.key, got, want)
			}
		})
	}
}
