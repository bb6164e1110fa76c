package service

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/internal/testkeys"
)

// mintDoc is the configuration of TestReloadAppliesMintChanges with the
// values of set replaced.
func mintDoc(dir string, set map[string]string) string {
	v := map[string]string{
		"MISS": "https://jwksverify.internal", "KID": "k1", "MTTL": "10m", "MHDR": "X-Internal-Token",
		"POLMINT": ", mint: {audience: a, claims: {email: email}}",
	}
	return fillDoc(`state_dir: `+dir+`
forward_auth: {proxy: envoy}
token_cache: {max_entries: 100}
mint: {issuer: MISS, keys_file: mint.jwks, signing_kid: KID, ttl: MTTL, header: MHDR}
issuers:
  - issuer: https://a.example/
    jwks_file: jwks.json
    audiences: [orders]
policies:
  - {name: p, scopes: {any: [orders:read]}POLMINT}
routes:
  - {path: /orders/**, policy: p}
`, v, set)
}

// TestReloadAppliesMintChanges: a reload that changes what a policy mints
// (its audience, its claims, whether it mints at all) or how the minter
// mints (its issuer, signing key, lifetime, header) applies to the very next
// request on forward-auth and gRPC, however the token minted before it was
// cached (the minter's cache, gRPC's cached OK answer): no upstream gets a
// token minted under the old configuration.
func TestReloadAppliesMintChanges(t *testing.T) {
	now := time.Now()
	tok := mintRS256(map[string]any{"iss": "https://a.example/", "aud": "orders", "sub": "alice", "scope": "orders:read",
		"email": "alice@example.com", "iat": now.Unix(), "nbf": now.Unix(), "exp": now.Add(time.Hour).Unix()})
	// minted is what the upstream gets: the header the token is in, its kid
	// and its claims; nil claims when no token is minted.
	type minted struct {
		header, kid string
		claims      map[string]any
	}
	withinAMinute := func(t *testing.T, fe string, m minted) {
		if exp, _ := m.claims["exp"].(float64); exp > float64(time.Now().Add(time.Minute).Unix()+1) {
			t.Errorf("%s: minted exp = %v, want within a minute", fe, m.claims["exp"])
		}
	}
	tests := []struct {
		name  string
		tight map[string]string
		check func(t *testing.T, fe string, m minted)
	}{
		{"audience-changed", map[string]string{"POLMINT": ", mint: {audience: b, claims: {email: email}}"},
			func(t *testing.T, fe string, m minted) {
				if m.claims["aud"] != "b" {
					t.Errorf("%s: minted aud = %v, want b", fe, m.claims["aud"])
				}
			}},
		{"claim-dropped", map[string]string{"POLMINT": ", mint: {audience: a}"},
			func(t *testing.T, fe string, m minted) {
				if _, ok := m.claims["email"]; ok || m.claims == nil {
					t.Errorf("%s: minted claims = %v, want no email", fe, m.claims)
				}
			}},
		{"policy-mints-nothing", map[string]string{"POLMINT": ""},
			func(t *testing.T, fe string, m minted) {
				if m.claims != nil {
					t.Errorf("%s: minted %v, want nothing", fe, m.claims)
				}
			}},
		{"policy-ttl-shortened", map[string]string{"POLMINT": ", mint: {audience: a, claims: {email: email}, ttl: 1m}"},
			withinAMinute},
		{"minter-ttl-shortened", map[string]string{"MTTL": "1m"},
			withinAMinute},
		{"minter-issuer-changed", map[string]string{"MISS": "https://other.internal"},
			func(t *testing.T, fe string, m minted) {
				if m.claims["iss"] != "https://other.internal" {
					t.Errorf("%s: minted iss = %v, want https://other.internal", fe, m.claims["iss"])
				}
			}},
		{"signing-key-changed", map[string]string{"KID": "k2"},
			func(t *testing.T, fe string, m minted) {
				if m.kid != "k2" {
					t.Errorf("%s: minted kid = %q, want k2", fe, m.kid)
				}
			}},
		{"header-changed", map[string]string{"MHDR": "X-Upstream-Token"},
			func(t *testing.T, fe string, m minted) {
				if m.header != "X-Upstream-Token" {
					t.Errorf("%s: minted into %q, want X-Upstream-Token", fe, m.header)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "jwks.json"), testJWKS(), 0o600); err != nil {
				t.Fatal(err)
			}
			k1 := testkeys.JWK{Key: testkeys.Private(testkeys.EC256A), Kid: "k1"}
			k2 := testkeys.JWK{Key: testkeys.Private(testkeys.EC256B), Kid: "k2"}
			if err := os.WriteFile(filepath.Join(dir, "mint.jwks"), testkeys.PrivateJWKS(k1, k2), 0o600); err != nil {
				t.Fatal(err)
			}
			d := &diffService{svc: startPlan(t, mintDoc(dir, nil), dir)}
			d.grpc = grpcClient(t, d.svc)
			rq := diffRequest{method: "GET", path: "/orders/1", headers: map[string]string{"Authorization": "Bearer " + tok}}
			read := func(fe string, v verdict, h http.Header) minted {
				t.Helper()
				if !v.allowed {
					t.Fatalf("%s: %+v, want allowed", fe, v)
				}
				for _, name := range []string{"X-Internal-Token", "X-Upstream-Token"} {
					jwt := h.Get(name)
					if jwt == "" {
						continue
					}
					parts := strings.Split(jwt, ".")
					if len(parts) != 3 {
						t.Fatalf("%s: %s = %q, not a JWT", fe, name, jwt)
					}
					var hdr struct{ Kid string }
					var claims map[string]any
					for i, into := range []any{&hdr, &claims} {
						b, err := base64.RawURLEncoding.DecodeString(parts[i])
						if err != nil {
							t.Fatal(err)
						}
						if err := json.Unmarshal(b, into); err != nil {
							t.Fatal(err)
						}
					}
					return minted{header: name, kid: hdr.Kid, claims: claims}
				}
				return minted{}
			}
			ask := func() map[string]minted {
				fa, fah := forwardAuthHeaders(d, rq)
				gv, gh := grpcHeaders(t, d, rq)
				return map[string]minted{"forward-auth": read("forward-auth", fa, fah), "grpc": read("grpc", gv, gh)}
			}
			for range 2 { // twice: the minter's cache and gRPC's answer filled
				for fe, m := range ask() {
					if m.claims["aud"] != "a" {
						t.Fatalf("%s before the reload: minted %+v, want aud a", fe, m)
					}
				}
			}
			reloadDoc(t, d.svc, mintDoc(dir, tt.tight), dir)
			for fe, m := range ask() {
				tt.check(t, fe, m)
			}
		})
	}
}
