package server

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/cache"
	"github.com/jwksverify/jwksverify/introspect"
	"github.com/jwksverify/jwksverify/revoke"
	"github.com/jwksverify/jwksverify/server/internal/servertest"
	"github.com/jwksverify/jwksverify/verify"
)

// adminRequest is an authenticated admin API request.
func adminRequest(method, target, body string) *http.Request {
	r := httptest.NewRequest(method, target, strings.NewReader(body))
	r.SetBasicAuth("gateway", "gateway-secret-value")
	if body != "" {
		r.Header.Set("Content-Type", "application/json")
	}
	return r
}

// revokeVia adds an entry through the admin API and returns it.
func revokeVia(t *testing.T, srv *Server, body string) revoke.Entry {
	t.Helper()
	w := do(srv.AdminHandler(), adminRequest(http.MethodPost, revocationsPath, body))
	if w.Code != http.StatusCreated {
		t.Fatalf("POST %s %s = %d %s, want 201", revocationsPath, body, w.Code, w.Body)
	}
	var e revoke.Entry
	if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil {
		t.Fatal(err)
	}
	if e.ID == "" || e.ExpiresAt.IsZero() {
		t.Errorf("POST answer = %s, want an id and expires_at", w.Body)
	}
	return e
}

const revokedChallenge = `Bearer error="invalid_token", error_description="revoked"`

// TestRevokedOnTokenCacheHit: a token accepted (and cached) is refused once
// an entry names it, on the cache hit, at every front end; lifting the
// entry lets it through again.
func TestRevokedOnTokenCacheHit(t *testing.T) {
	e := newEnv(t, envConfig{tokenCache: 100, revocations: true, noDown: true})
	tok := mint(claims(map[string]any{"sid": "session-1", "client_id": "web", "azp": "web"}))
	other := mint(claims(map[string]any{"sub": "bob", "jti": "id-2", "sid": "session-2", "client_id": "cli"}))
	if w := do(e.handler, authzRequest(http.MethodGet, "/v1/authz", tok)); w.Code != http.StatusOK {
		t.Fatalf("before revocation = %d, want 200", w.Code)
	}
	if res, err := e.v.VerifyAt(context.Background(), tok, e.clock.Now()); err != nil || !res.Cached() {
		t.Fatalf("VerifyAt() = %v, cached %v: want the token in the verified-token cache", err, res != nil && res.Cached())
	}
	e.clock.Add(time.Second) // now (the default issued_before) is after the tokens' iat
	for _, tt := range []struct {
		body     string
		namesBob bool
	}{
		{`{"issuer":"` + issuerA + `","jti":"id-1"}`, false},
		{`{"issuer":"` + issuerA + `","sid":"session-1"}`, false},
		{`{"issuer":"` + issuerA + `","sub":"alice"}`, false},
		{`{"issuer":"` + issuerA + `","client_id":"web"}`, false},
		{`{"issuer":"` + issuerA + `","issued_before":"` + epoch.Add(time.Second).Format(time.RFC3339) + `"}`, true},
	} {
		body := tt.body
		t.Run(body, func(t *testing.T) {
			ent := revokeVia(t, e.srv, body)
			d := e.srv.Decide(context.Background(), &Call{Endpoint: EndpointAuthz, Token: tok})
			if d.Class != "revoked" || d.Status != http.StatusUnauthorized {
				t.Errorf("Decide() = %d %q, want 401 revoked", d.Status, d.Class)
			}
			w := do(e.handler, authzRequest(http.MethodGet, "/v1/authz", tok))
			if w.Code != http.StatusUnauthorized || w.Header().Get("WWW-Authenticate") != revokedChallenge {
				t.Errorf("forward-auth = %d %q, want 401 %q", w.Code, w.Header().Get("WWW-Authenticate"), revokedChallenge)
			}
			w = do(e.handler, introspectRequest("token="+tok, "gateway", "gateway-secret-value"))
			if strings.TrimSpace(w.Body.String()) != `{"active":false}` {
				t.Errorf("/introspect = %s, want {\"active\":false}", w.Body)
			}
			w = do(e.handler, postJSON("/v1/verify", `{"token":"`+tok+`"}`))
			if !strings.Contains(w.Body.String(), `"error":"revoked"`) {
				t.Errorf("/v1/verify = %s, want error revoked", w.Body)
			}
			want := http.StatusOK
			if tt.namesBob {
				want = http.StatusUnauthorized
			}
			if w := do(e.handler, authzRequest(http.MethodGet, "/v1/authz", other)); w.Code != want {
				t.Errorf("another token = %d, want %d", w.Code, want)
			}
			if w := do(e.srv.AdminHandler(), adminRequest(http.MethodDelete, revocationsPath+"/"+ent.ID, "")); w.Code != http.StatusNoContent {
				t.Fatalf("DELETE = %d %s, want 204", w.Code, w.Body)
			}
			if w := do(e.handler, authzRequest(http.MethodGet, "/v1/authz", tok)); w.Code != http.StatusOK {
				t.Errorf("after the lift = %d, want 200", w.Code)
			}
		})
	}
	// A token issued after issued_before survives.
	revokeVia(t, e.srv, `{"issuer":"`+issuerA+`","sub":"alice","issued_before":"`+epoch.Add(-time.Minute).Format(time.RFC3339)+`"}`)
	if w := do(e.handler, authzRequest(http.MethodGet, "/v1/authz", tok)); w.Code != http.StatusOK {
		t.Errorf("a token issued after issued_before = %d, want 200", w.Code)
	}
}

