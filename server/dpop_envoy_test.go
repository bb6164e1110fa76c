package server

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/jwksverify/jwksverify/dpop"
	"github.com/jwksverify/jwksverify/internal/testkeys"
	"github.com/jwksverify/jwksverify/replay"
	"github.com/jwksverify/jwksverify/request"
	"github.com/jwksverify/jwksverify/server/internal/servertest"
)

// newDPoPProxyEnv is a server behind px whose issuer A requires DPoP, with
// a memory replay store.
func newDPoPProxyEnv(t *testing.T, px request.Proxy) *env {
	t.Helper()
	ve := servertest.NewEnv(t, servertest.Config{NoDown: true})
	store, _ := replay.NewMemory(1000)
	checker, err := dpop.New(dpop.Options{Replay: store})
	if err != nil {
		t.Fatal(err)
	}
	e := &env{clock: ve.Clock, keysA: ve.KeysA, v: ve.V, logs: ve.Logs, metrics: &recordedMetrics{}}
	e.srv, err = New(Options{
		Verifier:          ve.V,
		Proxy:             px,
		SenderConstraints: map[string]SenderConstraint{issuerA: {DPoP: ConstraintRequired}},
		DPoP:              checker,
		Logger:            slog.New(slog.NewJSONHandler(e.logs, nil)),
		Now:               e.clock.Now,
	})
	if err != nil {
		t.Fatal(err)
	}
	e.handler = e.srv.Handler()
	return e
}

// TestEnvoyHTTPDPoPSchemeUnknown: behind Envoy's HTTP ext_authz the
// client's scheme is unknown — the authorization request's own connection
// (plain http to jwksverify here) is not the client's, and a client's
// X-Forwarded-Proto is no proxy's word. A proof fails whatever its htu's
// scheme (before, http:// passed and the right https:// was refused).
func TestEnvoyHTTPDPoPSchemeUnknown(t *testing.T) {
	e := newDPoPProxyEnv(t, request.Envoy)
	jkt := jktOf(t, testkeys.EC256B)
	bound := mint(claims(map[string]any{"cnf": map[string]any{"jkt": jkt}}))
	for i, htu := range []string{"https://api.example.com/orders/1", "http://api.example.com/orders/1"} {
		r := httptest.NewRequest(http.MethodPost, "http://api.example.com/v1/authz/orders/1", nil)
		r.Header.Set("X-Forwarded-Proto", "https")
		r.Header.Set("Authorization", "DPoP "+bound)
		r.Header.Set("DPoP", mintProof(testkeys.EC256B, "ES256", "env-"+string(rune('a'+i)), "POST", htu, bound))
		w := httptest.NewRecorder()
		e.handler.ServeHTTP(w, r)
		if w.Code != http.StatusUnauthorized || !strings.Contains(w.Header().Get("Www-Authenticate"), "invalid_dpop_proof") {
			t.Errorf("proof htu %s: %d %s, want 401 invalid_dpop_proof (the scheme is unknown)", htu, w.Code, w.Header().Get("Www-Authenticate"))
		}
	}
}

// TestDPoPMethodOverride: the proof says GET and the request carries
// _method=DELETE, which the application runs: refused (htm was compared
// with the wire method only, so a GET's unspent proof became a DELETE).
func TestDPoPMethodOverride(t *testing.T) {
	e := newDPoPProxyEnv(t, request.Nginx)
	jkt := jktOf(t, testkeys.EC256B)
	bound := mint(claims(map[string]any{"cnf": map[string]any{"jkt": jkt}}))
	r := httptest.NewRequest(http.MethodGet, "/v1/authz", nil)
	r.Header.Set("X-Original-Method", "GET")
	r.Header.Set("X-Original-Uri", "/orders/1?_method=DELETE")
	r.Header.Set("X-Original-Host", "api.example.com")
	r.Header.Set("X-Original-Proto", "https")
	r.Header.Set("Authorization", "DPoP "+bound)
	r.Header.Set("DPoP", mintProof(testkeys.EC256B, "ES256", "ov-1", "GET", "https://api.example.com/orders/1", bound))
	w := httptest.NewRecorder()
	e.handler.ServeHTTP(w, r)
	if w.Code == 200 {
		t.Errorf("proof with htm GET allowed a request the application runs as DELETE (_method=DELETE)")
	}
}
