package server_test

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/jwksverify/jwksverify/cache"
	"github.com/jwksverify/jwksverify/internal/testkeys"
	"github.com/jwksverify/jwksverify/server"
	"github.com/jwksverify/jwksverify/verify"
)

// exampleVerifier returns a verifier for one issuer whose key set holds the
// test RSA key "k1", judged at a fixed instant.
func exampleVerifier(now time.Time) *verify.Verifier {
	key, err := cache.NewKey(testkeys.Public(testkeys.RSA2048A), cache.KeyMeta{Kid: "k1"})
	if err != nil {
		panic(err)
	}
	keys := &cache.Keys{}
	keys.Store(cache.NewSet([]*cache.Key{key}, nil, now, now.Add(time.Hour)))
	v, err := verify.New(verify.Options{
		Issuers: []verify.Issuer{{Issuer: "https://idp.example.com/", Keys: keys, Audiences: []string{"api://orders"}, ExtractClaims: []string{"sub"}}},
		Now:     func() time.Time { return now },
	})
	if err != nil {
		panic(err)
	}
	return v
}

func exampleToken(now time.Time) string {
	return testkeys.Mint("RS256", testkeys.Private(testkeys.RSA2048A), map[string]any{"kid": "k1"}, map[string]any{
		"iss": "https://idp.example.com/", "sub": "alice", "aud": "api://orders", "exp": now.Add(time.Minute).Unix(),
	})
}

func ExampleMiddleware() {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	protect := server.Middleware(exampleVerifier(now), server.MiddlewareOptions{Logger: slog.New(slog.DiscardHandler)})
	h := protect(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		res, _ := server.ResultFromContext(r.Context())
		fmt.Fprintf(w, "hello %s", res.Subject)
	}))

	r := httptest.NewRequest(http.MethodGet, "/orders", nil)
	r.Header.Set("Authorization", "Bearer "+exampleToken(now))
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	fmt.Println(w.Code, w.Body)

	w = httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/orders", nil))
	fmt.Println(w.Code, w.Header().Get("WWW-Authenticate"))
	// Output:
	// 200 hello alice
	// 401 Bearer realm="jwksverify"
}

func ExampleServer_Handler() {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	srv, err := server.New(server.Options{
		Verifier:        exampleVerifier(now),
		ClaimsToHeaders: map[string]map[string]string{"https://idp.example.com/": {"sub": "X-Auth-Subject"}},
		Now:             func() time.Time { return now },
	})
	if err != nil {
		panic(err)
	}
	r := httptest.NewRequest(http.MethodGet, "/v1/authz/orders/42", nil)
	r.Header.Set("Authorization", "Bearer "+exampleToken(now))
	w := httptest.NewRecorder()
	srv.Handler().ServeHTTP(w, r)
	fmt.Println(w.Code, w.Header().Get("X-Auth-Subject"))
	// Output: 200 alice
}
