package integration

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestProxyLargeAllowedAnswer: an allowed answer carries the minted token
// and the claim headers, each claim header up to 1024 bytes and the minted
// token as large as the claims it copies (a groups list of a hundred
// GUIDs, as Entra ID sends below its 200-group overage). The generated
// nginx file read the auth answer's headers into nginx's default
// proxy_buffer_size (one 4 KiB page): such an answer was "upstream sent
// too big header", and a valid token was answered 503
// jwksverify_unreachable, blaming a jwksverify that had allowed it.
func TestProxyLargeAllowedAnswer(t *testing.T) {
	for _, px := range []string{"nginx", "caddy"} {
		t.Run(px, func(t *testing.T) {
			is := newTestIssuer(t)
			up := startEcho(t)
			extra := strings.Replace(mintExtra(t), "mint: {audience: orders-service}", "mint: {audience: orders-service, claims: {groups: groups}}", 1)
			issuer := strings.Replace(is.IssuerConfig(), "claims_to_headers: {sub: X-Auth-Subject, scope: X-Auth-Scope}",
				"claims_to_headers: {sub: X-Auth-Subject, scope: X-Auth-Scope, email: X-Auth-Email, name: X-Auth-Name}", 1)
			cfg := fmt.Sprintf("listen: 127.0.0.1:%d\nshutdown_timeout: 1s\nforward_auth: {proxy: %s}\n%sissuers:\n%s", freePort(t), px, extra, issuer)
			listen := startBehindProxy(t, px, cfg, up)
			groups := make([]string, 100)
			for i := range groups {
				groups[i] = fmt.Sprintf("%08x-0000-4000-8000-%012x", i, i)
			}
			long := strings.Repeat("a", 600)
			token := is.Token(map[string]any{"groups": groups, "email": long + "@example.com", "name": long})
			req, _ := http.NewRequest(http.MethodGet, "http://"+listen+"/orders/1", nil)
			req.Header.Set("Authorization", "Bearer "+token)
			resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("a valid token (%d bytes) on a minting route: status %d %s, want 200", len(token), resp.StatusCode, body)
			}
			if got := up.Last().Headers.Get("X-Auth-Name"); got != long {
				t.Errorf("X-Auth-Name = %d bytes, want the claim's %d", len(got), len(long))
			}
		})
	}
}
