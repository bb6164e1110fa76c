package server

import (
	"net/url"
	"strings"
	"testing"

	"github.com/jwksverify/jwksverify/policy"
	"github.com/jwksverify/jwksverify/request"
)

// phpGET is PHP's $_GET for a query, as main/php_variables.c builds it
// (php_default_treat_data + php_register_variable_ex): pairs split at '&',
// the name url-decoded in place and then read with strlen (so it ends at
// the first NUL), leading spaces dropped, ' ' and '.' read as '_'; the last
// pair of a name wins. Arrays are left out (not needed here).
func phpGET(q string) map[string]string {
	out := map[string]string{}
	for _, pair := range strings.Split(q, "&") {
		k, v, _ := strings.Cut(pair, "=")
		k, _ = url.QueryUnescape(k)
		v, _ = url.QueryUnescape(v)
		if i := strings.IndexByte(k, 0); i >= 0 {
			k = k[:i]
		}
		k = strings.TrimLeft(k, " ")
		k = strings.NewReplacer(" ", "_", ".", "_").Replace(k)
		if k != "" {
			out[k] = v
		}
	}
	return out
}

func TestPHPNameEndsAtNUL(t *testing.T) {
	h := newRoutedHandler(t, request.Nginx, policy.Options{
		Policies: []policy.Spec{
			{Name: "admin", Claims: []policy.Claim{{Claim: "groups", AnyOf: []any{"admins"}}}},
			{Name: "user"},
		},
		Routes: []policy.Route{
			{Methods: []string{"DELETE"}, Path: "/orders/**", Policy: "admin"},
			{Path: "/orders/**", Policy: "user"},
		},
		DefaultPolicy: "admin",
	}, []TokenSource{{Header: "Authorization", Prefix: "Bearer "}, {Query: "access_token"}})
	user := mint(claims(map[string]any{"groups": []string{"staff"}, "sub": "alice"}))
	other := mint(claims(map[string]any{"groups": []string{"staff"}, "sub": "mallory"}))

	t.Run("method-override", func(t *testing.T) {
		for _, q := range []string{"_method=DELETE", ".method=DELETE", "_method%00=DELETE", "_method%00x=DELETE"} {
			w := do(h, nginxAuthz("POST", "/orders/1?"+q, user, nil))
			t.Logf("POST /orders/1?%s -> %d (PHP $_GET[_method]=%q)", q, w.Code, phpGET(q)["_method"])
			if phpGET(q)["_method"] == "DELETE" && w.Code == 200 {
				t.Errorf("POST /orders/1?%s allowed for a non-admin; Laravel/Symfony run it as DELETE", q)
			}
		}
	})
	t.Run("query-token", func(t *testing.T) {
		for _, q := range []string{
			"access_token=" + user + "&access_token=" + other,
			"access_token=" + user + "&access_token%00=" + other,
		} {
			w := do(h, nginxAuthz("GET", "/orders/1?"+q, "", nil))
			got := phpGET(q)["access_token"]
			t.Logf("GET ?%s... -> %d; PHP reads the token of %s", q[:20], w.Code, map[bool]string{true: "alice", false: "mallory"}[got == user])
			if w.Code == 200 && got != user {
				t.Errorf("allowed with alice's token verified while PHP's $_GET[access_token] is another token")
			}
		}
	})
}
