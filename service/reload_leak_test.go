package service

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// TestReloadLeavesNoGoroutines: a hundred reloads, each rebuilding every
// issuer's fetcher and introspection client, the minter and the DPoP
// checker (or changing nothing), leave no goroutine behind once the
// requests they may serve are done (the retirement's grace): the count
// comes back to what it was before them.
func TestReloadLeavesNoGoroutines(t *testing.T) {
	jwksSrv := jwksServer(t)
	const iss = "https://as.example/"
	as := newIntrospectionServer(t, iss)
	dir := mintKeysDir(t)
	path := filepath.Join(dir, "config.yaml")
	file := func(i int) string {
		return fmt.Sprintf(`listen: 127.0.0.1:0
token_cache: {max_entries: %d}
mint: {issuer: https://jwksverify.internal, keys_file: mint.jwks, signing_kid: k1, ttl: %dm}
dpop: {replay_store: memory, max_age: %ds}
issuers:
  - issuer: %s
    jwks_url: %s
    refresh: {stale_for: %dh}
    introspection: {url: %q, cache: {max_ttl: %dm}}
    sender_constraint: {dpop: optional}
policies:
  - name: p
    mint: {audience: a}
`, 100+i%2, 5+i%2, 60+i%2, iss, jwksSrv.URL, 1+i%2, as.URL, 4+i%2)
	}
	tests := []struct {
		name   string
		change bool
	}{
		{"unchanged", false},
		{"rebuilt", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			first := writePlan(t, path, file(0))
			first.HTTP.Write = time.Millisecond // the retirement's grace: retire at once
			l := startLive(t, first)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := l.Ready(ctx); err != nil {
				t.Fatal(err)
			}
			use := func() {
				t.Helper()
				if _, err := l.Server().Verifier().Verify(ctx, "opaque-1"); err != nil {
					t.Fatalf("Verify(opaque) = %v", err)
				}
			}
			use()
			settle := func() int {
				runtime.GC()
				http.DefaultTransport.(*http.Transport).CloseIdleConnections()
				return runtime.NumGoroutine()
			}
			base := settle()
			for i := 1; i <= 100; i++ {
				n := 0
				if tt.change {
					n = i
				}
				p := writePlan(t, path, file(n))
				p.HTTP.Write = time.Millisecond // the retirement's grace: retire at once
				mustReload(t, l, ctx, p)
				use()
			}
			// Back to the original settings (an even count): wait for the
			// retirements to end.
			deadline := time.Now().Add(20 * time.Second)
			var got int
			for {
				got = settle()
				if got <= base+2 || time.Now().After(deadline) {
					break
				}
				time.Sleep(50 * time.Millisecond)
			}
			if got > base+2 {
				buf := make([]byte, 1<<20)
				t.Errorf("goroutines after 100 reloads: %d, before: %d\n%s", got, base, buf[:runtime.Stack(buf, true)])
			}
		})
	}
}
