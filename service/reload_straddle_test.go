package service

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestRequestStraddlingAReloadIsDecidedUnderOne: a request whose
// verification is still waiting (an introspection call) when a reload
// returns is decided wholly under the configuration it started with — its
// verifier and its policy — never with one configuration's verifier and
// the other's policy, on every front end. Each row's two configurations
// each refuse the token, one at the verifier (audience), the other at the
// policy; a decision mixing them would allow it.
func TestRequestStraddlingAReloadIsDecidedUnderOne(t *testing.T) {
	jwksSrv := jwksServer(t)
	const iss = "https://as.example/"
	type call struct {
		entered chan struct{}
		release chan struct{}
	}
	calls := make(chan call, 1)
	as := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c := <-calls
		close(c.entered)
		<-c.release
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"active":true,"iss":%q,"sub":"alice","aud":"orders","scope":"orders:read","exp":%d}`, iss, time.Now().Add(time.Hour).Unix())
	}))
	t.Cleanup(as.Close)
	doc := func(aud, sub string) string {
		return fmt.Sprintf(`forward_auth: {proxy: envoy}
token_cache: {max_entries: 100}
issuers:
  - issuer: %s
    jwks_url: %s
    audiences: [%s]
    introspection: {url: %q}
policies:
  - {name: p, expression: 'claims.sub == "%s"'}
routes:
  - {path: /orders/**, policy: p}
`, iss, jwksSrv.URL, aud, as.URL, sub)
	}
	tests := []struct {
		name      string
		old, next string
		want      string // the class of the old configuration's refusal
	}{
		{"old-verifier-new-policy-would-allow", doc("orders", "bob"), doc("billing", "alice"), "forbidden"},
		{"new-verifier-old-policy-would-allow", doc("billing", "alice"), doc("orders", "bob"), "wrong_audience"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "config.yaml")
			fronts := map[string]func(d *diffService, rq diffRequest) verdict{
				"forward-auth": func(d *diffService, rq diffRequest) verdict { return d.authz(t, "envoy", rq) },
				"grpc":         func(d *diffService, rq diffRequest) verdict { return d.check(t, rq) },
				"middleware": func(d *diffService, rq diffRequest) verdict {
					return serveOriginal(d.svc.Middleware(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})), rq)
				},
			}
			for fe, ask := range fronts {
				d := &diffService{svc: startLive(t, writePlan(t, path, tt.old))}
				d.grpc = grpcClient(t, d.svc)
				ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
				if err := d.svc.Ready(ctx); err != nil {
					t.Fatal(err)
				}
				c := call{entered: make(chan struct{}), release: make(chan struct{})}
				release := sync.OnceFunc(func() { close(c.release) })
				t.Cleanup(release) // a failed reload: before Close, which waits for the call
				calls <- c
				rq := diffRequest{method: "GET", path: "/orders/1", headers: map[string]string{"Authorization": "Bearer opaque-" + fe}}
				got := make(chan verdict, 1)
				go func() { got <- ask(d, rq) }()
				<-c.entered // verifying under the old configuration
				mustReload(t, d.svc, ctx, writePlan(t, path, tt.next))
				release()
				if v := <-got; v.allowed || !strings.Contains(v.class, tt.want) {
					t.Errorf("%s: a request that straddled the reload: %+v, want denied %s (the old configuration's)", fe, v, tt.want)
				}
				cancel()
			}
		})
	}
}
