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
			h := &envoyHeaders{hr: tt.hr}
			if got := h.Values(tt.key); !slices.Equal(got, tt.want) {
				t.Errorf("Values(%q) = %q, want %q", tt.key, got, tt.want)
			}
			if got, want := h.Get(tt.key), append(tt.want, "")[0]; got != want {
				t.Errorf("Get(%q) = %q, want %q", tt.key, got, want)
			}
		})
	}
}

// TestOriginalOverrides: the method-override headers are read from both
// forms Envoy sends the headers in (the headers map, and header_map with
// encode_raw_headers), and a value that is not a method is refused.
func TestOriginalOverrides(t *testing.T) {
	hr := func(headers map[string]string, entries ...*corev3.HeaderValue) *authv3.AttributeContext_HttpRequest {
		r := &authv3.AttributeContext_HttpRequest{Method: "GET", Scheme: "https", Host: "api.example.com", Path: "/orders/1", Headers: headers}
		if entries != nil {
			r.HeaderMap = &corev3.HeaderMap{Headers: entries}
		}
		return r
	}
	tests := []struct {
		name    string
		hr      *authv3.AttributeContext_HttpRequest
		want    string
		wantErr bool
	}{
		{"map", hr(map[string]string{"x-http-method-override": "DELETE"}), "DELETE", false},
		{"header-map-raw", hr(nil, &corev3.HeaderValue{Key: "x-http-method-override", RawValue: []byte("DELETE")}), "DELETE", false},
		{"header-map-value", hr(nil, &corev3.HeaderValue{Key: "X-Method-Override", Value: "PUT"}), "PUT", false},
		{"header-map-other-headers", hr(nil, &corev3.HeaderValue{Key: "authorization", RawValue: []byte("Bearer x")}), "", false},
		{"header-map-not-a-method", hr(nil, &corev3.HeaderValue{Key: "x-http-method", RawValue: []byte("GET, DELETE")}), "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := original(tt.hr)
			if (err != nil) != tt.wantErr || o.Overrides != tt.want {
				t.Errorf("original() = %q, %v; want overrides %q (error: %t)", o.Overrides, err, tt.want, tt.wantErr)
			}
		})
	}
}
