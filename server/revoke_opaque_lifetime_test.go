package server

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/cache"
	"github.com/jwksverify/jwksverify/introspect"
	"github.com/jwksverify/jwksverify/revoke"
	"github.com/jwksverify/jwksverify/server/internal/servertest"
	"github.com/jwksverify/jwksverify/verify"
)

const opaqueIssuer = "https://as.example.com/"

// opaqueRevocationServer is revocationServer for opaque tokens: an
// authorization server that answers every token with answer (it never
// hears of a revocation made here), an introspection client of max_ttl
// one minute, and a verifier whose max_lifetime is the retention, as
// config makes it, with required claims req (nil: the default exp).
func opaqueRevocationServer(t *testing.T, retention time.Duration, answer string, req []string) (*Server, *servertest.Clock) {
	t.Helper()
	as := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, answer)
	}))
	t.Cleanup(as.Close)
	c, err := introspect.New(introspect.Options{Issuer: opaqueIssuer, URL: as.URL, MaxTTL: time.Minute, StaleFor: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	clock := servertest.NewClock()
	v, err := verify.New(verify.Options{Now: clock.Now, IndexClaims: RevocationClaims(), Issuers: []verify.Issuer{{
		Issuer: opaqueIssuer, Keys: &cache.Keys{}, Introspector: c, RequiredClaims: req, MaxLifetime: retention}}})
	if err != nil {
		t.Fatal(err)
	}
	m, err := revoke.OpenMemory(revoke.MemoryOptions{Dir: t.TempDir(), Retention: retention, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	srv, err := New(Options{Verifier: v, Revocations: m, Logger: slog.New(slog.DiscardHandler), Now: clock.Now,
		IntrospectionClients: []IntrospectionClient{{ID: "gateway", Secret: "gateway-secret-value"}}})
	if err != nil {
		t.Fatal(err)
	}
	return srv, clock
}

// TestRevokedOpaqueNoIATOutlivesEntry: TestRevokedNoIATTokenOutlivesEntry
// for an opaque token. An introspection answer without iat is held to
// exp − now only (the revocation stage's "no iat" refusal skips opaque
// tokens), which bounds nothing about when it was revoked: a token whose
// answer says exp 3h ahead (retention and max_lifetime 1h), revoked by
// jti, sid, sub or client_id, passes again at 2h05m, once the entry
// (1h20m) is gone and exp − now fell under the retention, while the
// authorization server, which never heard of the revocation, still
// answers active. API.md: "with revocation configured, no iat" is
// lifetime_exceeded.
func TestRevokedOpaqueNoIATOutlivesEntry(t *testing.T) {
	const retention = time.Hour
	answer := `{"active":true,"sub":"alice","sid":"s-1","client_id":"app","jti":"op-1","exp":` +
		jsonNumber(servertest.Epoch.Add(3*time.Hour).Unix()) + `}`
	for _, entry := range []string{`"jti":"op-1"`, `"sid":"s-1"`, `"sub":"alice"`, `"client_id":"app"`} {
		t.Run(entry, func(t *testing.T) {
			srv, clock := opaqueRevocationServer(t, retention, answer, nil)
			e := revokeVia(t, srv, `{"issuer":"`+opaqueIssuer+`",`+entry+`}`)
			prev := time.Duration(0)
			for _, at := range []time.Duration{0, time.Hour + 10*time.Minute, 2*time.Hour + 5*time.Minute} {
				clock.Add(at - prev)
				prev = at
				d := srv.Decide(context.Background(), &Call{Endpoint: EndpointAuthz, Token: "opaque-token-1"})
				t.Logf("revocation+%s: %d %q", at, d.Status, d.Class)
				if d.Allowed() {
					t.Errorf("opaque token revoked by %s (entry expires %s), answer without iat: at revocation+%s allowed, want refused",
						entry, e.ExpiresAt.Format(time.RFC3339), at)
				}
			}
		})
	}
}

// TestRevokedOpaqueNoExpOutlivesEntry: an introspection answer without exp
// (required_claims: [], RFC 7662 makes exp optional) passes the revocation
// stage's lifetime bound. DECISIONS' reason, "the authorization server is
// asked again every max_ttl", holds only when the server itself ends the
// token: one that never heard of a revocation made here (an admin entry, a
// back-channel logout or SET for another client) answers active for good,
// and the token passes again once the entry (retention + 20 min) is gone.
func TestRevokedOpaqueNoExpOutlivesEntry(t *testing.T) {
	const retention = time.Hour
	answer := `{"active":true,"sub":"alice","sid":"s-1","client_id":"app","jti":"op-2","iat":` + jsonNumber(servertest.Epoch.Unix()) + `}`
	for _, entry := range []string{`"jti":"op-2"`, `"sid":"s-1"`, `"sub":"alice"`} {
		t.Run(entry, func(t *testing.T) {
			srv, clock := opaqueRevocationServer(t, retention, answer, []string{})
			clock.Add(time.Second)
			e := revokeVia(t, srv, `{"issuer":"`+opaqueIssuer+`",`+entry+`}`)
			prev := time.Duration(0)
			for _, at := range []time.Duration{0, time.Hour + 10*time.Minute, time.Hour + 25*time.Minute, 30 * 24 * time.Hour} {
				clock.Add(at - prev)
				prev = at
				d := srv.Decide(context.Background(), &Call{Endpoint: EndpointAuthz, Token: "opaque-token-2"})
				t.Logf("revocation+%s: %d %q", at, d.Status, d.Class)
				if d.Allowed() {
					t.Errorf("opaque token revoked by %s (entry expires %s), answer without exp: at revocation+%s allowed, want refused",
						entry, e.ExpiresAt.Format(time.RFC3339), at)
				}
			}
		})
	}
}
