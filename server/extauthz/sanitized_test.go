package extauthz

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode/utf8"

	"google.golang.org/grpc/codes"

	"github.com/jwksverify/jwksverify/policy"
	"github.com/jwksverify/jwksverify/request"
	"github.com/jwksverify/jwksverify/server"
	"github.com/jwksverify/jwksverify/server/internal/servertest"
)

// envoySanitize is what Envoy does to each header value it puts in the
// CheckRequest's headers map (Envoy's default, without encode_raw_headers):
// MessageUtil::sanitizeUtf8String, which replaces every byte of an invalid
// UTF-8 sequence with '!' (utf8_range's CoerceToStructurallyValid), so that
// the proto string is valid UTF-8. The HTTP ext_authz request is built from
// the same map, so it carries the sanitized value too. The application gets
// the bytes the client sent.
func envoySanitize(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n <= 1 {
			b.WriteByte('!')
			i++
			continue
		}
		b.WriteString(s[i : i+n])
		i += n
	}
	return b.String()
}

// TestSanitizedHeaderKeepsItsRefusal: a header value holding a byte that is
// not UTF-8 (0xA0, a no-break space once an application decodes the header
// as Latin-1, as WSGI and Node do) reaches jwksverify through Envoy with
// that byte turned into '!'. jwksverify refuses the raw value (from nginx,
// or gRPC's header_map) — "Bearer\xa0<jwt>" is malformed, an override
// "DELETE\xa0" is no method token — but "Bearer!<jwt>" was another scheme
// (no token: an anonymous route let it through, and Python's str.split()
// reads the forged token behind it) and "DELETE!" a method no route names
// (the request was decided for POST and "DELETE!", while Express's
// method-override trims the no-break space and runs DELETE).
func TestSanitizedHeaderKeepsItsRefusal(t *testing.T) {
	ve := servertest.NewEnv(t, servertest.Config{TokenCache: 10})
	set, err := policy.New(policy.Options{
		Policies: []policy.Spec{
			{Name: "public", AllowAnonymous: true},
			{Name: "write", Scopes: policy.Scopes{All: []string{"orders:admin"}}},
			{Name: "read", Scopes: policy.Scopes{Any: []string{"orders:read"}}},
		},
		Routes: []policy.Route{
			{Path: "/public/**", Policy: "public"},
			{Methods: []string{"DELETE"}, Path: "/orders/**", Policy: "write"},
			{Path: "/orders/**", Policy: "read"},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	newSrv := func(proxy request.Proxy) *server.Server {
		srv, err := server.New(server.Options{Verifier: ve.V, ClaimsToHeaders: servertest.ClaimsToHeaders(), Policies: set, Proxy: proxy,
			Logger: slog.New(slog.NewJSONHandler(ve.Logs, nil)), Now: ve.Clock.Now})
		if err != nil {
			t.Fatal(err)
		}
		return srv
	}
	nginx, envoy := newSrv("nginx"), newSrv("envoy")
	g := startGRPC(t, &env{clock: ve.Clock, keysA: ve.KeysA, v: ve.V, srv: nginx, logs: ve.Logs})
	reader := mint(claims(map[string]any{"scope": "orders:read"}))

	for _, tt := range []struct {
		name, method, path string
		header, value      string
	}{
		// Anonymous route: the raw value is malformed (Bearer and a byte
		// that is not a space); sanitized, "Bearer!…" was no token at all.
		{"bearer-nbsp", "GET", "/public/x", "authorization", "Bearer\xa0" + forged()},
		{"dpop-nbsp", "GET", "/public/x", "authorization", "DPoP\xa0" + forged()},
		{"merged-nbsp", "GET", "/public/x", "authorization", "Basic YTpi,Bearer\xa0" + forged()},
		// Before the scheme: Python's "\xa0Bearer <jwt>".split() and
		// strip() read the scheme and the forged token (every front end,
		// raw or sanitized, let it through as no token).
		{"leading-nbsp", "GET", "/public/x", "authorization", "\xa0Bearer " + forged()},
		// A reader's POST overriding to DELETE, which needs orders:admin.
		{"override-nbsp", "POST", "/orders/1", "x-http-method-override", "DELETE\xa0"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			hs := map[string]string{tt.header: tt.value}
			if tt.header != "authorization" {
				hs["authorization"] = "Bearer " + reader
			}
			sanitized := map[string]string{}
			for k, v := range hs {
				sanitized[k] = envoySanitize(v)
			}
			// gRPC, header_map (encode_raw_headers): the bytes as sent.
			raw, err := g.authz.Check(t.Context(), rawHeaders(envoyRequest(tt.method, tt.path, hs)))
			if err != nil {
				t.Fatal(err)
			}
			rawCode := codes.Code(raw.GetStatus().GetCode())
			// HTTP forward-auth, nginx preset: the bytes as sent.
			r := httptest.NewRequest(http.MethodGet, "/v1/authz", nil)
			r.Header.Set("X-Original-Method", tt.method)
			r.Header.Set("X-Original-Uri", tt.path)
			r.Header.Set("X-Original-Host", "app.example.com")
			for k, v := range hs {
				r.Header.Set(k, v)
			}
			w := httptest.NewRecorder()
			nginx.Handler().ServeHTTP(w, r)
			if rawCode == codes.OK || w.Code == http.StatusOK {
				t.Errorf("the raw value %q is allowed (gRPC header_map %v, nginx %d)", tt.value, rawCode, w.Code)
			}
			// gRPC, headers map (Envoy's default): sanitized.
			resp, err := g.authz.Check(t.Context(), envoyRequest(tt.method, tt.path, sanitized))
			if err != nil {
				t.Fatal(err)
			}
			if c := codes.Code(resp.GetStatus().GetCode()); c == codes.OK {
				t.Errorf("gRPC headers map: %s %q (Envoy's sanitizing of %q) allowed; the raw value: header_map %v, nginx %d",
					tt.header, sanitized[tt.header], tt.value, rawCode, w.Code)
			}
			// HTTP ext_authz, Envoy preset: built from the same map.
			r = httptest.NewRequest(tt.method, "/v1/authz"+tt.path, nil)
			r.Host = "app.example.com"
			for k, v := range sanitized {
				r.Header.Set(k, v)
			}
			w = httptest.NewRecorder()
			envoy.Handler().ServeHTTP(w, r)
			if w.Code == http.StatusOK {
				t.Errorf("HTTP envoy preset: %s %q (Envoy's sanitizing of %q) allowed", tt.header, sanitized[tt.header], tt.value)
			}
		})
	}
}
