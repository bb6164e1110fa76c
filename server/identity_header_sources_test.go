package server

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/jwksverify/jwksverify/internal/testkeys"
	mintpkg "github.com/jwksverify/jwksverify/mint"
	"github.com/jwksverify/jwksverify/policy"
	"github.com/jwksverify/jwksverify/request"
)

// TestIdentityHeaderNotARequestSource: a header an allowed answer sets for
// the upstream (an issuer's or a policy's claims_to_headers, mint.header)
// may not be a header jwksverify reads from the request: the client
// certificate header (mtls.client_cert_header), a token source's header or
// DPoP, nor a CGI twin of one. Every allowed answer sets each identity header
// (empty when the claim is absent), and the proxies copy them over the
// request's: behind nginx the upstream got `X-Client-Cert: <sub>` where it
// reads the certificate nginx verified, and a token source there is
// cleared by the proxies before the auth call (as they clear a client's
// own claim headers), so the token never arrives. `jwksverify check`
// passed both; mint.header beside a token source was already refused.
func TestIdentityHeaderNotARequestSource(t *testing.T) {
	for _, tc := range []struct {
		name      string
		issuerHdr map[string]string // claims_to_headers of issuerA
		policyHdr map[string]string // of the default policy
		mint      string            // mint.header
		cert      string            // mtls.client_cert_header
		sources   []TokenSource
	}{
		{name: "issuer-header-client-cert", issuerHdr: map[string]string{"sub": "X-Client-Cert"}, cert: "X-Client-Cert"},
		{name: "issuer-header-client-cert-twin", issuerHdr: map[string]string{"sub": "X_Client_Cert"}, cert: "x-client-cert"},
		{name: "policy-header-client-cert", policyHdr: map[string]string{"sub": "X-Client-Cert"}, cert: "X-Client-Cert"},
		{name: "mint-header-client-cert", mint: "X-Client-Cert", cert: "X-Client-Cert"},
		// A DPoP proof is a credential (RFC 9449 §4.1), read from the
		// request: a claim must never become one.
		{name: "issuer-header-dpop", issuerHdr: map[string]string{"sub": "DPoP"}},
		{name: "policy-header-dpop-twin", policyHdr: map[string]string{"sub": "dpop"}},
		{name: "issuer-header-token-source", issuerHdr: map[string]string{"sub": "X-Token"}, sources: []TokenSource{{Header: "X-Token"}}},
		{name: "policy-header-token-source-twin", policyHdr: map[string]string{"sub": "X-Token"}, sources: []TokenSource{{Header: "Authorization", Prefix: "Bearer "}, {Header: "X_Token"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, envConfig{})
			o := Options{Verifier: e.v, TokenSources: tc.sources, ClientCert: ClientCertSource{Header: tc.cert}, Proxy: request.Nginx}
			if tc.issuerHdr != nil {
				o.ClaimsToHeaders = map[string]map[string]string{issuerA: tc.issuerHdr}
			}
			spec := policy.Spec{Name: "p", Issuers: []string{issuerA}, ClaimsToHeaders: tc.policyHdr}
			set, err := policy.New(policy.Options{Policies: []policy.Spec{spec}, DefaultPolicy: "p"})
			if err != nil {
				t.Fatal(err)
			}
			o.Policies = set
			if tc.mint != "" {
				path := filepath.Join(t.TempDir(), "mint.jwks")
				_ = os.WriteFile(path, testkeys.PrivateJWKS(testkeys.JWK{Key: testkeys.Private(testkeys.EC256B), Kid: "m1"}), 0o600)
				m, err := mintpkg.New(mintpkg.Options{Issuer: "i", KeysFile: path, SigningKid: "m1", Header: tc.mint})
				if err != nil {
					t.Fatal(err)
				}
				defer m.Close()
				o.Minter = m
			}
			if _, err := New(o); !errors.Is(err, ErrInvalidOptions) {
				t.Errorf("New() = %v, want ErrInvalidOptions", err)
			}
		})
	}
	// Headers apart from one another still load.
	e := newEnv(t, envConfig{})
	_, err := New(Options{Verifier: e.v, ClaimsToHeaders: map[string]map[string]string{issuerA: {"sub": "X-Auth-Subject"}},
		ClientCert: ClientCertSource{Header: "X-Client-Cert"}, TokenSources: []TokenSource{{Header: "X-Token"}}})
	if err != nil {
		t.Fatalf("New() = %v", err)
	}
}
