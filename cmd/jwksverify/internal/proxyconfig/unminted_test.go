package proxyconfig

import (
	"strings"
	"testing"

	"github.com/jwksverify/jwksverify/request"
)

// TestEnvoyMintHeaderCleared: with mint.header X-Internal-Token, every
// proxy must drop a client's own copy (DECISIONS: "cleared like a claim
// header"), so that a route that mints nothing does not pass a forged or
// replayed one to the application; and its underscore twins where the
// proxy passes them (a CGI, FastCGI or WSGI upstream reads
// X_Internal_Token as HTTP_X_INTERNAL_TOKEN; nginx drops such headers).
func TestEnvoyMintHeaderCleared(t *testing.T) {
	yaml := threeHeaders + "mint: {issuer: https://jwksverify.internal, keys_file: mint.jwks, signing_kid: k1, header: X-Internal-Token}\n"
	for _, tt := range []struct {
		px   request.Proxy
		want string
	}{
		{request.Caddy, "request_header -X-Internal-Token\n"},
		{request.Nginx, "proxy_set_header X-Internal-Token $jwksverify_minted;"},
		{request.Traefik, "- X-Internal-Token"},
		{request.Envoy, "- remove: x-internal-token\n"},
		{request.Caddy, "request_header -X_internal_token\n"},
		{request.Traefik, "X_internal_token: \"\"\n"},
	} {
		out := writeFor(t, yaml, tt.px)
		if !strings.Contains(out, tt.want) {
			t.Errorf("%s: client's X-Internal-Token is not cleared (no %q)", tt.px, tt.want)
			if tt.px == request.Envoy {
				for _, l := range strings.Split(out, "\n") {
					if strings.Contains(strings.ToLower(l), "internal-token") || strings.Contains(l, "- remove:") {
						t.Log(l)
					}
				}
			}
		}
	}
}

// TestEnvoySendsHeaderSources: Envoy sends the authorization call only the
// headers its file lists: a header token source it left out never reached
// jwksverify, and an anonymous route then passed it to the application
// unverified. Both listeners list it.
func TestEnvoySendsHeaderSources(t *testing.T) {
	yaml := threeHeaders + "token_sources: [{header: Authorization, prefix: \"Bearer \"}, {header: X-Api-Token}]\n"
	out := writeFor(t, yaml, request.Envoy)
	if n := strings.Count(out, "- exact: x-api-token\n"); n != 2 {
		t.Errorf("x-api-token listed in %d allowed_headers, want 2 (the gRPC and the HTTP listener)", n)
	}
}

// TestEnvoySendsContentTypeWithQuerySource: with a query token source,
// jwksverify refuses a query token beside a form body (an application's
// FormValue reads the body's access_token first), which it tells by the
// request's Content-Type: Envoy sends it only when the file lists it, in
// both listeners.
func TestEnvoySendsContentTypeWithQuerySource(t *testing.T) {
	const listed = "- exact: content-type\n"
	const envoy = threeHeaders + "forward_auth: {proxy: envoy}\n"
	without := strings.Count(writeFor(t, envoy, request.Envoy), listed)
	yaml := envoy + "token_sources: [{header: Authorization, prefix: \"Bearer \"}, {query: access_token}]\n"
	if n := strings.Count(writeFor(t, yaml, request.Envoy), listed) - without; n != 2 {
		t.Errorf("content-type listed in %d more allowed_headers with a query source, want 2 (the gRPC and the HTTP listener)", n)
	}
}
