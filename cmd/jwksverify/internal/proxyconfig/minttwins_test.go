package proxyconfig

import (
	"strings"
	"testing"

	"github.com/jwksverify/jwksverify/request"
)

// TestMintHeaderTwinsCleared: with mint.header X-Internal-Token, every
// proxy that passes headers with underscores must drop a client's
// X_Internal_Token (a CGI, FastCGI or WSGI upstream reads it as
// X-Internal-Token: HTTP_X_INTERNAL_TOKEN) — as it does for claim
// headers — so that a route that mints nothing (an anonymous one, a policy
// without mint) never hands the application a token jwksverify did not
// mint, and a minting route never carries a client's twin beside ours.
func TestMintHeaderTwinsCleared(t *testing.T) {
	yaml := threeHeaders + "mint: {issuer: https://jwksverify.internal, keys_file: mint.jwks, signing_kid: k1, header: X-Internal-Token}\n"
	for _, tt := range []struct {
		px   request.Proxy
		want string
	}{
		{request.Caddy, "request_header -X_internal_token\n"},
		{request.Traefik, "X_internal_token: \"\"\n"},
	} {
		out := writeFor(t, yaml, tt.px)
		if !strings.Contains(out, tt.want) {
			t.Errorf("%s: a client's X_Internal_Token (read as X-Internal-Token by a CGI upstream) is not cleared (no %q)", tt.px, tt.want)
		}
	}
}
