package introspect_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"

	"github.com/jwksverify/jwksverify/cache"
	"github.com/jwksverify/jwksverify/introspect"
	"github.com/jwksverify/jwksverify/verify"
)

// An issuer of opaque tokens is asked about each one at its RFC 7662
// introspection endpoint; the client caches the answers (never beyond the
// token's exp) and the verifier applies the same checks as to a JWT.
func ExampleClient() {
	// The authorization server (a test server here): one active token.
	as := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, pass, ok := r.BasicAuth()
		if !ok || user != "jwksverify" || pass != "a-long-client-secret" {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if r.PostFormValue("token") == "opaque-token-of-alice" {
			fmt.Fprint(w, `{"active":true,"iss":"https://as.example.com/","sub":"alice","aud":"api://orders","exp":4102444800}`)
			return
		}
		fmt.Fprint(w, `{"active":false}`)
	}))
	defer as.Close()

	// The client secret is read from a file, as in the configuration.
	dir, _ := os.MkdirTemp("", "introspect-example")
	defer os.RemoveAll(dir)
	secret := filepath.Join(dir, "client-secret")
	if err := os.WriteFile(secret, []byte("a-long-client-secret"), 0o600); err != nil {
		panic(err)
	}

	client, err := introspect.New(introspect.Options{
		Issuer:   "https://as.example.com/",
		URL:      as.URL + "/introspect", // https outside loopback
		ClientID: "jwksverify", ClientSecretFile: secret,
	})
	if err != nil {
		panic(err)
	}
	defer client.Close()
	v, err := verify.New(verify.Options{Issuers: []verify.Issuer{{
		Issuer:       "https://as.example.com/",
		Keys:         &cache.Keys{}, // its JWTs' keys (a jwks.Fetcher's); none here
		Introspector: client,        // tokens that are not JWTs are asked about
		Audiences:    []string{"api://orders"},
	}}})
	if err != nil {
		panic(err)
	}

	for _, token := range []string{"opaque-token-of-alice", "revoked-token"} {
		res, err := v.Verify(context.Background(), token)
		if err != nil {
			fmt.Println(verify.Class(err))
			continue
		}
		fmt.Println(res.Subject, res.Issuer)
	}
	// Output:
	// alice https://as.example.com/
	// inactive
}
