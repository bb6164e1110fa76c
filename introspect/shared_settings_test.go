package introspect_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/internal/redistest"
	"github.com/jwksverify/jwksverify/introspect"
	"github.com/jwksverify/jwksverify/verify"
)

// TestSharedCacheKeyedByTheSettings: a reload that changes what an issuer's
// answers depend on (the endpoint asked, the client asking, the cache's
// lifetimes) builds a new Client (introspect.Same is false: SPEC, "issuers
// whose settings did not change keep their keys and caches"), and with the
// shared cache that Client must not be answered by the old settings'
// answers still in Redis: the endpoint now configured says inactive.
func TestSharedCacheKeyedByTheSettings(t *testing.T) {
	secret := func(s string) string {
		p := filepath.Join(t.TempDir(), "secret")
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		name     string
		old, new func(o *introspect.Options, urlOld, urlNew string)
		at       time.Duration
	}{
		{"another-endpoint", func(o *introspect.Options, a, _ string) { o.URL = a }, func(o *introspect.Options, _, b string) { o.URL = b }, time.Second},
		{"another-client", func(o *introspect.Options, a, _ string) {
			o.URL, o.ClientID, o.ClientSecretFile = a, "staging-gateway", secret("s1")
		}, func(o *introspect.Options, _, b string) {
			o.URL, o.ClientID, o.ClientSecretFile = b, "gateway", secret("s2")
		}, time.Second},
		// max_ttl lowered to 1m: at 2m the answer must be asked again (the
		// token was revoked at the server meanwhile).
		{"max-ttl-lowered", func(o *introspect.Options, a, _ string) { o.URL, o.MaxTTL = a, time.Hour },
			func(o *introspect.Options, a, _ string) { o.URL, o.MaxTTL = a, time.Minute }, 2 * time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := redistest.Start(t)
			upOld, urlOld := newServer(t)
			_, urlNew := newServer(t) // knows no token: inactive
			upOld.set("tok", activeAnswer(t0.Add(2*time.Hour)))
			key := sharedKey(t, 'k', 32)

			var oo, no introspect.Options
			oo.SharedKeyFile, no.SharedKeyFile = key, key
			tt.old(&oo, urlOld, urlNew)
			tt.new(&no, urlOld, urlNew)
			if introspect.Same(oo, no) {
				t.Fatal("the settings are the same; the test changes nothing")
			}
			before := replicas(t, 1, srv, oo)[0]
			if _, err := before.Introspect(context.Background(), "tok", t0); err != nil {
				t.Fatalf("before the reload: %v", err)
			}
			if tt.name == "max-ttl-lowered" {
				upOld.set("tok", `{"active":false}`) // revoked at the server
			}
			after := replicas(t, 1, srv, no)[0]
			ans, err := after.Introspect(context.Background(), "tok", t0.Add(tt.at))
			if !errors.Is(err, verify.ErrInactive) {
				t.Errorf("after the reload: Introspect() = %v, %v; want inactive (the endpoint configured now says so)", ans, err)
			}
		})
	}
}
