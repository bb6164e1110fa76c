package server

import (
	"errors"
	"testing"

	"github.com/jwksverify/jwksverify/request"
)

// TestClaimHeaderRefusesRequestFacts: a claim header may not be a header
// the application reads the request itself from. jwksverify decides the
// request for every method X-HTTP-Method-Override (and its kin) names, as
// the client sent them; an allowed answer that then sets that header from
// a claim makes the application run a method no policy decided. Likewise
// the host, scheme and path headers every proxy-config file sets or drops
// as request facts (request.ForwardedHeaders: X-Host, X-Rewrite-URL,
// X-Scheme, …): set from a claim, the application routes by a claim's
// value. Their CGI twins are the same header to a CGI upstream.
func TestClaimHeaderRefusesRequestFacts(t *testing.T) {
	e := newEnv(t, envConfig{})
	set, removed := request.ForwardedHeaders()
	headers := append(append(append(request.OverrideHeaders(), set...), removed...),
		"X_HTTP_Method_Override", "x-method-override", "X_Host", "X_Rewrite_Url", "x-rewrite-url")
	for _, h := range headers {
		t.Run(h, func(t *testing.T) {
			if err := CheckClaimHeader(h); err == nil {
				t.Errorf("CheckClaimHeader(%q) = nil: the application reads the request from it", h)
			}
			if err := CheckMintHeader(h); err == nil {
				t.Errorf("CheckMintHeader(%q) = nil: the application reads the request from it", h)
			}
			_, err := New(Options{Verifier: e.v, ClaimsToHeaders: map[string]map[string]string{issuerA: {"sub": h}}})
			if !errors.Is(err, ErrInvalidOptions) {
				t.Errorf("New(ClaimsToHeaders: {sub: %q}) = %v, want ErrInvalidOptions", h, err)
			}
		})
	}
}
