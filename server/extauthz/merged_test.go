package extauthz

import (
	"encoding/base64"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/jwksverify/jwksverify/policy"
	"github.com/jwksverify/jwksverify/server"
	"github.com/jwksverify/jwksverify/server/internal/servertest"
)

// forged is an unsigned JWT claiming an admin subject: never verifiable.
func forged() string {
	b := base64.RawURLEncoding.EncodeToString
	return b([]byte(`{"alg":"none"}`)) + "." + b([]byte(`{"sub":"admin","groups":["admins"]}`)) + "."
}

// TestMergedAuthorizationRefused: Envoy's default CheckRequest merges a
// repeated header into one "headers" value joined with ','. Two
// Authorization headers ("Basic …" then "Bearer <forged>") reach jwksverify
// as "Basic YTpi,Bearer <forged>": no Bearer prefix, so no token; the HTTP
// front end (and header_map) refuse the same request as ambiguous. Envoy
// forwards both headers to the application.
func TestMergedAuthorizationRefused(t *testing.T) {
	ve := servertest.NewEnv(t, servertest.Config{TokenCache: 10})
	set, err := policy.New(policy.Options{
		Policies:      []policy.Spec{{Name: "public", AllowAnonymous: true}, {Name: "user"}},
		Routes:        []policy.Route{{Path: "/public/**", Policy: "public"}},
		DefaultPolicy: "user",
	})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Options{Verifier: ve.V, ClaimsToHeaders: servertest.ClaimsToHeaders(), Policies: set, Proxy: "nginx",
		TokenSources: []server.TokenSource{{Header: "Authorization", Prefix: "Bearer "}, {Cookie: "at"}},
		Logger:       slog.New(slog.NewJSONHandler(ve.Logs, nil)), Now: ve.Clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	g := startGRPC(t, &env{clock: ve.Clock, keysA: ve.KeysA, v: ve.V, srv: srv, logs: ve.Logs})
	valid := mint(claims(nil)) // sub alice
	merged := "Basic YTpi,Bearer " + forged()

	for _, tt := range []struct {
		name    string
		path    string
		headers map[string]string
	}{
		// Anonymous route: the forged Bearer reaches the app unverified.
		{"anonymous-route", "/public/x", map[string]string{"authorization": merged}},
		// Token required: the cookie's token is verified (alice), the
		// app gets Authorization: Bearer <forged admin> beside it.
		{"cookie-verified-bearer-forwarded", "/orders/1", map[string]string{"authorization": merged, "cookie": "at=" + valid}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			// gRPC, headers map (Envoy's default form).
			resp, err := g.authz.Check(t.Context(), envoyRequest("GET", tt.path, tt.headers))
			if err != nil {
				t.Fatal(err)
			}
			grpcCode := codes.Code(resp.GetStatus().GetCode())
			// gRPC, header_map (encode_raw_headers): two entries.
			h2 := map[string]string{}
			for k, v := range tt.headers {
				if k != "authorization" {
					h2[k] = v
				}
			}
			resp2, err := g.authz.Check(t.Context(), rawHeaders(envoyRequest("GET", tt.path, h2), [2]string{"authorization", "Basic YTpi"}, [2]string{"authorization", "Bearer " + forged()}))
			if err != nil {
				t.Fatal(err)
			}
			rawCode := codes.Code(resp2.GetStatus().GetCode())
			// HTTP forward-auth, nginx preset: two Authorization lines.
			r := httptest.NewRequest(http.MethodGet, "/v1/authz", nil)
			r.Header.Set("X-Original-Method", "GET")
			r.Header.Set("X-Original-Uri", tt.path)
			r.Header.Set("X-Original-Host", "app.example.com")
			r.Header.Add("Authorization", "Basic YTpi")
			r.Header.Add("Authorization", "Bearer "+forged())
			if c, ok := tt.headers["cookie"]; ok {
				r.Header.Set("Cookie", c)
			}
			w := httptest.NewRecorder()
			srv.Handler().ServeHTTP(w, r)
			t.Logf("gRPC headers map: %v; gRPC header_map: %v; HTTP nginx: %d", grpcCode, rawCode, w.Code)
			if grpcCode == codes.OK {
				t.Errorf("gRPC (headers map) allowed a request carrying Authorization: Basic + Authorization: Bearer <unverified>; header_map form says %v, HTTP says %d", rawCode, w.Code)
			}
		})
	}
}
