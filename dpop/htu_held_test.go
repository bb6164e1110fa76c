package dpop_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jwksverify/jwksverify/dpop"
	"github.com/jwksverify/jwksverify/internal/testkeys"
	"github.com/jwksverify/jwksverify/request"
	"github.com/jwksverify/jwksverify/verify"
)

// TestHTUSpellingsHeld holds the htu spellings the twenty-third red team
// probed that TestCheck does not: an IPv6 host (bracketed, its port, its
// canonical text only, no zone), a trailing '/', a trailing dot, a space
// (Go's url.Parse escapes it, so it names another path than the request's).
func TestHTUSpellingsHeld(t *testing.T) {
	jkt := thumb(t, testkeys.EC256A)
	v6 := request.Original{Method: "POST", Scheme: "https", Host: "2001:db8::1", Port: "8443", Path: "/orders/1"}
	tests := []struct {
		name    string
		htu     string
		req     request.Original
		wantErr error
	}{
		{"ipv6-with-port", "https://[2001:db8::1]:8443/orders/1", v6, nil},
		{"ipv6-upper-case", "https://[2001:DB8::1]:8443/orders/1", v6, nil},
		{"ipv6-without-port", "https://[2001:db8::1]/orders/1", v6, verify.ErrInvalidDPoPProof},
		{"ipv6-not-canonical", "https://[2001:db8:0::1]:8443/orders/1", v6, verify.ErrInvalidDPoPProof},
		{"ipv6-zone", "https://[2001:db8::1%25eth0]:8443/orders/1", v6, verify.ErrInvalidDPoPProof},
		{"ipv4-mapped", "https://[::ffff:127.0.0.1]:8443/orders/1", v6, verify.ErrInvalidDPoPProof},
		{"trailing-slash", "https://api.example.com/orders/1/", origReq, verify.ErrInvalidDPoPProof},
		{"trailing-dot-host", "https://api.example.com./orders/1", origReq, nil},
		{"raw-space", "https://api.example.com/orders/1 ", origReq, verify.ErrInvalidDPoPProof},
		{"encoded-dot-segment", "https://api.example.com/orders/%2E%2e/1", origReq, verify.ErrInvalidDPoPProof},
		{"empty-segment", "https://api.example.com/orders//1", origReq, verify.ErrInvalidDPoPProof},
		{"backslash-authority", "https://api.example.com\\@evil.example/orders/1", origReq, verify.ErrInvalidDPoPProof},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newChecker(t, dpop.Options{})
			in := input(proof("ES256", testkeys.EC256A, nil, map[string]any{"htu": tt.htu}), jkt)
			in.Request = tt.req
			_, err := c.Check(context.Background(), in, t0)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Errorf("Check() = %v, want %v", err, tt.wantErr)
			}
		})
	}
}
