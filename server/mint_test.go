package server

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/MicahParks/keyfunc/v3"
	"github.com/golang-jwt/jwt/v5"

	"github.com/jwksverify/jwksverify/internal/testkeys"
	mintpkg "github.com/jwksverify/jwksverify/mint"
	"github.com/jwksverify/jwksverify/request"
	"github.com/jwksverify/jwksverify/server/internal/servertest"
)

// newMintEnv is newPolicyEnv with a minter whose keys file holds one P-256
// key, orders-read minting for orders-service; edit changes the minter's
// options.
func newMintEnv(t testing.TB, edit func(*mintpkg.Options), serverEdit func(*Options)) (*env, *mintpkg.Minter) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "mint.jwks")
	if err := os.WriteFile(path, testkeys.PrivateJWKS(testkeys.JWK{Key: testkeys.Private(testkeys.EC256B), Kid: "m1"}), 0o600); err != nil {
		t.Fatal(err)
	}
	mo := mintpkg.Options{Issuer: "https://jwksverify.internal", KeysFile: path, SigningKid: "m1", TTL: time.Minute, Logger: slog.New(slog.DiscardHandler)}
	if edit != nil {
		edit(&mo)
	}
	m, err := mintpkg.New(mo)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	p, err := mintpkg.NewPolicy(mintpkg.PolicySpec{Audience: "orders-service", Claims: map[string]string{"scope": "scope"}})
	if err != nil {
		t.Fatal(err)
	}
	e := newPolicyEnvWith(t, nil, func(o *Options) {
		o.Minter, o.MintPolicies = m, map[string]*mintpkg.Policy{"orders-read": p}
		if serverEdit != nil {
			serverEdit(o)
		}
	})
	return e, m
}

// parseMinted verifies tok against m's JWKS at the env's clock.
func parseMinted(t *testing.T, m *mintpkg.Minter, e *env, tok string) (map[string]any, jwt.MapClaims) {
	t.Helper()
	kf, err := keyfunc.NewJWKSetJSON(m.JWKS())
	if err != nil {
		t.Fatal(err)
	}
	p, err := jwt.Parse(tok, kf.Keyfunc, jwt.WithTimeFunc(e.clock.Now), jwt.WithAudience("orders-service"), jwt.WithIssuer("https://jwksverify.internal"))
	if err != nil {
		t.Fatalf("the minted token does not verify: %v", err)
	}
	return p.Header, p.Claims.(jwt.MapClaims)
}

func TestForwardAuthMints(t *testing.T) {
	e, m := newMintEnv(t, nil, nil)
	valid := tokens()["valid"]
	for _, tc := range []struct {
		name       string
		method     string
		uri        string
		wantStatus int
		wantMinted bool
	}{
		{"minting-policy", "GET", "/orders/1", http.StatusOK, true},
		{"policy-without-mint", "POST", "/orders/1", http.StatusOK, false},
		{"forbidden", "GET", "/admin/x", http.StatusForbidden, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			e.handler.ServeHTTP(w, nginxAuthz(tc.method, tc.uri, valid, nil))
			if w.Code != tc.wantStatus {
				t.Fatalf("status = %d, want %d", w.Code, tc.wantStatus)
			}
			got := w.Header().Get("Authorization")
			if (got != "") != tc.wantMinted {
				t.Fatalf("Authorization = %q, want minted %v", got, tc.wantMinted)
			}
			if !tc.wantMinted {
				return
			}
			jws, ok := strings.CutPrefix(got, "Bearer ")
			if !ok || jws == valid {
				t.Fatalf("Authorization = %q, want Bearer and a minted token", got)
			}
			h, c := parseMinted(t, m, e, jws)
			if h["typ"] != "at+jwt" || h["kid"] != "m1" || h["alg"] != "ES256" {
				t.Errorf("header = %v", h)
			}
			if c["sub"] != "alice" || c["scope"] != "orders:read orders:write" || c["big"] != nil {
				t.Errorf("claims = %v", c)
			}
			w2 := httptest.NewRecorder()
			e.handler.ServeHTTP(w2, nginxAuthz(tc.method, tc.uri, valid, nil))
			if w2.Header().Get("Authorization") != got {
				t.Error("the second answer minted again instead of reusing the cached token")
			}
		})
	}
}

