package integration

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// rackScheme is the scheme Rack (Rails, Sinatra) gives a request it got over
// plain HTTP (Rack::Request#scheme): X-Forwarded-Ssl "on" first, then
// X-Forwarded-Scheme, then X-Forwarded-Proto (rack 2; rack 3 asks Proto
// before Scheme), read under their CGI keys as Rack's env holds them.
func rackScheme(h http.Header) string {
	first := func(name string) string {
		for _, kv := range cgiValues(h, name) {
			_, v, _ := strings.Cut(kv, "=")
			v, _, _ = strings.Cut(v, ",")
			return strings.TrimSpace(v)
		}
		return ""
	}
	if first("X-Forwarded-Ssl") == "on" {
		return "https"
	}
	if s := first("X-Forwarded-Scheme"); s == "http" || s == "https" {
		return s
	}
	if s := first("X-Forwarded-Proto"); s == "http" || s == "https" {
		return s
	}
	return "http"
}

// TestProxySchemeHeaders: through the generated nginx and Caddy files, an
// application acts on the scheme jwksverify decided on (the client's
// connection: http here, X-Original-Proto / X-Forwarded-Proto, which a DPoP
// proof's htu is compared with). The files set X-Forwarded-Proto and drop
// X-Forwarded-Port, but pass a client's X-Forwarded-Ssl and
// X-Forwarded-Scheme, which Rack reads before (Ssl) or instead of
// X-Forwarded-Proto.
func TestProxySchemeHeaders(t *testing.T) {
	for _, tc := range []struct {
		name  string
		start func(*testing.T, bool, string) *proxyEnv
	}{
		{"nginx", startNginx},
		{"caddy", startCaddy},
	} {
		t.Run(tc.name, func(t *testing.T) {
			px := tc.start(t, false, "")
			for _, h := range [][2]string{{"X-Forwarded-Ssl", "on"}, {"X-Forwarded-Scheme", "https"}} {
				t.Run(h[0], func(t *testing.T) {
					req, _ := http.NewRequest(http.MethodGet, px.URL+"/orders/1", nil)
					req.Header.Set("Authorization", "Bearer "+px.issuer.Token(nil))
					req.Header.Set(h[0], h[1])
					resp, err := httpClient().Do(req)
					if err != nil {
						t.Fatal(err)
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK || px.upstream.Last() == nil {
						t.Fatalf("status = %d, want 200", resp.StatusCode)
					}
					got := px.upstream.Last().Headers
					if s := rackScheme(got); s != "http" {
						t.Errorf("the application acts on scheme %q (X-Forwarded-Proto %q, %s %q); jwksverify decided on http",
							s, got.Values("X-Forwarded-Proto"), h[0], got.Values(h[0]))
					}
				})
			}
		})
	}
}
