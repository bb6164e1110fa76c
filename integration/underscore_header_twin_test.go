package integration

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// cgiValues returns the values of every header of h that a CGI, FastCGI or
// WSGI application reads under name's CGI key (HTTP_X_REMOTE_USER for
// X-Remote-User, X_Remote_User, x-remote_user…).
func cgiValues(h http.Header, name string) []string {
	key := strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
	var out []string
	for k, vs := range h {
		if strings.ToUpper(strings.ReplaceAll(k, "-", "_")) == key {
			for _, v := range vs {
				out = append(out, k+"="+v)
			}
		}
	}
	return out
}

// TestProxyUnderscoreClaimHeaderTwin: a claim header whose configured name
// holds '_' (X_Remote_User: CheckClaimHeader accepts it) is jwksverify's
// alone, through the generated nginx and Caddy files, under every spelling a
// CGI application reads as it. nginx's file relies on
// underscores_in_headers off to drop a client's twins, which drops only
// names with '_': the client's X-Remote-User — the '-' twin of X_Remote_User
// — is a valid header nginx passes on beside (or, for a token without the
// claim, instead of) the verified value. Caddy's file clears every twin.
func TestProxyUnderscoreClaimHeaderTwin(t *testing.T) {
	for _, px := range []string{"nginx", "caddy"} {
		t.Run(px, func(t *testing.T) {
			is := newTestIssuer(t)
			up := startEcho(t)
			issuer := strings.Replace(is.IssuerConfig(), "claims_to_headers: {sub: X-Auth-Subject, scope: X-Auth-Scope}",
				"claims_to_headers: {sub: X_Remote_User}", 1)
			cfg := fmt.Sprintf("listen: 127.0.0.1:%d\nshutdown_timeout: 1s\nforward_auth: {proxy: %s}\nissuers:\n%s", freePort(t), px, issuer)
			listen := startBehindProxy(t, px, cfg, up)
			for _, tc := range []struct {
				name, token, want string
			}{
				{"with-sub", is.Token(nil), "alice"},
				{"without-sub", is.Token(map[string]any{"sub": nil}), ""},
			} {
				t.Run(tc.name, func(t *testing.T) {
					getThrough(t, "http://"+listen+"/orders/1", tc.token, "X-Remote-User", "admin", up) // the '-' twin of X_Remote_User
					var forged []string
					for _, kv := range cgiValues(up.Last().Headers, "X_Remote_User") {
						if _, v, _ := strings.Cut(kv, "="); v != tc.want {
							forged = append(forged, kv)
						}
					}
					if len(forged) != 0 {
						t.Errorf("the application reads HTTP_X_REMOTE_USER from %q (all: %q); want only jwksverify's %q",
							forged, cgiValues(up.Last().Headers, "X_Remote_User"), tc.want)
					}
				})
			}
		})
	}
}

// TestProxyUnderscoreMintHeaderTwin: with mint.header X_Internal_Token, the
// application finds under HTTP_X_INTERNAL_TOKEN only what jwksverify minted:
// on a route whose policy mints nothing, nothing at all. nginx passed the
// client's X-Internal-Token (a token of its choosing, never verified).
func TestProxyUnderscoreMintHeaderTwin(t *testing.T) {
	for _, px := range []string{"nginx", "caddy"} {
		t.Run(px, func(t *testing.T) {
			is := newTestIssuer(t)
			up := startEcho(t)
			extra := strings.Replace(mintExtra(t), "mint: {", "mint: {header: X_Internal_Token, ", 1)
			cfg := fmt.Sprintf("listen: 127.0.0.1:%d\nshutdown_timeout: 1s\nforward_auth: {proxy: %s}\n%sissuers:\n%s", freePort(t), px, extra, is.IssuerConfig())
			listen := startBehindProxy(t, px, cfg, up)
			for _, path := range []string{"/orders/1", "/public/x"} { // mints; mints nothing
				t.Run(strings.Split(path, "/")[1], func(t *testing.T) {
					getThrough(t, "http://"+listen+path, is.Token(nil), "X-Internal-Token", "FORGED", up) // the '-' twin of X_Internal_Token
					if got := cgiValues(up.Last().Headers, "X_Internal_Token"); strings.Contains(strings.Join(got, "\n"), "FORGED") {
						t.Errorf("the application reads HTTP_X_INTERNAL_TOKEN from %q: the client's own token", got)
					}
				})
			}
		})
	}
}

// startBehindProxy starts the binary on cfg and, in front of it and of up,
// the proxy px ("nginx" or "caddy") running the file proxy-config writes
// for cfg; it returns the proxy's address.
func startBehindProxy(t *testing.T, px, cfg string, up *echo) string {
	t.Helper()
	startJWKSVerify(t, cfg)
	cfgPath := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	b := proxyBackends{upstream: up, config: cfgPath}
	port := freePort(t)
	listen := "127.0.0.1:" + strconv.Itoa(port)
	switch px {
	case "nginx":
		runNginx(t, requireNginx(t), proxyConfig(t, px, b, listen), port)
	case "caddy":
		runCaddy(t, requireTool(t, "caddy", "caddy"), proxyConfig(t, px, b, listen), listen)
	default:
		t.Fatalf("startBehindProxy: no proxy %q", px)
	}
	return listen
}

// getThrough sends GET url with token and the header name: value (as
// spelled) and fails t unless the answer is 200 and up saw the request.
func getThrough(t *testing.T, url, token, name, value string, up *echo) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header[name] = []string{value}
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || up.Last() == nil {
		t.Fatalf("status = %d, want 200", resp.StatusCode)
	}
}