// TestRevokedOpaque: an opaque token is matched on its introspection
// answer's claims, on a cached answer and on a stale one.
func TestRevokedOpaque(t *testing.T) {
	var down atomic.Bool
	var calls atomic.Int32
	as := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if down.Load() {
			http.Error(w, "down", http.StatusBadGateway)
			return
		}
		r.ParseForm()
		switch r.PostForm.Get("token") {
		case "opaque-alice":
			io.WriteString(w, `{"active":true,"sub":"alice","sid":"s-a","exp":`+jsonNumber(epoch.Add(time.Hour).Unix())+`,"iat":`+jsonNumber(epoch.Unix())+`}`)
		case "opaque-bob":
			io.WriteString(w, `{"active":true,"sub":"bob","exp":`+jsonNumber(epoch.Add(time.Hour).Unix())+`,"iat":`+jsonNumber(epoch.Unix())+`}`)
		default:
			io.WriteString(w, `{"active":false}`)
		}
	}))
	defer as.Close()
	const iss = "https://as.example.com/"
	c, err := introspect.New(introspect.Options{Issuer: iss, URL: as.URL, MaxTTL: time.Minute, StaleFor: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	clock := servertest.NewClock()
	v, err := verify.New(verify.Options{Now: clock.Now, Issuers: []verify.Issuer{{Issuer: iss, Keys: &cache.Keys{}, Introspector: c, RequiredClaims: []string{}}}})
	if err != nil {
		t.Fatal(err)
	}
	m, err := revoke.OpenMemory(revoke.MemoryOptions{Dir: t.TempDir(), Retention: 24 * time.Hour, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	srv, err := New(Options{Verifier: v, Revocations: m, Logger: slog.New(slog.DiscardHandler), Now: clock.Now,
		IntrospectionClients: []IntrospectionClient{{ID: "gateway", Secret: "gateway-secret-value"}}})
	if err != nil {
		t.Fatal(err)
	}
	decide := func(tok string) Decision {
		return srv.Decide(context.Background(), &Call{Endpoint: EndpointAuthz, Token: tok})
	}
	for _, tok := range []string{"opaque-alice", "opaque-bob"} {
		if d := decide(tok); !d.Allowed() {
			t.Fatalf("%s before revocation: %d %s", tok, d.Status, d.Class)
		}
	}
	before := calls.Load()
	revokeVia(t, srv, `{"issuer":"`+iss+`","sid":"s-a"}`)
	if d := decide("opaque-alice"); d.Class != "revoked" {
		t.Errorf("cached answer: class %q, want revoked", d.Class)
	}
	if calls.Load() != before {
		t.Errorf("the introspection endpoint was called %d times, want a cache hit", calls.Load()-before)
	}
	down.Store(true)
	clock.Add(2 * time.Minute) // past MaxTTL, within StaleFor: stale answers
	if d := decide("opaque-bob"); !d.Allowed() {
		t.Fatalf("stale answer for bob = %d %s, want allowed (the stale path serves)", d.Status, d.Class)
	}
	if d := decide("opaque-alice"); d.Class != "revoked" {
		t.Errorf("stale answer: class %q, want revoked", d.Class)
	}
	w := do(srv.Handler(), introspectRequest("token=opaque-alice", "gateway", "gateway-secret-value"))
	if strings.TrimSpace(w.Body.String()) != `{"active":false}` {
		t.Errorf("/introspect = %s, want {\"active\":false}", w.Body)
	}
}

func jsonNumber(n int64) string { b, _ := json.Marshal(n); return string(b) }

// TestRevocationsStale: a copy older than max_staleness answers
// keys_unavailable and makes the server not ready.
func TestRevocationsStale(t *testing.T) {
	ve := servertest.NewEnv(t, servertest.Config{NoDown: true})
	st := &staleStore{idx: revoke.NewIndex(30 * time.Second)}
	srv, err := New(Options{Verifier: ve.V, Revocations: st, Logger: slog.New(slog.DiscardHandler), Now: ve.Clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	tok := mint(claims(nil))
	if d := srv.Decide(context.Background(), &Call{Token: tok}); d.Status != http.StatusServiceUnavailable || d.Class != "keys_unavailable" {
		t.Errorf("never synced: %d %q, want 503 keys_unavailable", d.Status, d.Class)
	}
	if w := get(srv.AdminHandler(), "/readyz"); w.Code != http.StatusServiceUnavailable || !strings.Contains(w.Body.String(), `"revocations_stale":true`) {
		t.Errorf("/readyz = %d %s, want 503 revocations_stale", w.Code, w.Body)
	}
	st.idx.Synced(ve.Clock.Now())
	if d := srv.Decide(context.Background(), &Call{Token: tok}); !d.Allowed() {
		t.Errorf("synced: %d %q, want allowed", d.Status, d.Class)
	}
	if ok, _ := srv.Ready(); !ok {
		t.Error("Ready() = false once synced")
	}
	ve.Clock.Add(31 * time.Second)
	if d := srv.Decide(context.Background(), &Call{Token: tok}); d.Status != http.StatusServiceUnavailable {
		t.Errorf("past max_staleness: %d %q, want 503", d.Status, d.Class)
	}
}

// staleStore is a store whose index the test syncs by hand.
type staleStore struct{ idx *revoke.Index }

func (s *staleStore) Add(context.Context, revoke.Entry) (revoke.Entry, error) {
	return revoke.Entry{}, revoke.ErrUnavailable
}
func (s *staleStore) Delete(context.Context, string) error { return revoke.ErrUnavailable }
func (s *staleStore) List(context.Context, string) ([]revoke.Entry, error) {
	return nil, revoke.ErrUnavailable
}
func (s *staleStore) Index() *revoke.Index { return s.idx }

// TestRevocationsAdminAPI: authentication, the listener, bounded bodies and
// clear 400s.
func TestRevocationsAdminAPI(t *testing.T) {
	e := newEnv(t, envConfig{revocations: true})
	admin := e.srv.AdminHandler()
	big := `{"issuer":"` + strings.Repeat("x", 9000) + `"}`
	tests := []struct {
		name       string
		req        *http.Request
		wantStatus int
		wantInBody string
	}{
		{"no-credentials", postJSON(revocationsPath, `{"issuer":"`+issuerA+`","jti":"x"}`), 401, "invalid_client"},
		{"wrong-secret", func() *http.Request {
			r := adminRequest(http.MethodGet, revocationsPath, "")
			r.SetBasicAuth("gateway", "nope")
			return r
		}(), 401, "invalid_client"},
		{"unknown-issuer", adminRequest(http.MethodPost, revocationsPath, `{"issuer":"https://other/","jti":"x"}`), 400, "not a configured issuer"},
		{"two-kinds", adminRequest(http.MethodPost, revocationsPath, `{"issuer":"`+issuerA+`","jti":"x","sub":"y"}`), 400, "at most one"},
		{"empty-value", adminRequest(http.MethodPost, revocationsPath, `{"issuer":"`+issuerA+`","sub":""}`), 400, "sub is empty"},
		{"issued-before-jti", adminRequest(http.MethodPost, revocationsPath, `{"issuer":"`+issuerA+`","jti":"x","issued_before":"2026-01-01T00:00:00Z"}`), 400, "issued_before applies"},
		{"issued-before-future", adminRequest(http.MethodPost, revocationsPath, `{"issuer":"`+issuerA+`","sub":"x","issued_before":"2999-01-01T00:00:00Z"}`), 400, "future"},
		{"issued-before-bad", adminRequest(http.MethodPost, revocationsPath, `{"issuer":"`+issuerA+`","sub":"x","issued_before":"yesterday"}`), 400, "RFC 3339"},
		{"unknown-member", adminRequest(http.MethodPost, revocationsPath, `{"issuer":"`+issuerA+`","user":"x"}`), 400, "unknown field"},
		{"not-json", adminRequest(http.MethodPost, revocationsPath, `jti=x`), 400, "invalid_request"},
		{"two-values", adminRequest(http.MethodPost, revocationsPath, `{"issuer":"`+issuerA+`","jti":"x"}{}`), 400, "more than one"},
		{"too-large", adminRequest(http.MethodPost, revocationsPath, big), 413, "8 KiB"},
		{"form", func() *http.Request {
			r := adminRequest(http.MethodPost, revocationsPath, `{"issuer":"`+issuerA+`"}`)
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			return r
		}(), 415, "application/json"},
		{"list-unknown-issuer", adminRequest(http.MethodGet, revocationsPath+"?issuer=https://other/", ""), 400, "not a configured issuer"},
		{"delete-unknown", adminRequest(http.MethodDelete, revocationsPath+"/nope", ""), 404, "not_found"},
		{"list", adminRequest(http.MethodGet, revocationsPath, ""), 200, `{"revocations":[]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := do(admin, tt.req)
			if w.Code != tt.wantStatus || !strings.Contains(w.Body.String(), tt.wantInBody) {
				t.Errorf("= %d %s, want %d with %q", w.Code, w.Body, tt.wantStatus, tt.wantInBody)
			}
		})
	}
	if w := do(e.handler, adminRequest(http.MethodGet, revocationsPath, "")); w.Code != http.StatusNotFound {
		t.Errorf("GET %s on the main handler = %d, want 404 (admin_listen only)", revocationsPath, w.Code)
	}
	a := revokeVia(t, e.srv, `{"issuer":"`+issuerA+`","jti":"j-1"}`)
	b := revokeVia(t, e.srv, `{"issuer":"`+servertest.IssuerDown+`","client_id":"c"}`)
	if a.Kind != revoke.KindJTI || a.Source != revoke.SourceAdmin || !a.ExpiresAt.Equal(epoch.Add(24*time.Hour+20*time.Minute)) || !a.IssuedBefore.IsZero() {
		t.Errorf("entry = %+v", a)
	}
	if !b.IssuedBefore.Equal(epoch) {
		t.Errorf("issued_before = %v, want now", b.IssuedBefore)
	}
	w := do(admin, adminRequest(http.MethodGet, revocationsPath+"?issuer="+issuerA, ""))
	var list struct{ Revocations []revoke.Entry }
	json.Unmarshal(w.Body.Bytes(), &list)
	if len(list.Revocations) != 1 || list.Revocations[0].ID != a.ID {
		t.Errorf("GET ?issuer= = %s, want only %s", w.Body, a.ID)
	}
}

// TestRevocationCheckAllocs: on a cache hit of a verifier that indexes
// RevocationClaims, the stage allocates nothing for a token no entry names.
func TestRevocationCheckAllocs(t *testing.T) {
	ve := servertest.NewEnv(t, servertest.Config{TokenCache: 10, NoDown: true, IndexClaims: RevocationClaims()})
	m, err := revoke.OpenMemory(revoke.MemoryOptions{Dir: t.TempDir(), Retention: time.Hour, Now: ve.Clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	for i := range 50 {
		for _, k := range []revoke.Kind{revoke.KindJTI, revoke.KindSID, revoke.KindSub, revoke.KindClientID} {
			if _, err := m.Add(context.Background(), revoke.Entry{Issuer: issuerA, Kind: k, Value: "v" + jsonNumber(int64(i))}); err != nil {
				t.Fatal(err)
			}
		}
	}
	srv, err := New(Options{Verifier: ve.V, Revocations: m, Logger: slog.New(slog.DiscardHandler), Now: ve.Clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	tok := mint(claims(map[string]any{"sid": "s", "client_id": "c", "azp": "a"}))
	res, err := ve.V.VerifyAt(context.Background(), tok, ve.Clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	now := ve.Clock.Now()
	if n := testing.AllocsPerRun(100, func() {
		if err := srv.revocation(res, now); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("revocation() allocates %v times, want 0", n)
	}
}
