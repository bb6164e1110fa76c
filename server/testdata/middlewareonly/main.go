// Command middlewareonly is the smallest Go service that embeds jwksverify:
// a fetcher, a verifier and server.Middleware in front of a handler. The
// server package's TestMiddlewareLinksNoGRPCOrPrometheus lists what it
// links; docs/DECISIONS.md gives its binary size.
package main

import (
	"fmt"
	"log"
	"net/http"

	"github.com/jwksverify/jwksverify/jwks"
	"github.com/jwksverify/jwksverify/server"
	"github.com/jwksverify/jwksverify/verify"
)

func main() {
	f, err := jwks.New(jwks.Options{Issuer: "https://idp.example.com/", Discovery: true})
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	v, err := verify.New(verify.Options{Issuers: []verify.Issuer{{Issuer: "https://idp.example.com/", Keys: f.Keys(), Refresher: f}}})
	if err != nil {
		log.Fatal(err)
	}
	protect, err := server.Middleware(v, server.MiddlewareOptions{})
	if err != nil {
		log.Fatal(err)
	}
	log.Fatal(http.ListenAndServe("127.0.0.1:8080", protect(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		res, _ := server.ResultFromContext(r.Context())
		fmt.Fprintln(w, "hello", res.Subject)
	}))))
}
