package extauthz_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"fmt"
	"net"
	"time"

	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	"github.com/golang-jwt/jwt/v5"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/jwksverify/jwksverify/cache"
	"github.com/jwksverify/jwksverify/server"
	"github.com/jwksverify/jwksverify/server/extauthz"
	"github.com/jwksverify/jwksverify/verify"
)

// Register serves Envoy's ext_authz gRPC API (and gRPC health) over a
// server.Server: Envoy's filter calls Check for each request, and the
// answer allows it, with the claim headers, or denies it with the same
// status and body the HTTP forward-auth endpoint gives.
func ExampleRegister() {
	signing, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	key, _ := cache.NewKey(&signing.PublicKey, cache.KeyMeta{Kid: "k1"})
	var keys cache.Keys // a jwks.Fetcher's in a service
	keys.Store(cache.NewSet([]*cache.Key{key}, nil, time.Now(), time.Time{}))
	v, err := verify.New(verify.Options{Issuers: []verify.Issuer{{Issuer: "https://idp.example.com/", Keys: &keys}}})
	if err != nil {
		panic(err)
	}
	srv, err := server.New(server.Options{Verifier: v})
	if err != nil {
		panic(err)
	}

	g := grpc.NewServer()
	extauthz.Register(g, srv)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	go g.Serve(ln)
	defer g.Stop()

	// What Envoy sends (trimmed to what is read here).
	conn, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		panic(err)
	}
	defer conn.Close()
	t := jwt.NewWithClaims(jwt.SigningMethodES256, jwt.MapClaims{
		"iss": "https://idp.example.com/", "sub": "alice", "exp": time.Now().Add(time.Hour).Unix()})
	t.Header["kid"] = "k1"
	token, _ := t.SignedString(signing)
	for _, authorization := range []string{"Bearer " + token, ""} {
		req := &authv3.CheckRequest{Attributes: &authv3.AttributeContext{Request: &authv3.AttributeContext_Request{
			Http: &authv3.AttributeContext_HttpRequest{
				Method: "GET", Host: "app.example.com", Path: "/orders/42", Scheme: "https",
				Headers: map[string]string{"authorization": authorization},
			},
		}}}
		resp, err := authv3.NewAuthorizationClient(conn).Check(context.Background(), req)
		if err != nil {
			panic(err)
		}
		if denied := resp.GetDeniedResponse(); denied != nil {
			fmt.Println("denied", denied.GetStatus().GetCode())
			continue
		}
		fmt.Println("allowed")
	}
	// Output:
	// allowed
	// denied Unauthorized
}
