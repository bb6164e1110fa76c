package extauthz

import (
	"log/slog"
	"slices"
	"testing"

	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	"google.golang.org/grpc/codes"

	"github.com/jwksverify/jwksverify/policy"
	"github.com/jwksverify/jwksverify/server"
	"github.com/jwksverify/jwksverify/server/internal/servertest"
)

// TestCheckClearsEveryIdentityHeader: an OK answer sets the claim headers
// of its decision and removes every other configured identity header, so
// that a copy a client sent of the issuer's header, under a policy with its
// own claims_to_headers, never reaches the upstream as if jwksverify had
// set it.
func TestCheckClearsEveryIdentityHeader(t *testing.T) {
	ve := servertest.NewEnv(t, servertest.Config{TokenCache: 10})
	set, err := policy.New(policy.Options{
		Policies: []policy.Spec{{Name: "own", Issuers: []string{servertest.IssuerA}, ClaimsToHeaders: map[string]string{"sub": "X-Policy-Subject"}}},
		Routes:   []policy.Route{{Path: "/own/**", Policy: "own"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Options{Verifier: ve.V, ClaimsToHeaders: servertest.ClaimsToHeaders(), Policies: set, Proxy: "envoy",
		Logger: slog.New(slog.NewJSONHandler(ve.Logs, nil)), Now: ve.Clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	g := startGRPC(t, &env{clock: ve.Clock, keysA: ve.KeysA, v: ve.V, srv: srv, logs: ve.Logs})
	tok := mint(claims(nil))
	for _, tt := range []struct {
		name       string
		path       string
		wantSet    map[string]string
		wantRemove []string
	}{
		{"issuer-headers", "/other", map[string]string{"x-auth-subject": "alice", "x-auth-scope": "orders:read orders:write"}, []string{"x-policy-subject"}},
		{"policy-headers", "/own/x", map[string]string{"x-policy-subject": "alice"}, []string{"x-auth-scope", "x-auth-subject"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			req := envoyRequest("GET", tt.path, map[string]string{
				"authorization": "Bearer " + tok, "x-auth-subject": "admin", "x-policy-subject": "admin", "x-auth-scope": "admin",
			})
			resp, err := g.authz.Check(t.Context(), req)
			if err != nil {
				t.Fatal(err)
			}
			set, remove := okHeaders(t, resp)
			remove, twins := withoutTwins(remove, "X-Auth-Scope", "X-Auth-Subject", "X-Policy-Subject")
			if !twins {
				t.Errorf("Check() removes %v; want every CGI twin of the identity headers too", remove)
			}
			slices.Sort(remove)
			if !equalMaps(set, tt.wantSet) || !slices.Equal(remove, tt.wantRemove) {
				t.Fatalf("Check() sets %v, removes %v; want %v, %v", set, remove, tt.wantSet, tt.wantRemove)
			}
		})
	}
}

// TestCheckHeaderUnderscoreTwin: over gRPC too, a header that CGI and
// FastCGI read as the token source's (x_token for X-Token) makes the source
// ambiguous, in the headers map and in header_map.
func TestCheckHeaderUnderscoreTwin(t *testing.T) {
	valid, forged := tokens()["valid"], "eyJhbGciOiJub25lIn0.eyJzdWIiOiJhZG1pbiJ9."
	g := startGRPC(t, newEnv(t, envConfig{sources: []server.TokenSource{{Header: "X-Token"}}}))
	for _, tt := range []struct {
		name   string
		req    *authv3.CheckRequest
		wantOK bool
	}{
		{"alone", envoyRequest("GET", "/", map[string]string{"x-token": valid}), true},
		{"twin", envoyRequest("GET", "/", map[string]string{"x-token": valid, "x_token": forged}), false},
		{"twin-raw", rawHeaders(envoyRequest("GET", "/", map[string]string{"x-token": valid}), [2]string{"X_Token", forged}), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := g.authz.Check(t.Context(), tt.req)
			if err != nil {
				t.Fatal(err)
			}
			if ok := codes.Code(resp.GetStatus().GetCode()) == codes.OK; ok != tt.wantOK {
				t.Fatalf("Check() OK = %v, want %v (%v)", ok, tt.wantOK, resp.GetStatus())
			}
		})
	}
}
