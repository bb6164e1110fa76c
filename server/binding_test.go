package server

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/jwksverify/jwksverify/cache"
	"github.com/jwksverify/jwksverify/dpop"
	"github.com/jwksverify/jwksverify/internal/testkeys"
	"github.com/jwksverify/jwksverify/mtls"
	"github.com/jwksverify/jwksverify/policy"
	"github.com/jwksverify/jwksverify/replay"
	"github.com/jwksverify/jwksverify/request"
	"github.com/jwksverify/jwksverify/server/internal/servertest"
)

// bindEnv is a server whose issuer A checks DPoP and mTLS bindings in
// mode, behind nginx, reading the client certificate from X-Client-Cert.
type bindEnv struct {
	*env
	bm *bindingCounts
}

type bindingCounts struct {
	recordedMetrics
	mu sync.Mutex
	n  map[string]int
}

func (b *bindingCounts) BindingChecked(issuer, kind, outcome string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.n[issuer+" "+kind+" "+outcome]++
}

func newBindEnv(t *testing.T, mode ConstraintMode) *bindEnv {
	t.Helper()
	return newBindEnvPolicies(t, mode, nil)
}

// newBindEnvPolicies is newBindEnv with the authorization policies set.
func newBindEnvPolicies(t *testing.T, mode ConstraintMode, set *policy.Set) *bindEnv {
	t.Helper()
	return newBindEnvWith(t, SenderConstraint{DPoP: mode, MTLS: mode}, set, nil)
}

// newDPoPChecker is a DPoP checker over a memory replay store of its own.
func newDPoPChecker(t testing.TB) *dpop.Checker {
	t.Helper()
	store, err := replay.NewMemory(1000)
	if err != nil {
		t.Fatal(err)
	}
	checker, err := dpop.New(dpop.Options{Replay: store})
	if err != nil {
		t.Fatal(err)
	}
	return checker
}

// newBindEnvWith is newBindEnvPolicies with issuer A's constraint sc (the
// zero one configures none, the DPoP checker all the same), and the
// options edited by edit when not nil.
func newBindEnvWith(t *testing.T, sc SenderConstraint, set *policy.Set, edit func(*Options)) *bindEnv {
	t.Helper()
	ve := servertest.NewEnv(t, servertest.Config{NoDown: true})
	checker := newDPoPChecker(t)
	bm := &bindingCounts{n: map[string]int{}}
	e := &env{clock: ve.Clock, keysA: ve.KeysA, v: ve.V, logs: ve.Logs, metrics: &bm.recordedMetrics}
	o := Options{
		Verifier:          ve.V,
		Proxy:             request.Nginx,
		Policies:          set,
		SenderConstraints: map[string]SenderConstraint{issuerA: sc},
		DPoP:              checker,
		ClientCert:        ClientCertSource{Header: "X-Client-Cert"},
		IntrospectionClients: []IntrospectionClient{
			{ID: "gateway", Secret: "gateway-secret-value"},
		},
		Metrics: bm,
		Logger:  slog.New(slog.NewJSONHandler(e.logs, nil)),
		Now:     e.clock.Now,
	}
	if edit != nil {
		edit(&o)
	}
	var err error
	e.srv, err = New(o)
	if err != nil {
		t.Fatal(err)
	}
	e.handler = e.srv.Handler()
	return &bindEnv{env: e, bm: bm}
}

func jktOf(t *testing.T, name string) string {
	k, err := cache.NewKey(testkeys.Public(name), cache.KeyMeta{})
	if err != nil {
		t.Fatal(err)
	}
	return k.Thumbprint
}

// mintProof signs a DPoP proof with the named key for token.
func mintProof(name, alg, jti, htm, htu, token string) string {
	s := sha256.Sum256([]byte(token))
	return testkeys.Mint(alg, testkeys.Private(name),
		map[string]any{"typ": "dpop+jwt", "jwk": testkeys.JWKJSON(testkeys.JWK{Key: testkeys.Public(name)})},
		map[string]any{"jti": jti, "htm": htm, "htu": htu, "iat": servertest.Epoch.Unix(), "ath": base64.RawURLEncoding.EncodeToString(s[:])})
}