func TestMintWithStripAuthorization(t *testing.T) {
	e, _ := newMintEnv(t, nil, func(o *Options) { o.StripAuthorization = true })
	for _, tc := range []struct {
		name, method string
		wantRemove   string
	}{
		{"minted-replaces", "GET", ""},
		{"not-minted-strips", "POST", "authorization"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			e.handler.ServeHTTP(w, nginxAuthz(tc.method, "/orders/1", tokens()["valid"], nil))
			if got := w.Header().Get("X-Envoy-Auth-Headers-To-Remove"); got != tc.wantRemove {
				t.Errorf("X-Envoy-Auth-Headers-To-Remove = %q, want %q", got, tc.wantRemove)
			}
		})
	}
}

func TestMintFailureFailsClosed(t *testing.T) {
	e, _ := newMintEnv(t, func(o *mintpkg.Options) { o.Rand = failingReader{} }, nil)
	w := httptest.NewRecorder()
	e.handler.ServeHTTP(w, nginxAuthz("GET", "/orders/1", tokens()["valid"], nil))
	if w.Code != http.StatusServiceUnavailable || w.Header().Get("Authorization") != "" {
		t.Errorf("status = %d, Authorization %q; want 503 without a token", w.Code, w.Header().Get("Authorization"))
	}
}

type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, errors.New("no entropy") }

