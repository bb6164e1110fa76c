package server

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/jwksverify/jwksverify/policy"
	"github.com/jwksverify/jwksverify/policy/celexpr"
	"github.com/jwksverify/jwksverify/request"
	"github.com/jwksverify/jwksverify/server/internal/servertest"
)

// TestForbiddenLogQuotesNoClaimValue: a policy expression that fails at
// run time is logged "request forbidden" with its detail; OPERATIONS.md
// says that line holds "Never the token or claim values". cel-go's
// run-time errors quote the value they failed on (timestamp("…"), a map
// key), so a claim that holds a token (an upstream token carried in a
// claim) reaches the log.
func TestForbiddenLogQuotesNoClaimValue(t *testing.T) {
	secret := "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ1cHN0cmVhbS1zZWNyZXQtdG9rZW4ifQ.c2lnbmF0dXJlLW9mLXVwc3RyZWFtLXRva2Vu"
	for _, tc := range []struct{ name, expr string }{
		{"timestamp", `timestamp(claims.session) < timestamp("2100-01-01T00:00:00Z")`},
		{"map-key", `{"admin": true, "reader": false}[claims.session]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set, err := policy.New(policy.Options{
				Compiler:      &celexpr.Compiler{},
				Policies:      []policy.Spec{{Name: "p", Expression: tc.expr}},
				Routes:        []policy.Route{{Path: "/**", Policy: "p"}},
				DefaultPolicy: "p",
			})
			if err != nil {
				t.Fatal(err)
			}
			ve := servertest.NewEnv(t, servertest.Config{TokenCache: 100, IndexClaims: set.ClaimNames()})
			srv, err := New(Options{
				Verifier: ve.V, Proxy: request.Nginx, Policies: set,
				Metrics: &recordedMetrics{}, Logger: slog.New(slog.NewJSONHandler(ve.Logs, nil)), Now: ve.Clock.Now,
			})
			if err != nil {
				t.Fatal(err)
			}
			tok := mint(claims(map[string]any{"session": secret}))
			w := do(srv.Handler(), nginxAuthz("GET", "/x", tok, nil))
			if w.Code != 403 {
				t.Fatalf("status %d, want 403", w.Code)
			}
			logs := ve.Logs.String()
			if !strings.Contains(logs, "request forbidden") {
				t.Fatalf("no forbidden line: %s", logs)
			}
			if strings.Contains(logs, secret) || strings.Contains(logs, "c2lnbmF0dXJlLW9mLXVwc3RyZWFtLXRva2Vu") {
				t.Errorf("the log holds the claim's value (a token):\n%s", logs)
			}
		})
	}
}
