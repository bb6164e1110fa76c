package extauthz

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/pem"
	"log/slog"
	"net/url"
	"slices"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	"google.golang.org/grpc/codes"

	"github.com/jwksverify/jwksverify/mtls"
	"github.com/jwksverify/jwksverify/policy"
	"github.com/jwksverify/jwksverify/server"
	"github.com/jwksverify/jwksverify/server/internal/servertest"
)

func rtServer(t *testing.T, o server.Options, set *policy.Set) *authzGRPC {
	t.Helper()
	ve := servertest.NewEnv(t, servertest.Config{TokenCache: 10, NoDown: true})
	o.Verifier, o.Policies, o.Proxy = ve.V, set, "envoy"
	o.Logger, o.Now = slog.New(slog.DiscardHandler), ve.Clock.Now
	if o.ClaimsToHeaders == nil {
		o.ClaimsToHeaders = servertest.ClaimsToHeaders()
	}
	srv, err := server.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return newAuthzGRPC(srv)
}

func code(resp *authv3.CheckResponse, err error) codes.Code {
	if err != nil {
		return codes.Unknown
	}
	return codes.Code(resp.GetStatus().GetCode())
}

// TestUnreadBearerRefused: with a cookie-only token source, an
// Authorization: Bearer <forged> was no credential here, so an anonymous
// route let it through to the application, and the OK answer neither
// refused nor removed it. It is now malformed.
func TestUnreadBearerRefused(t *testing.T) {
	set, err := policy.New(policy.Options{
		Policies: []policy.Spec{{Name: "public", AllowAnonymous: true}, {Name: "strict", Scopes: policy.Scopes{All: []string{"orders:read"}}}},
		Routes:   []policy.Route{{Path: "/public/**", Policy: "public"}, {Path: "/**", Policy: "strict"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	a := rtServer(t, server.Options{TokenSources: []server.TokenSource{{Cookie: "session"}}, StripAuthorization: true}, set)
	forged := tokens()["bad-signature"]
	for _, tc := range []struct {
		name string
		h    map[string]string
	}{
		{"anonymous-route", map[string]string{"authorization": "Bearer " + forged}},
	} {
		resp, err := a.Check(t.Context(), envoyRequest("GET", "/public/x", tc.h))
		t.Logf("%s: code=%v removes=%v", tc.name, code(resp, err), resp.GetOkResponse().GetHeadersToRemove())
		if code(resp, err) == codes.OK && !slices.Contains(resp.GetOkResponse().GetHeadersToRemove(), "authorization") {
			t.Errorf("%s: OK with the forged Authorization passed to the application", tc.name)
		}
	}
	// A valid cookie beside a forged bearer on a protected route.
	resp, err := a.Check(t.Context(), envoyRequest("GET", "/orders", map[string]string{"cookie": "session=" + mint(claims(nil)), "authorization": "Bearer " + forged}))
	t.Logf("cookie+forged bearer: code=%v removes=%v", code(resp, err), resp.GetOkResponse().GetHeadersToRemove())
}

// TestOKCacheAcrossRequests: the OK answer cache is keyed by the Result; a
// request on another path, method or host is decided again.
func TestOKCacheAcrossRequests(t *testing.T) {
	set, err := policy.New(policy.Options{
		Policies: []policy.Spec{{Name: "admin", Scopes: policy.Scopes{All: []string{"orders:admin"}}}, {Name: "any"}},
		Routes: []policy.Route{{Host: "admin.example.com", Policy: "admin"}, {Methods: []string{"DELETE"}, Path: "/**", Policy: "admin"},
			{Path: "/admin/**", Policy: "admin"}, {Path: "/**", Policy: "any"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	a := rtServer(t, server.Options{}, set)
	tok := mint(claims(nil))
	ok := envoyRequest("GET", "/x", bearer(tok))
	for i := 0; i < 2; i++ {
		if c := code(a.Check(t.Context(), ok)); c != codes.OK {
			t.Fatalf("warm %v", c)
		}
	}
	for name, req := range map[string]*authv3.CheckRequest{
		"path":      envoyRequest("GET", "/admin/x", bearer(tok)),
		"path-case": envoyRequest("GET", "/%61dmin/x", bearer(tok)),
		"method":    envoyRequest("delete", "/x", bearer(tok)),
		"query-ovr": envoyRequest("GET", "/x?_method=DELETE", bearer(tok)),
		// attributes.request.http.query when the path holds none: its
		// _method is an override as the path's is.
		"query-field-ovr": func() *authv3.CheckRequest {
			r := envoyRequest("GET", "/x", bearer(tok))
			r.Attributes.Request.Http.Query = "_method=DELETE"
			return r
		}(),
		"host": func() *authv3.CheckRequest {
			r := envoyRequest("GET", "/x", bearer(tok))
			r.Attributes.Request.Http.Host = "ADMIN.example.com.:443"
			return r
		}(),
	} {
		if c := code(a.Check(t.Context(), req)); c != codes.PermissionDenied {
			t.Errorf("%s: %v, want PERMISSION_DENIED", name, c)
		}
	}
}

// TestSourceCertNoFallback: with source.certificate unreadable or blank,
// there is no fallback to a client's XFCC header.
func TestSourceCertNoFallback(t *testing.T) {
	der := servertest.ClientCert(t, "c")
	sum := sha256.Sum256(der)
	a := rtServer(t, server.Options{
		SenderConstraints: map[string]server.SenderConstraint{servertest.IssuerA: {MTLS: server.ConstraintOptional}},
		ClientCert:        server.ClientCertSource{XFCC: true},
	}, nil)
	bound := mint(claims(map[string]any{"cnf": map[string]any{"x5t#S256": mtls.Thumbprint(der)}}))
	for _, src := range []string{"garbage", "   ", "%20"} {
		req := envoyRequest("GET", "/x", map[string]string{"authorization": "Bearer " + bound, "x-forwarded-client-cert": "Hash=" + hex.EncodeToString(sum[:])})
		req.Attributes.Source.Certificate = src
		if c := code(a.Check(t.Context(), req)); c == codes.OK {
			t.Errorf("source.certificate %q with a client XFCC: OK", src)
		}
	}
}

// TestStripAuthorizationAnonymous: strip_authorization applies to an
// anonymous allowed answer too (it was left out, and a client's
// Authorization reached the upstream).
func TestStripAuthorizationAnonymous(t *testing.T) {
	set, err := policy.New(policy.Options{
		Policies: []policy.Spec{{Name: "public", AllowAnonymous: true}},
		Routes:   []policy.Route{{Path: "/**", Policy: "public"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	a := rtServer(t, server.Options{StripAuthorization: true}, set)
	resp, err := a.Check(t.Context(), envoyRequest("GET", "/public/x", map[string]string{"authorization": "Basic Zm9vOmJhcg=="}))
	if code(resp, err) == codes.OK && !slices.Contains(resp.GetOkResponse().GetHeadersToRemove(), "authorization") {
		t.Errorf("strip_authorization: anonymous OK keeps Authorization (removes %v)", resp.GetOkResponse().GetHeadersToRemove())
	}
}

// TestMergedClientCertHeader: Envoy's CheckRequest headers map joins a
// repeated header with ','. A client holding a stolen certificate-bound
// token sends the victim's (public) certificate in mtls.client_cert_header;
// a proxy that appends its own (Envoy's request_headers_to_add default,
// APPEND_IF_EXISTS_OR_ADD) makes the map value "<victim>,<client's own>".
// The first certificate was hashed and the rest ignored, so the binding
// held for a client that has only its own key. A header present twice is
// binding_mismatch (DECISIONS "mTLS sources"), merged or not; header_map
// (two entries) is refused already.
func TestMergedClientCertHeader(t *testing.T) {
	victim, attacker := servertest.ClientCert(t, "victim"), servertest.ClientCert(t, "attacker")
	esc := func(der []byte) string {
		return url.PathEscape(string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})))
	}
	a := rtServer(t, server.Options{
		SenderConstraints: map[string]server.SenderConstraint{servertest.IssuerA: {MTLS: server.ConstraintRequired}},
		ClientCert:        server.ClientCertSource{Header: "X-Client-Cert"},
	}, nil)
	stolen := mint(claims(map[string]any{"cnf": map[string]any{"x5t#S256": mtls.Thumbprint(victim)}}))
	// Control: the attacker's own certificate alone does not pass.
	req := envoyRequest("GET", "/x", map[string]string{"authorization": "Bearer " + stolen, "x-client-cert": esc(attacker)})
	if c := code(a.Check(t.Context(), req)); c != codes.Unauthenticated {
		t.Fatalf("attacker's certificate alone: %v, want UNAUTHENTICATED", c)
	}
	// Two entries in header_map: refused.
	req = envoyRequest("GET", "/x", map[string]string{"authorization": "Bearer " + stolen})
	req.Attributes.Request.Http.HeaderMap = &corev3.HeaderMap{Headers: []*corev3.HeaderValue{
		{Key: "authorization", Value: "Bearer " + stolen}, {Key: "x-client-cert", Value: esc(victim)}, {Key: "x-client-cert", Value: esc(attacker)}}}
	if c := code(a.Check(t.Context(), req)); c != codes.Unauthenticated {
		t.Errorf("header_map with two certificates: %v, want UNAUTHENTICATED", c)
	}
	// The same two headers merged into the headers map.
	req = envoyRequest("GET", "/x", map[string]string{"authorization": "Bearer " + stolen, "x-client-cert": esc(victim) + "," + esc(attacker)})
	if c := code(a.Check(t.Context(), req)); c != codes.Unauthenticated {
		t.Errorf("merged headers value <victim>,<attacker>: %v, want UNAUTHENTICATED", c)
	}
}