func TestVerifyMint(t *testing.T) {
	e, m := newMintEnv(t, nil, nil)
	for _, tc := range []struct {
		name, body string
		wantMinted bool
	}{
		{"asked", `{"token":%q,"policy":"orders-read","mint":true}`, true},
		{"not-asked", `{"token":%q,"policy":"orders-read"}`, false},
		{"policy-without-mint", `{"token":%q,"policy":"orders-write","mint":true}`, false},
		{"no-policy", `{"token":%q,"mint":true}`, false},
		{"id-token", `{"token":%q,"kind":"id_token","policy":"orders-read","mint":true}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			tok := tokens()["valid"]
			if tc.name == "id-token" {
				// An ID token the policy allows: never minted from.
				tok = servertest.IDToken(nil, map[string]any{"scope": "orders:read"})
			}
			r := httptest.NewRequest(http.MethodPost, "/v1/verify", strings.NewReader(strings.Replace(tc.body, "%q", `"`+tok+`"`, 1)))
			e.handler.ServeHTTP(w, r)
			var body struct {
				Valid  bool   `json:"valid"`
				Minted string `json:"minted"`
			}
			if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil || !body.Valid {
				t.Fatalf("body = %s (%v)", w.Body, err)
			}
			if (body.Minted != "") != tc.wantMinted {
				t.Fatalf("minted = %q, want minted %v", body.Minted, tc.wantMinted)
			}
			if tc.wantMinted {
				parseMinted(t, m, e, body.Minted)
			}
		})
	}
}

func TestJWKSEndpoint(t *testing.T) {
	for _, separate := range []bool{false, true} {
		e, m := newMintEnv(t, nil, func(o *Options) { o.SeparateAdmin = separate })
		for name, h := range map[string]http.Handler{"main": e.srv.Handler(), "admin": e.srv.AdminHandler()} {
			t.Run(name+map[bool]string{true: "-separate", false: ""}[separate], func(t *testing.T) {
				w := httptest.NewRecorder()
				h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, JWKSPath, nil))
				if w.Code != http.StatusOK || w.Header().Get("Cache-Control") != "public, max-age=300" {
					t.Fatalf("status %d, Cache-Control %q", w.Code, w.Header().Get("Cache-Control"))
				}
				if w.Body.String() != string(m.JWKS()) || strings.Contains(w.Body.String(), `"d"`) {
					t.Errorf("body = %s", w.Body)
				}
			})
		}
	}
	t.Run("no-minter", func(t *testing.T) {
		e := newPolicyEnv(t, nil)
		w := httptest.NewRecorder()
		e.handler.ServeHTTP(w, httptest.NewRequest(http.MethodGet, JWKSPath, nil))
		if w.Code != http.StatusNotFound {
			t.Errorf("status = %d, want 404", w.Code)
		}
	})
}

func TestMintOptionsRefused(t *testing.T) {
	for _, tc := range []struct {
		name    string
		header  string
		pols    func(p *mintpkg.Policy) map[string]*mintpkg.Policy
		sources []TokenSource
	}{
		{"unknown-policy", "", func(p *mintpkg.Policy) map[string]*mintpkg.Policy { return map[string]*mintpkg.Policy{"nope": p} }, nil},
		{"claim-header", "X-Auth-Subject", nil, nil},
		// A CGI upstream reads X-Auth_Subject as X-Auth-Subject: the
		// claim's value where it expects the minted token.
		{"claim-header-twin", "X-Auth_Subject", nil, nil},
		{"reserved-header", "Host", nil, nil},
		// The proxies drop a client's own mint header before the call: a
		// token source there (or at a CGI twin of it) would never arrive.
		{"token-source-header", "X-Internal-Token", nil, []TokenSource{{Header: "X-Internal-Token"}}},
		{"token-source-twin", "X-Internal-Token", nil, []TokenSource{{Header: "X_Internal_Token"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "mint.jwks")
			_ = os.WriteFile(path, testkeys.PrivateJWKS(testkeys.JWK{Key: testkeys.Private(testkeys.EC256B), Kid: "m1"}), 0o600)
			m, err := mintpkg.New(mintpkg.Options{Issuer: "i", KeysFile: path, SigningKid: "m1", Header: tc.header})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			p, _ := mintpkg.NewPolicy(mintpkg.PolicySpec{Audience: "a"})
			e := newPolicyEnv(t, nil)
			o := Options{Verifier: e.v, ClaimsToHeaders: map[string]map[string]string{issuerA: {"sub": "X-Auth-Subject"}}, Minter: m, Proxy: e.srv.proxy, Policies: e.srv.policies, TokenSources: tc.sources}
			if tc.pols != nil {
				o.MintPolicies = tc.pols(p)
			}
			if _, err := New(o); !errors.Is(err, ErrInvalidOptions) {
				t.Errorf("New() = %v, want ErrInvalidOptions", err)
			}
		})
	}
}

// TestIntrospectionJWT: /introspect asked for application/token-introspection+jwt
// answers RFC 9701: a JWS signed by the minting key, typ
// token-introspection+jwt, iss, aud = the calling client, iat, and
// token_introspection holding the RFC 7662 answer.
func TestIntrospectionJWT(t *testing.T) {
	e, m := newMintEnv(t, nil, func(o *Options) {
		o.IntrospectionClients = []IntrospectionClient{{ID: "gateway", Secret: "gateway-secret-value"}, {ID: "other", Secret: "other-secret-value"}}
	})
	for _, tc := range []struct {
		name, token, accept string
		bearer              bool
		wantJWT, wantActive bool
	}{
		{"active", tokens()["valid"], "application/token-introspection+jwt", false, true, true},
		{"inactive", tokens()["expired"], "application/json;q=0.5, application/token-introspection+jwt", false, true, false},
		{"bearer-client", tokens()["valid"], "application/token-introspection+jwt", true, true, true},
		{"json-asked", tokens()["valid"], "application/json", false, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/introspect", strings.NewReader("token="+tc.token))
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			if tc.bearer {
				r.Header.Set("Authorization", "Bearer other-secret-value")
			} else {
				r.SetBasicAuth("gateway", "gateway-secret-value")
			}
			r.Header.Set("Accept", tc.accept)
			w := httptest.NewRecorder()
			e.handler.ServeHTTP(w, r)
			if w.Code != http.StatusOK {
				t.Fatalf("status = %d: %s", w.Code, w.Body)
			}
			if !tc.wantJWT {
				if !strings.HasPrefix(w.Header().Get("Content-Type"), "application/json") {
					t.Errorf("Content-Type = %q", w.Header().Get("Content-Type"))
				}
				return
			}
			if w.Header().Get("Content-Type") != "application/token-introspection+jwt" {
				t.Errorf("Content-Type = %q", w.Header().Get("Content-Type"))
			}
			kf, _ := keyfunc.NewJWKSetJSON(m.JWKS())
			p, err := jwt.Parse(w.Body.String(), kf.Keyfunc, jwt.WithoutClaimsValidation())
			if err != nil {
				t.Fatalf("the answer does not verify: %v", err)
			}
			c := p.Claims.(jwt.MapClaims)
			wantAud := map[bool]string{false: "gateway", true: "other"}[tc.bearer]
			if p.Header["typ"] != "token-introspection+jwt" || c["iss"] != "https://jwksverify.internal" || c["aud"] != wantAud || c["iat"] != float64(e.clock.Now().Unix()) {
				t.Errorf("header %v, claims %v", p.Header, c)
			}
			ti, _ := c["token_introspection"].(map[string]any)
			if ti["active"] != tc.wantActive || (tc.wantActive && ti["sub"] != "alice") || (!tc.wantActive && len(ti) != 1) {
				t.Errorf("token_introspection = %v", ti)
			}
		})
	}
}

// TestEnvoyHTTPRemovesUnmintedHeader: behind Envoy over HTTP, a route whose
// policy mints nothing answers X-Envoy-Auth-Headers-To-Remove with the
// mint header (Envoy would keep a client's own copy of a header the answer
// does not carry); a minting route carries the token instead; other
// presets' files drop it themselves.
func TestEnvoyHTTPRemovesUnmintedHeader(t *testing.T) {
	for _, tc := range []struct {
		name       string
		proxy      request.Proxy
		path       string
		strip      bool
		wantRemove []string
	}{
		// The CGI twins of the claim headers and of the mint header go
		// first, minted or not: a CGI upstream reads x_internal_token as
		// x-internal-token.
		{"envoy-plain", request.Envoy, "/v1/authz/public/x", false, append(answerTwins(), "x-internal-token")},
		{"envoy-plain-strip", request.Envoy, "/v1/authz/public/x", true, append(answerTwins(), "x-internal-token", "authorization")},
		{"envoy-minting", request.Envoy, "/v1/authz/orders/1", false, answerTwins()},
		{"nginx-plain", request.Nginx, "", false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, _ := newMintEnv(t, func(o *mintpkg.Options) { o.Header = "X-Internal-Token" }, func(o *Options) {
				o.Proxy, o.StripAuthorization = tc.proxy, tc.strip
			})
			tok := mint(claims(map[string]any{"scope": "orders:read"}))
			var r *http.Request
			if tc.proxy == request.Envoy {
				r = httptest.NewRequest(http.MethodGet, "http://api.example.com"+tc.path, nil)
				r.Header.Set("Authorization", "Bearer "+tok)
			} else {
				r = nginxAuthz("GET", "/public/x", tok, nil)
			}
			w := do(e.handler, r)
			if w.Code != http.StatusOK {
				t.Fatalf("status %d, want 200", w.Code)
			}
			if got := envoyRemoves(w.Header()); !slices.Equal(got, tc.wantRemove) {
				t.Errorf("X-Envoy-Auth-Headers-To-Remove = %q, want %q", got, tc.wantRemove)
			}
		})
	}
}

// answerTwins are the CGI twins of newMintEnv's claim headers and of its
// X-Internal-Token, as an Envoy answer removes them.
func answerTwins() []string {
	return []string{"x_auth-scope", "x-auth_scope", "x_auth_scope", "x_auth-subject", "x-auth_subject", "x_auth_subject",
		"x_internal-token", "x-internal_token", "x_internal_token"}
}

// TestVerifyMintClientCertNeedsAPIAuth: /v1/verify's "client_cert" is the
// caller's word. Without api_auth anyone may send one, so a stolen
// certificate-bound token with its owner's (public) certificate got a
// minted bearer token for the upstream: "mint": true beside "client_cert"
// is 400 there. A verdict alone still takes the certificate.
func TestVerifyMintClientCertNeedsAPIAuth(t *testing.T) {
	e, _ := newMintEnv(t, nil, nil)
	tok := tokens()["valid"]
	for _, tc := range []struct {
		name, body string
		want       int
	}{
		{"mint-with-cert", `{"token":%q,"policy":"orders-read","mint":true,"client_cert":"MIIB"}`, http.StatusBadRequest},
		{"verdict-with-cert", `{"token":%q,"policy":"orders-read","client_cert":"MIIB"}`, http.StatusOK},
		{"mint-without-cert", `{"token":%q,"policy":"orders-read","mint":true}`, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			e.handler.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/v1/verify", strings.NewReader(strings.Replace(tc.body, "%q", `"`+tok+`"`, 1))))
			if w.Code != tc.want || (tc.want == http.StatusBadRequest && strings.Contains(w.Body.String(), "minted")) {
				t.Errorf("status %d, body %s; want %d", w.Code, w.Body, tc.want)
			}
		})
	}
}