// dpopRequest is a forward-auth call for POST https://api.example.com/orders/1.
func dpopRequest(auth string, proofs ...string) *http.Request {
	r := httptest.NewRequest(http.MethodGet, "/v1/authz", nil)
	r.Header.Set("X-Original-Method", "POST")
	r.Header.Set("X-Original-Uri", "/orders/1?page=2")
	r.Header.Set("X-Original-Host", "api.example.com")
	r.Header.Set("X-Original-Proto", "https")
	if auth != "" {
		r.Header.Set("Authorization", auth)
	}
	for _, p := range proofs {
		r.Header.Add("DPoP", p)
	}
	return r
}

const htu = "https://api.example.com/orders/1"

func TestBindingForwardAuth(t *testing.T) {
	jkt := jktOf(t, testkeys.EC256B)
	bound := mint(claims(map[string]any{"cnf": map[string]any{"jkt": jkt}}))
	unbound := mint(claims(nil))
	certA, certB := servertest.ClientCert(t, "client-a"), servertest.ClientCert(t, "client-b")
	certBound := mint(claims(map[string]any{"cnf": map[string]any{"x5t#S256": mtls.Thumbprint(certA)}}))
	escaped := func(der []byte) string {
		return url.PathEscape(string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})))
	}
	other := mint(claims(map[string]any{"cnf": map[string]any{"jwk": map[string]any{"kty": "EC"}}}))

	tests := []struct {
		name      string
		mode      ConstraintMode
		req       func(n int) *http.Request
		wantCode  int
		wantClass string
	}{
		{"bearer-unbound-optional", ConstraintOptional, func(int) *http.Request { return dpopRequest("Bearer " + unbound) }, 200, ""},
		{"dpop-bound-valid", ConstraintOptional, func(n int) *http.Request {
			return dpopRequest("DPoP "+bound, mintProof(testkeys.EC256B, "ES256", "j1", "POST", htu, bound))
		}, 200, ""},
		{"dpop-eddsa-valid", ConstraintOptional, func(n int) *http.Request {
			tok := mint(claims(map[string]any{"cnf": map[string]any{"jkt": jktOf(t, testkeys.Ed25519A)}}))
			return dpopRequest("DPoP "+tok, mintProof(testkeys.Ed25519A, "EdDSA", "j1", "POST", htu, tok))
		}, 200, ""},
		{"bound-as-bearer", ConstraintOptional, func(int) *http.Request { return dpopRequest("Bearer " + bound) }, 401, "binding_mismatch"},
		{"bound-as-bearer-with-proof", ConstraintOptional, func(int) *http.Request {
			return dpopRequest("Bearer "+bound, mintProof(testkeys.EC256B, "ES256", "j1", "POST", htu, bound))
		}, 401, "binding_mismatch"},
		{"proof-of-other-key", ConstraintOptional, func(int) *http.Request {
			return dpopRequest("DPoP "+bound, mintProof(testkeys.EC256A, "ES256", "j1", "POST", htu, bound))
		}, 401, "binding_mismatch"},
		{"dpop-scheme-unbound-token", ConstraintOptional, func(int) *http.Request {
			return dpopRequest("DPoP "+unbound, mintProof(testkeys.EC256B, "ES256", "j1", "POST", htu, unbound))
		}, 401, "binding_mismatch"},
		{"no-proof", ConstraintOptional, func(int) *http.Request { return dpopRequest("DPoP " + bound) }, 401, "invalid_dpop_proof"},
		{"two-proofs", ConstraintOptional, func(int) *http.Request {
			p := mintProof(testkeys.EC256B, "ES256", "j1", "POST", htu, bound)
			return dpopRequest("DPoP "+bound, p, p)
		}, 401, "invalid_dpop_proof"},
		{"htm-other", ConstraintOptional, func(int) *http.Request {
			return dpopRequest("DPoP "+bound, mintProof(testkeys.EC256B, "ES256", "j1", "GET", htu, bound))
		}, 401, "invalid_dpop_proof"},
		{"htu-other", ConstraintOptional, func(int) *http.Request {
			return dpopRequest("DPoP "+bound, mintProof(testkeys.EC256B, "ES256", "j1", "POST", "https://api.example.com/orders/2", bound))
		}, 401, "invalid_dpop_proof"},
		{"proxy-sent-no-proto", ConstraintOptional, func(int) *http.Request {
			r := dpopRequest("DPoP "+bound, mintProof(testkeys.EC256B, "ES256", "j1", "POST", htu, bound))
			r.Header.Del("X-Original-Proto")
			return r
		}, 401, "invalid_dpop_proof"},
		{"proof-for-other-token", ConstraintOptional, func(int) *http.Request {
			return dpopRequest("DPoP "+bound, mintProof(testkeys.EC256B, "ES256", "j1", "POST", htu, unbound))
		}, 401, "invalid_dpop_proof"},
		{"replayed-proof", ConstraintOptional, func(n int) *http.Request {
			return dpopRequest("DPoP "+bound, mintProof(testkeys.EC256B, "ES256", "same", "POST", htu, bound))
		}, 401, "invalid_dpop_proof"}, // the second of two (see below)
		{"unsupported-cnf", ConstraintOptional, func(int) *http.Request { return dpopRequest("Bearer " + other) }, 401, "binding_mismatch"},
		{"cert-bound-right-cert", ConstraintOptional, func(int) *http.Request {
			r := dpopRequest("Bearer " + certBound)
			r.Header.Set("X-Client-Cert", escaped(certA))
			return r
		}, 200, ""},
		{"cert-bound-other-cert", ConstraintOptional, func(int) *http.Request {
			r := dpopRequest("Bearer " + certBound)
			r.Header.Set("X-Client-Cert", escaped(certB))
			return r
		}, 401, "binding_mismatch"},
		{"cert-bound-no-cert", ConstraintOptional, func(int) *http.Request { return dpopRequest("Bearer " + certBound) }, 401, "binding_mismatch"},
		{"cert-bound-garbage-cert", ConstraintOptional, func(int) *http.Request {
			r := dpopRequest("Bearer " + certBound)
			r.Header.Set("X-Client-Cert", "not-a-certificate")
			return r
		}, 401, "binding_mismatch"},
		{"required-unbound-bearer", ConstraintRequired, func(int) *http.Request { return dpopRequest("Bearer " + unbound) }, 401, "binding_mismatch"},
		{"off-bound-as-bearer", ConstraintOff, func(int) *http.Request { return dpopRequest("Bearer " + bound) }, 200, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var e *bindEnv
			if tt.mode == ConstraintOff {
				e = &bindEnv{env: newEnv(t, envConfig{noDown: true})}
			} else {
				e = newBindEnv(t, tt.mode)
			}
			n := 1
			if strings.HasPrefix(tt.name, "replayed") {
				if w := do(e.handler, tt.req(0)); w.Code != 200 {
					t.Fatalf("first use = %d %s", w.Code, w.Body)
				}
				n = 2
			}
			w := do(e.handler, tt.req(n))
			wantAnswer(t, w, tt.wantCode, tt.wantClass)
			if tt.wantClass == "" {
				return
			}
			www := w.Header().Get("Www-Authenticate")
			if tt.wantClass == "invalid_dpop_proof" {
				if want := `DPoP error="invalid_dpop_proof", error_description="invalid_dpop_proof", algs="ES256 PS256 RS256 EdDSA"`; www != want {
					t.Errorf("WWW-Authenticate = %q, want %q", www, want)
				}
			} else if !strings.Contains(www, `error_description="`+tt.wantClass+`"`) {
				t.Errorf("WWW-Authenticate = %q", www)
			}
			if e.metrics.count(EndpointAuthz, issuerA, tt.wantClass) != 1 {
				t.Errorf("metrics: %s not counted once", tt.wantClass)
			}
		})
	}
}

