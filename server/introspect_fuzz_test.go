package server

import (
	"encoding/base64"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"golang.org/x/net/http/httpguts"
)

// FuzzIntrospectClient sends /introspect a valid token with arbitrary
// Authorization and Accept headers: an answer (200) only for the
// credentials of a configured client as net/http's BasicAuth reads them
// (raw, or form-encoded: RFC 6749 §2.3.1), or its secret as a Bearer
// credential; otherwise 401 invalid_client with a Basic challenge; and no
// answer echoes the secret.
func FuzzIntrospectClient(f *testing.F) {
	const id, secret = "gateway", "gateway-secret-value"
	basic := func(s string) string { return "Basic " + base64.StdEncoding.EncodeToString([]byte(s)) }
	for _, s := range [][2]string{
		{basic(id + ":" + secret), ""}, {basic("gate%77ay:gateway-secret-valu%65"), "application/token-introspection+jwt"},
		{basic(id + ":" + secret + "x"), "application/json"}, {"Bearer " + secret, "*/*;q=0"}, {"bearer   " + secret, ""},
		{"Basic " + base64.StdEncoding.EncodeToString([]byte(id + ":" + secret))[1:], ""}, {basic("gateway+:" + secret), ""},
		{"Basic  " + base64.StdEncoding.EncodeToString([]byte(id+":"+secret)), ""}, {basic(":" + secret), ""}, {basic(id), ""},
	} {
		f.Add(s[0], s[1])
	}
	e := newEnv(f, envConfig{})
	form := "token=" + tokens()["valid"]
	f.Fuzz(func(t *testing.T, authorization, accept string) {
		if !httpguts.ValidHeaderFieldValue(authorization) || !httpguts.ValidHeaderFieldValue(accept) {
			return // net/http's server refuses such a header
		}
		authorization, accept = strings.Trim(authorization, " \t"), strings.Trim(accept, " \t")
		r := introspectRequest(form, "", "")
		r.Header.Set("Authorization", authorization)
		if accept != "" {
			r.Header.Set("Accept", accept)
		}
		w := do(e.handler, r)
		if s, ok := leaked(w.Body.String(), secret); ok {
			t.Fatalf("answer %d %s echoes %q", w.Code, w.Body, s)
		}
		authed := false
		if bid, bsecret, ok := r.BasicAuth(); ok {
			uid, err1 := url.QueryUnescape(bid)
			usecret, err2 := url.QueryUnescape(bsecret)
			authed = (bid == id && bsecret == secret) || (err1 == nil && err2 == nil && uid == id && usecret == secret)
		} else if len(authorization) > len("Bearer ") && strings.EqualFold(authorization[:len("Bearer ")], "Bearer ") {
			authed = strings.TrimLeft(authorization[len("Bearer "):], " ") == secret
		}
		switch {
		case authed && w.Code != http.StatusOK:
			t.Fatalf("Authorization %q = %d %s, want 200", authorization, w.Code, w.Body)
		case !authed && (w.Code != http.StatusUnauthorized || !strings.HasPrefix(w.Header().Get("WWW-Authenticate"), "Basic ") ||
			!strings.Contains(w.Body.String(), `"invalid_client"`)):
			t.Fatalf("Authorization %q = %d %s (challenge %q), want 401 invalid_client", authorization, w.Code, w.Body, w.Header().Get("WWW-Authenticate"))
		}
	})
}
