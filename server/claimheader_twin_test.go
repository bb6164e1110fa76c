package server

import (
	"errors"
	"testing"

	"github.com/jwksverify/jwksverify/policy"
	"github.com/jwksverify/jwksverify/request"
	"github.com/jwksverify/jwksverify/server/internal/servertest"
)

// TestClaimHeaderReservedTwin: a CGI, FastCGI or WSGI application
// reads X_Forwarded_Host as X-Forwarded-Host (HTTP_X_FORWARDED_HOST), so a
// claim header spelled as the underscore twin of a refused header puts a
// claim value where the application reads a proxy fact or a credential.
// CheckClaimHeader must refuse the twins as it refuses the headers.
func TestClaimHeaderReservedTwin(t *testing.T) {
	e := newEnv(t, envConfig{})
	for _, h := range []string{
		"X_Forwarded_Host", "X_Forwarded_For", "X-Forwarded_Proto", "X_Real_IP", "X_Original_URI",
		"X_Envoy_Original_Path", "Proxy_Authorization", "Set_Cookie", "Www_Authenticate",
		"Content_Type", "Cache_Control", "Transfer_Encoding", "Keep_Alive",
	} {
		t.Run(h, func(t *testing.T) {
			if err := CheckClaimHeader(h); err == nil {
				t.Errorf("CheckClaimHeader(%q) = nil: a CGI application reads it as the header it is a twin of", h)
			}
			_, err := New(Options{Verifier: e.v, ClaimsToHeaders: map[string]map[string]string{issuerA: {"sub": h}}})
			if !errors.Is(err, ErrInvalidOptions) {
				t.Errorf("New(ClaimsToHeaders: {sub: %q}) = %v, want ErrInvalidOptions", h, err)
			}
		})
	}
}

// TestClaimHeadersTwinOfEachOther: two claim headers that are CGI
// twins of each other (X-User and X_User) are one header to a CGI
// upstream, which then reads one claim's value as the other's. Header
// names must be distinct (CONFIG.md), and mint.header is already refused
// beside a twin of a claim header for this reason.
func TestClaimHeadersTwinOfEachOther(t *testing.T) {
	e := newEnv(t, envConfig{})
	_, err := New(Options{Verifier: e.v, ClaimsToHeaders: map[string]map[string]string{issuerA: {"sub": "X-User", "scope": "X_User"}}})
	if !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("New(ClaimsToHeaders: {sub: X-User, scope: X_User}) = %v, want ErrInvalidOptions", err)
	}
}

// TestPolicyClaimHeadersDistinct: a policy's claims_to_headers is
// held to the issuer's rules ("the same header rules", CONFIG.md): two
// claims may not name one header (x-user and X-User), nor CGI twins, and
// a policy's header may not be a twin of an issuer's.
func TestPolicyClaimHeadersDistinct(t *testing.T) {
	for name, hs := range map[string]map[string]string{
		"same-header":       {"sub": "X-User", "scope": "x-user"},
		"twins":             {"sub": "X-User", "scope": "X_User"},
		"twin-of-issuer-hd": {"sub": "X_Auth_Subject"}, // the issuer's is X-Auth-Subject
	} {
		t.Run(name, func(t *testing.T) {
			set, err := policy.New(policy.Options{
				Policies:      []policy.Spec{{Name: "p", Issuers: []string{issuerA}, ClaimsToHeaders: hs}},
				DefaultPolicy: "p",
			})
			if err != nil {
				t.Fatalf("policy.New() = %v", err)
			}
			ve := servertest.NewEnv(t, servertest.Config{})
			_, err = New(Options{Verifier: ve.V, ClaimsToHeaders: servertest.ClaimsToHeaders(), Proxy: request.Nginx, Policies: set})
			if !errors.Is(err, ErrInvalidOptions) {
				t.Errorf("New(policy claims_to_headers %v) = %v, want ErrInvalidOptions", hs, err)
			}
			if err != nil {
				t.Logf("err %v", err)
			}
		})
	}
}