// TestBindingBeforePolicy: under a policy, the sender constraint is
// checked once the token verified and before the policy runs: a token whose
// binding fails is a 401 of its binding class, never the policy's 403; a
// bound token with its proof is then judged by the policy.
func TestBindingBeforePolicy(t *testing.T) {
	set, err := policy.New(policy.Options{
		Policies: []policy.Spec{{Name: "orders-write", Scopes: policy.Scopes{All: []string{"orders:write"}}}},
		Routes:   []policy.Route{{Path: "/orders/**", Policy: "orders-write"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	jkt := jktOf(t, testkeys.EC256B)
	writer := mint(claims(map[string]any{"cnf": map[string]any{"jkt": jkt}, "scope": "orders:write"}))
	reader := mint(claims(map[string]any{"cnf": map[string]any{"jkt": jkt}, "scope": "orders:read"}))
	tests := []struct {
		name      string
		req       *http.Request
		wantCode  int
		wantClass string
	}{
		{"bound-allowed", dpopRequest("DPoP "+writer, mintProof(testkeys.EC256B, "ES256", "j1", "POST", htu, writer)), 200, ""},
		{"bound-forbidden", dpopRequest("DPoP "+reader, mintProof(testkeys.EC256B, "ES256", "j2", "POST", htu, reader)), 403, "forbidden"},
		{"as-bearer-forbidden-scope", dpopRequest("Bearer " + reader), 401, "binding_mismatch"},
		{"no-proof-allowed-scope", dpopRequest("DPoP " + writer), 401, "invalid_dpop_proof"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newBindEnvPolicies(t, ConstraintOptional, set)
			w := do(e.handler, tt.req)
			wantAnswer(t, w, tt.wantCode, tt.wantClass)
		})
	}
}

// TestBindingMetrics counts the binding checks by kind and outcome.
func TestBindingMetrics(t *testing.T) {
	e := newBindEnv(t, ConstraintOptional)
	bound := mint(claims(map[string]any{"cnf": map[string]any{"jkt": jktOf(t, testkeys.EC256B)}}))
	p := mintProof(testkeys.EC256B, "ES256", "m1", "POST", htu, bound)
	for range 2 {
		do(e.handler, dpopRequest("DPoP "+bound, p))
	}
	do(e.handler, dpopRequest("Bearer "+bound))
	for k, want := range map[string]int{issuerA + " dpop ok": 1, issuerA + " dpop replayed": 1, issuerA + " dpop binding_mismatch": 1} {
		if got := e.bm.n[k]; got != want {
			t.Errorf("BindingChecked %q = %d, want %d (all: %v)", k, got, want, e.bm.n)
		}
	}
}

// TestBindingVerifyAPI checks that /v1/verify takes a proof and the request
// in its body and shows each binding check.
func TestBindingVerifyAPI(t *testing.T) {
	e := newBindEnv(t, ConstraintOptional)
	bound := mint(claims(map[string]any{"cnf": map[string]any{"jkt": jktOf(t, testkeys.EC256B)}}))
	body := func(proof string) string {
		b, _ := json.Marshal(map[string]any{"token": bound, "dpop": proof,
			"request": map[string]string{"method": "POST", "scheme": "https", "host": "api.example.com", "path": "/orders/1"}})
		return string(b)
	}
	tests := []struct {
		name      string
		proof     string
		wantValid bool
		wantLast  string
	}{
		{"valid", mintProof(testkeys.EC256B, "ES256", "v1", "POST", htu, bound), true, "dpop-jti"},
		{"wrong-htm", mintProof(testkeys.EC256B, "ES256", "v2", "PUT", htu, bound), false, "dpop-htm"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := do(e.handler, postJSON("/v1/verify", body(tt.proof)))
			var got struct {
				Valid  bool
				Error  string
				Checks []struct {
					Check string
					OK    bool
				} `json:"binding_checks"`
			}
			if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil {
				t.Fatalf("body %s: %v", w.Body, err)
			}
			if got.Valid != tt.wantValid || len(got.Checks) < 5 {
				t.Fatalf("body %s", w.Body)
			}
			found := false
			for _, c := range got.Checks {
				found = found || (c.Check == tt.wantLast && c.OK == tt.wantValid)
			}
			if !found {
				t.Errorf("checks %+v have no %s with ok %t", got.Checks, tt.wantLast, tt.wantValid)
			}
		})
	}
}

// TestBindingNotForIntrospection: /introspect answers a bound token active
// (with its cnf): its caller holds the proof. (Both constraints are
// required here, so the token carries both confirmations: one missing is
// inactive, TestIntrospectRequiredConstraintUnbound.)
func TestBindingNotForIntrospection(t *testing.T) {
	e := newBindEnv(t, ConstraintRequired)
	certA := servertest.ClientCert(t, "client-a")
	bound := mint(claims(map[string]any{"cnf": map[string]any{"jkt": jktOf(t, testkeys.EC256B), "x5t#S256": mtls.Thumbprint(certA)}}))
	r := httptest.NewRequest(http.MethodPost, "/introspect", strings.NewReader("token="+bound))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	r.SetBasicAuth("gateway", "gateway-secret-value")
	w := do(e.handler, r)
	if !strings.Contains(w.Body.String(), `"active":true`) || !strings.Contains(w.Body.String(), `"jkt"`) {
		t.Errorf("introspect = %d %s", w.Code, w.Body)
	}
}

func TestBindingOptionsRefused(t *testing.T) {
	ve := servertest.NewEnv(t, servertest.Config{NoDown: true})
	for _, o := range []Options{
		{Verifier: ve.V, SenderConstraints: map[string]SenderConstraint{issuerA: {DPoP: ConstraintOptional}}},
		{Verifier: ve.V, SenderConstraints: map[string]SenderConstraint{"https://nope/": {MTLS: ConstraintOptional}}},
		{Verifier: ve.V, SenderConstraints: map[string]SenderConstraint{issuerA: {MTLS: "sometimes"}}},
		// Only Envoy sets x-forwarded-client-cert: behind the others it is
		// the client's, and a client sends a bound token's public
		// certificate hash itself.
		{Verifier: ve.V, Proxy: request.Nginx, ClientCert: ClientCertSource{XFCC: true}, SenderConstraints: map[string]SenderConstraint{issuerA: {MTLS: ConstraintOptional}}},
		{Verifier: ve.V, Proxy: request.Caddy, ClientCert: ClientCertSource{XFCC: true}},
		{Verifier: ve.V, Proxy: request.Traefik, ClientCert: ClientCertSource{XFCC: true}},
	} {
		if _, err := New(o); err == nil {
			t.Errorf("New(%+v) = nil error", o.SenderConstraints)
		}
	}
}

// wantAnswer fails t unless w is a status code answer whose body names
// class ("" skips the body).
func wantAnswer(t *testing.T, w *httptest.ResponseRecorder, code int, class string) {
	t.Helper()
	if w.Code != code {
		t.Fatalf("code = %d, want %d; body %s", w.Code, code, w.Body)
	}
	if class == "" {
		return
	}
	var body struct{ Error string }
	_ = json.Unmarshal(w.Body.Bytes(), &body)
	if body.Error != class {
		t.Errorf("class = %q, want %q", body.Error, class)
	}
}
