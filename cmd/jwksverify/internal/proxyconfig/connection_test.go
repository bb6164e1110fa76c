package proxyconfig

import (
	"net/textproto"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/jwksverify/jwksverify/request"
)

// TestCaddyConnectionListingCopiedHeader: Caddy's reverse_proxy removes
// every header Connection lists (split at ',', trimmed, compared by
// canonical name) from the request it sends the application, after
// forward_auth copied the verified headers in. The Caddy file drops a
// Connection that lists any header it copies from jwksverify's answer (the
// claim headers and mint.header), whatever the case, spacing or position,
// and keeps one that lists none (a WebSocket's Connection: Upgrade).
func TestCaddyConnectionListingCopiedHeader(t *testing.T) {
	yaml := threeHeaders + "mint: {issuer: https://jwksverify.internal, keys_file: mint.jwks, signing_kid: k1, header: X-Internal-Token}\n"
	copied := []string{"X-Auth-Email", "X-Auth-Scope", "X-Auth-Subject", "X-Internal-Token"}
	out := writeFor(t, yaml, request.Caddy)
	const prefix = "@jwksverify_connection header_regexp Connection "
	var pattern string
	for line := range strings.Lines(out) {
		if p, ok := strings.CutPrefix(strings.TrimSpace(line), prefix); ok {
			pattern = p
		}
	}
	if pattern == "" || !strings.Contains(out, "request_header @jwksverify_connection -Connection\n") {
		t.Fatalf("the Caddy file drops no Connection that lists a copied header:\n%s", out)
	}
	re := regexp.MustCompile(pattern)
	for _, v := range []string{
		"X-Auth-Subject", "x-auth-scope", "keep-alive, X-AUTH-EMAIL", "Upgrade,\tX-Internal-Token",
		"X-Auth-Scope ,close", " x-auth-subject ", "a,,X-Auth-Subject,b",
		"", "keep-alive", "Upgrade", "close", "X-Auth-Subjects", "X-Auth", "X_Auth_Subject", "X-Auth-Subject-Extra, Upgrade",
	} {
		removes := false
		for f := range strings.SplitSeq(v, ",") {
			if slices.Contains(copied, textproto.CanonicalMIMEHeaderKey(textproto.TrimString(f))) {
				removes = true
			}
		}
		if got := re.MatchString(v); got != removes {
			t.Errorf("Connection: %q: dropped = %v, want %v (a proxy removes a copied header: %v)", v, got, removes, removes)
		}
	}
}
