package server_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"google.golang.org/grpc"

	"github.com/jwksverify/jwksverify/cache"
	"github.com/jwksverify/jwksverify/jwks"
	"github.com/jwksverify/jwksverify/server"
	"github.com/jwksverify/jwksverify/server/extauthz"
	"github.com/jwksverify/jwksverify/verify"
)

// exampleSigningKey is the identity provider's key in these examples; the
// verifier holds only its public half.
var exampleSigningKey, _ = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)

// exampleVerifier returns a verifier for one issuer whose key set holds the
// public key "k1", judged at a fixed instant (a jwks.Fetcher fills the set
// in a service: see Example).
func exampleVerifier(now time.Time) *verify.Verifier {
	key, err := cache.NewKey(&exampleSigningKey.PublicKey, cache.KeyMeta{Kid: "k1"})
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

// exampleToken is alice's ES256 token, as the identity provider would sign
// it (here with golang-jwt).
func exampleToken(now time.Time) string {
	t := jwt.NewWithClaims(jwt.SigningMethodES256, jwt.MapClaims{
		"iss": "https://idp.example.com/", "sub": "alice", "aud": "api://orders", "exp": now.Add(time.Minute).Unix(),
	})
	t.Header["kid"] = "k1"
	token, err := t.SignedString(exampleSigningKey)
	if err != nil {
		panic(err)
	}
	return token
}

func ExampleMiddleware() {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	protect, err := server.Middleware(exampleVerifier(now), server.MiddlewareOptions{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		panic(err) // invalid options
	}
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

// ExampleServer_Decide is a front end of its own: it hands the request's
// headers to the one decision call and writes what the Decision says.
func ExampleServer_Decide() {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	srv, err := server.New(server.Options{
		Verifier:        exampleVerifier(now),
		ClaimsToHeaders: map[string]map[string]string{"https://idp.example.com/": {"sub": "X-Auth-Subject"}},
		Logger:          slog.New(slog.DiscardHandler),
		Now:             func() time.Time { return now },
	})
	if err != nil {
		panic(err)
	}
	for _, authorization := range []string{"Bearer " + exampleToken(now), "Bearer not-a-jwt"} {
		h := http.Header{"Authorization": {authorization}}
		d := srv.Decide(context.Background(), &server.Call{Endpoint: server.EndpointMiddleware, Headers: h})
		if d.Allowed() {
			for name, value := range d.ClaimHeaders() {
				fmt.Println(d.Status, name, value)
			}
			continue
		}
		fmt.Println(d.Status, d.Class, d.Challenge)
	}
	// Output:
	// 200 X-Auth-Subject alice
	// 401 malformed Bearer error="invalid_token", error_description="malformed"
}

// Example wires the library as the service does: a background JWKS fetcher
// per issuer, a verifier over its keys, and the middleware in front of a
// handler. It is compiled, not run: it would fetch keys over the network.
// docs/API.md shows this code.
func Example() {
	ctx := context.Background()
	fetcher, err := jwks.New(jwks.Options{Issuer: "https://idp.example.com/", Discovery: true})
	if err != nil {
		panic(err) // invalid options; New does no I/O
	}
	defer fetcher.Close() // stops the background refresh
	v, err := verify.New(verify.Options{
		Issuers: []verify.Issuer{{
			Issuer:    "https://idp.example.com/",
			Keys:      fetcher.Keys(),
			Refresher: fetcher, // an unknown kid triggers one bounded refresh
			Audiences: []string{"api://orders"},
		}},
		TokenCache: verify.TokenCacheOptions{MaxEntries: 10000},
	})
	if err != nil {
		panic(err)
	}
	// Optional: wait for the first key set (until then: keys_unavailable).
	if err := fetcher.Ready(ctx); err != nil {
		panic(err)
	}

	// One token by hand.
	token := "eyJhbGciOiJSUzI1NiIsImtpZCI6InJzYS1hIn0..." // a bearer token
	res, err := v.Verify(ctx, token)
	switch {
	case err == nil:
		fmt.Println("subject", res.Subject, "claims", string(res.Claims))
	case errors.Is(err, verify.ErrUnavailable):
		fmt.Println("could not decide (503):", err) // keys_unavailable
	default: // errors.Is(err, verify.ErrRejected)
		fmt.Println("rejected (401):", verify.Class(err)) // expired, bad_signature, ...
	}

	// Or in front of a handler: 401 and 503 are answered for you.
	protect, err := server.Middleware(v, server.MiddlewareOptions{})
	if err != nil {
		panic(err) // invalid options
	}
	mux := http.NewServeMux()
	mux.Handle("/orders", protect(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		res, _ := server.ResultFromContext(r.Context())
		fmt.Fprintln(w, "orders of", res.Subject)
	})))
}

// ExampleServer_SetDraining embeds the whole service and stops it the way
// cmd/jwksverify does: readiness off first, then the listeners.
func ExampleServer_SetDraining() {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	srv, err := server.New(server.Options{Verifier: exampleVerifier(now), Now: func() time.Time { return now }})
	if err != nil {
		panic(err)
	}
	httpSrv := &http.Server{Handler: srv.Handler()}
	// A request message bounded as an HTTP request body is (grpc-go: 4 MiB).
	grpcSrv := grpc.NewServer(grpc.MaxRecvMsgSize(int(srv.MaxBodyBytes())))
	extauthz.Register(grpcSrv, srv) // ext_authz and grpc.health.v1
	// ... httpSrv.Serve(ln) and grpcSrv.Serve(gln) until a signal, then:

	srv.SetDraining() // /readyz 503, gRPC health NOT_SERVING, Watch streams end
	w := httptest.NewRecorder()
	srv.Handler().ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	fmt.Print(w.Code, " ", w.Body)
	// ... wait for load balancers (shutdown_delay), then:
	_ = httpSrv.Shutdown(context.Background())
	grpcSrv.GracefulStop()
	// Output: 503 {"ready":false,"draining":true}
}
