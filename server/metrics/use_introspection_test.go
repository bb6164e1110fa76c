package metrics

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/introspect"
	"github.com/jwksverify/jwksverify/server/internal/servertest"
	"github.com/jwksverify/jwksverify/verify"
)

// statsIntrospector is an introspector whose Stats say it refused calls at
// its limit (what JWKSVerifyIntrospectionOverloaded reads).
type statsIntrospector struct{ overloaded uint64 }

func (s statsIntrospector) Introspect(context.Context, string, time.Time) (*verify.Introspection, error) {
	return nil, verify.ErrKeysUnavailable
}

func (s statsIntrospector) Stats() introspect.Stats {
	return introspect.Stats{Overloaded: s.overloaded}
}

// TestUseKeepsIntrospectionMetrics: a configuration reload (SIGHUP, a
// changed file) swaps in a verifier whose issuer still introspects opaque
// tokens; its introspection series are still exported, so that the
// JWKSVerifyIntrospectionOverloaded alert (deploy/prometheus) and the
// dashboard's introspection panels do not go blind after the first reload.
func TestUseKeepsIntrospectionMetrics(t *testing.T) {
	e := newEnv(t, envConfig{})
	withIntrospector := func(n uint64) []verify.Issuer {
		var out []verify.Issuer
		for _, is := range e.V.Issuers() {
			if is.Issuer == servertest.IssuerA {
				is.Introspector = statsIntrospector{overloaded: n}
				out = append(out, is)
			}
		}
		return out
	}
	v1, err := verify.New(verify.Options{Issuers: withIntrospector(3), Now: e.Clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(Options{Verifier: v1, Now: e.Clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	line := `jwksverify_introspection_overloaded_total{issuer="` + servertest.IssuerA + `"} `
	if body := get(m.Handler(), "/metrics").Body.String(); !strings.Contains(body, line+"3") {
		t.Fatalf("before the reload, /metrics has no %s3", line)
	}
	v2, err := verify.New(verify.Options{Issuers: withIntrospector(5), Now: e.Clock.Now, Previous: v1})
	if err != nil {
		t.Fatal(err)
	}
	m.Use(v2)
	if body := get(m.Handler(), "/metrics").Body.String(); !strings.Contains(body, line+"5") {
		t.Errorf("after the reload, /metrics has no %s5: the introspection series are gone", line)
	}
}
