package server

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"net/http"
	"net/url"
	"testing"

	"github.com/jwksverify/jwksverify/internal/testkeys"
	"github.com/jwksverify/jwksverify/mtls"
	"github.com/jwksverify/jwksverify/request"
	"github.com/jwksverify/jwksverify/server/internal/servertest"
)

// TestBindingOneConstraint: each sender constraint holds on its own. With
// both required (TestBindingForwardAuth) either check refuses an unbound
// token, so dropping one of them passed every test; here the other one is
// off. A DPoP checker configured where no issuer has a constraint reads no
// DPoP credential (malformed, as with no checker), and a client
// certificate header sent twice is not a certificate.
func TestBindingOneConstraint(t *testing.T) {
	jkt := jktOf(t, testkeys.EC256B)
	bound := mint(claims(map[string]any{"cnf": map[string]any{"jkt": jkt}}))
	unbound := mint(claims(nil))
	certA := servertest.ClientCert(t, "client-a")
	certBound := mint(claims(map[string]any{"cnf": map[string]any{"x5t#S256": mtls.Thumbprint(certA)}}))
	escapedA := url.PathEscape(string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: certA})))
	withCert := func(tok string, certs ...string) *http.Request {
		r := dpopRequest("Bearer " + tok)
		for _, c := range certs {
			r.Header.Add("X-Client-Cert", c)
		}
		return r
	}

	for _, tt := range []struct {
		name      string
		sc        SenderConstraint
		req       *http.Request
		wantCode  int
		wantClass string
		noDPoP    bool // no DPoP checker: an mTLS constraint alone
	}{
		{"dpop-required-unbound-bearer", SenderConstraint{DPoP: ConstraintRequired}, dpopRequest("Bearer " + unbound), 401, "binding_mismatch", false},
		{"dpop-required-bound", SenderConstraint{DPoP: ConstraintRequired}, dpopRequest("DPoP "+bound, mintProof(testkeys.EC256B, "ES256", "j1", "POST", htu, bound)), 200, "", false},
		{"mtls-required-unbound-bearer", SenderConstraint{MTLS: ConstraintRequired}, withCert(unbound, escapedA), 401, "binding_mismatch", false},
		{"mtls-required-bound", SenderConstraint{MTLS: ConstraintRequired}, withCert(certBound, escapedA), 200, "", false},
		{"cert-header-twice", SenderConstraint{MTLS: ConstraintOptional}, withCert(certBound, escapedA, escapedA), 401, "binding_mismatch", false},
		{"dpop-checker-no-constraint", SenderConstraint{}, dpopRequest("DPoP "+bound, mintProof(testkeys.EC256B, "ES256", "j1", "POST", htu, bound)), 401, "malformed", false},
		// A constraint, but no DPoP checker: no DPoP credential is read
		// (there is nothing to check its proof with).
		{"mtls-constraint-no-dpop-checker", SenderConstraint{MTLS: ConstraintOptional}, dpopRequest("DPoP "+bound, mintProof(testkeys.EC256B, "ES256", "j1", "POST", htu, bound)), 401, "malformed", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var edit func(*Options)
			if tt.noDPoP {
				edit = func(o *Options) { o.DPoP = nil }
			}
			e := newBindEnvWith(t, tt.sc, nil, edit)
			w := do(e.handler, tt.req)
			wantAnswer(t, w, tt.wantCode, tt.wantClass)
		})
	}
}

// TestClientCertSourceRepeated: the client certificate header, or Envoy's
// x-forwarded-client-cert, present twice is malformed (DECISIONS, mTLS
// sources): which of the two is the client's depends on the proxies, and
// reading the first let a client's own header stand for the certificate.
func TestClientCertSourceRepeated(t *testing.T) {
	certA := servertest.ClientCert(t, "client-a")
	escapedA := url.PathEscape(string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: certA})))
	sum := sha256.Sum256(certA)
	for _, tt := range []struct {
		name   string
		edit   func(*Options)
		header string
		value  string
	}{
		{"cert-header", nil, "X-Client-Cert", escapedA},
		{"xfcc", func(o *Options) {
			o.Proxy, o.ClientCert = request.Envoy, ClientCertSource{XFCC: true}
		}, "X-Forwarded-Client-Cert", "Hash=" + hex.EncodeToString(sum[:])},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newBindEnvWith(t, SenderConstraint{MTLS: ConstraintOptional}, nil, tt.edit)
			got, err := e.srv.certFromHeaders(http.Header{tt.header: {tt.value}})
			if err != nil || got != mtls.Thumbprint(certA) {
				t.Fatalf("certFromHeaders(once) = %q, %v; want the certificate's thumbprint", got, err)
			}
			got, err = e.srv.certFromHeaders(http.Header{tt.header: {tt.value, tt.value}})
			if !errors.Is(err, mtls.ErrMalformed) {
				t.Errorf("certFromHeaders(twice) = %q, %v; want %v", got, err, mtls.ErrMalformed)
			}
		})
	}
}
