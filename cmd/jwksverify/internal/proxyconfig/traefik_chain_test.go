package proxyconfig

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/jwksverify/jwksverify/request"
	"github.com/jwksverify/jwksverify/server"
)

// traefikChain runs the router's middlewares of a generated Traefik file
// the way Traefik does (headers.customRequestHeaders: "" deletes the header;
// forwardAuth deletes every authResponseHeaders header of the request, then
// copies the answer's), for a client's request and jwksverify's 200
// answer, and returns what the application receives.
func traefikChain(t *testing.T, file string, client, answer http.Header) http.Header {
	t.Helper()
	var f struct {
		HTTP struct {
			Routers     map[string]struct{ Middlewares []string }
			Middlewares map[string]struct {
				Headers *struct {
					CustomRequestHeaders map[string]string `yaml:"customRequestHeaders"`
				}
				ForwardAuth *struct {
					AuthResponseHeaders []string `yaml:"authResponseHeaders"`
				} `yaml:"forwardAuth"`
			}
		}
	}
	if err := yaml.Unmarshal([]byte(file), &f); err != nil {
		t.Fatal(err)
	}
	req := client.Clone()
	for _, name := range f.HTTP.Routers["app"].Middlewares {
		m, ok := f.HTTP.Middlewares[name]
		if !ok {
			t.Fatalf("middleware %s not defined", name)
		}
		if m.Headers != nil {
			for h, v := range m.Headers.CustomRequestHeaders {
				if v == "" {
					req.Del(h)
				} else {
					req.Set(h, v)
				}
			}
		}
		if m.ForwardAuth != nil {
			for _, h := range m.ForwardAuth.AuthResponseHeaders {
				k := http.CanonicalHeaderKey(h)
				req.Del(k)
				if vs := answer[k]; len(vs) > 0 {
					req[k] = append([]string(nil), vs...)
				}
			}
		}
	}
	return req
}

// TestTraefikStripKeepsMintedAuthorization: with mint (header
// Authorization, the default) and forward_auth.strip_authorization,
// jwksverify mints into Authorization and does not ask for its removal
// (API.md: "not when a token was minted into Authorization"); nginx's,
// Caddy's and Envoy's files send the application the minted token. Traefik's
// file runs jwksverify-strip after forwardAuth, which deletes the minted
// token: the phantom-token application never gets it. On a route that
// mints nothing, the client's token must still be dropped.
func TestTraefikStripKeepsMintedAuthorization(t *testing.T) {
	yaml := threeHeaders + "forward_auth: {proxy: traefik, strip_authorization: true}\n" +
		"mint: {issuer: https://jwksverify.internal, keys_file: mint.jwks, signing_kid: k1}\n"
	out := writeFor(t, yaml, request.Traefik)
	client := http.Header{"Authorization": {"Bearer client-token"}}
	got := traefikChain(t, out, client, http.Header{"Authorization": {"Bearer minted"}, "X-Auth-Subject": {"alice"}})
	if v := got.Values("Authorization"); len(v) != 1 || v[0] != "Bearer minted" {
		t.Errorf("minting route: the application gets Authorization %q, want [\"Bearer minted\"]", v)
	}
	got = traefikChain(t, out, client, http.Header{"X-Auth-Subject": {"alice"}})
	if v := got.Values("Authorization"); len(v) != 0 {
		t.Errorf("route minting nothing: the application gets Authorization %q, want none (strip_authorization)", v)
	}
}

// TestTraefikMintHeaderTwinsReachApp: on a route that mints nothing, a
// client's X_Internal_Token must not reach the application, which reads it
// as mint.header X-Internal-Token (a CGI, WSGI or Rack upstream); forwardAuth
// replaces or removes the exact name only.
func TestTraefikMintHeaderTwinsReachApp(t *testing.T) {
	yaml := threeHeaders + "mint: {issuer: https://jwksverify.internal, keys_file: mint.jwks, signing_kid: k1, header: X-Internal-Token}\n"
	out := writeFor(t, yaml, request.Traefik)
	client := http.Header{"Authorization": {"Bearer client-token"}, "X_internal_token": {"forged-minted-jwt"}}
	got := traefikChain(t, out, client, http.Header{"X-Auth-Subject": {"alice"}})
	for _, tw := range append([]string{"X-Internal-Token"}, server.HeaderTwins("X-Internal-Token")...) {
		if v := got[tw]; len(v) != 0 {
			t.Errorf("the application gets %s: %q, which it reads as mint.header X-Internal-Token", tw, v)
		}
	}
}

// TestNginxMTLSConfKeepsForwardingRules: deploy/nginx/nginx-mtls.conf is
// written by hand (the template has no TLS listener), so nothing
// regenerates it: it must still set the headers the generated nginx.conf
// sets for the application and blank every header of forwarding.Removed,
// or an application that reads its host or path from them acts on another
// request than the one decided (it fell behind once:
// TestNginxMTLSConfForwardedHost).
func TestNginxMTLSConfKeepsForwardingRules(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot, "deploy/nginx/nginx-mtls.conf"))
	if err != nil {
		t.Fatal(err)
	}
	conf := string(b)
	want := []string{"proxy_set_header Host $jwksverify_host;", "proxy_set_header X-Forwarded-Host $jwksverify_host;",
		"proxy_set_header X-Forwarded-Proto $scheme;", "proxy_set_header X-Original-Host $jwksverify_host;",
		"underscores_in_headers off;"}
	for _, h := range forwarding.Removed {
		want = append(want, fmt.Sprintf("proxy_set_header %s \"\";", h))
	}
	for _, w := range want {
		if !strings.Contains(conf, w) {
			t.Errorf("deploy/nginx/nginx-mtls.conf lacks %q", w)
		}
	}
}
