package jwks

import (
	"errors"
	"strings"
	"testing"
)

// TestCheckURLCredentials: a URL with user info is refused whatever its
// scheme and host, and the error does not repeat the credentials.
func TestCheckURLCredentials(t *testing.T) {
	tests := []struct {
		name, url string
		insecure  bool
		wantErr   error
	}{
		{name: "https-user-password", url: "https://user:s3cret@idp.example/keys", wantErr: ErrInsecureURL},
		{name: "https-user-only", url: "https://s3cret@idp.example/keys", wantErr: ErrInsecureURL},
		{name: "loopback-http", url: "http://user:s3cret@127.0.0.1:9/keys", wantErr: ErrInsecureURL},
		{name: "insecure-allowed-http", url: "http://user:s3cret@idp.example/keys", insecure: true, wantErr: ErrInsecureURL},
		{name: "no-credentials", url: "https://idp.example/keys"},
		{name: "localhost-upper-case", url: "http://LOCALHOST:9/keys"},
		// localhost only to Unicode case folding (ſ U+017F): no loopback
		// name to a resolver, so plain http is refused.
		{name: "localhost-long-s", url: "http://localho\u017ft:9/keys", wantErr: ErrInsecureURL},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckURL(tt.url, tt.insecure)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("CheckURL(%q) = %v, want %v", tt.url, err, tt.wantErr)
			}
			if err != nil && strings.Contains(err.Error(), "s3cret") {
				t.Errorf("CheckURL(%q) = %q, repeats the credentials", tt.url, err)
			}
			if tt.wantErr == nil {
				return
			}
			if _, nerr := New(Options{URL: tt.url, InsecureAllowHTTP: tt.insecure}); !errors.Is(nerr, tt.wantErr) {
				t.Errorf("New(URL: %q) = %v, want %v (the same rule)", tt.url, nerr, tt.wantErr)
			}
		})
	}
}
