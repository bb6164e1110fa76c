package redact

import "testing"

func TestString(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"https://idp.example/jwks", "https://idp.example/jwks"},
		{"https://user:pass@idp.example/jwks?api_key=s3cret#frag", "https://idp.example/jwks"},
		{"https://idp.example:8443/a/b?x=1", "https://idp.example:8443/a/b"},
		{"http://[::1]:80/p", "http://[::1]:80/p"},
		{"https://idp.example/%zz?api_key=s3cret", "(unparsable URL)"},
		{"::not a url?api_key=s3cret", "(unparsable URL)"},
	} {
		if got := String(tt.in); got != tt.want {
			t.Errorf("String(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
