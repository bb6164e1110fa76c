package main

import (
	"net/http"
	"strings"
	"testing"
)

// TestCookieHeaderWorkBounded: with a cookie token source, one forward-auth
// request whose Cookie header fits the listener's 64 KiB header bound costs
// work in proportion to its size. The cookie value "a a a … a=" made
// cookieValue's inValue re-scan (and phpName copy) the rest of the value at
// every space: about 2 GB allocated and 2 s of CPU for one 60 KiB request,
// so a handful of clients held every core.
func TestCookieHeaderWorkBounded(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "jwks.json", testJWKS())
	cfg := writeFile(t, dir, "cfg.yaml", []byte(`
listen: 127.0.0.1:0
token_sources: [{cookie: access_token}]
issuers: [{issuer: "https://a.test/", jwks_file: jwks.json}]
`))
	p := startBin(t, nil, nil, "serve", "--config", cfg)
	line := p.waitLog(t, "listening")
	base := "http://" + line["http"].(string)
	waitReadyz(t, base)

	const headerBytes = 60 << 10 // under maxHeaderBytes: the listener reads it
	cookie := "x=" + strings.Repeat("a ", headerBytes/2) + "="
	send := func() int {
		req, err := http.NewRequest(http.MethodGet, base+"/v1/authz", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Cookie", cookie)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	send() // warm up the connection and the handler
	before := metricValue(t, http.DefaultClient, base, "go_memstats_alloc_bytes_total")
	code := send()
	after := metricValue(t, http.DefaultClient, base, "go_memstats_alloc_bytes_total")
	spent := after - before
	t.Logf("one request with a %d-byte Cookie header: status %d, %.0f MiB allocated", len(cookie), code, spent/(1<<20))
	// Linear work allocates a few times the header at most; allow 1024×.
	if limit := float64(1024 * len(cookie)); spent > limit {
		t.Fatalf("one request with a %d-byte Cookie header allocated %.0f MiB (bound %.0f MiB): the work grows with the square of the header",
			len(cookie), spent/(1<<20), limit/(1<<20))
	}
}
