package service

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/cache"
	"github.com/jwksverify/jwksverify/internal/testkeys"
)

// boundConfig binds tokens by DPoP and by certificate, optionally.
const boundConfig = `revocation: {retention: 2h}
issuers:
  - issuer: https://a.example/
    jwks_file: jwks.json
    audiences: [orders]
    leeway: 5s
    sender_constraint: {dpop: optional, mtls: optional}
mtls: {client_cert_header: X-Client-Cert}
policies:
  - {name: public, allow_anonymous: true}
  - {name: orders-read, scopes: {any: [orders:read]}}
  - {name: orders-write, scopes: {all: [orders:write]}}
routes:
  - {path: /public/**, policy: public}
  - {methods: [POST, PUT, PATCH, DELETE], path: /orders/**, policy: orders-write}
  - {path: /orders/**, policy: orders-read}
`

func newBoundFrontEnds(t *testing.T, proxy string) *frontEnds {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "jwks.json"), testJWKS(), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startPlan(t, "state_dir: "+dir+"\nforward_auth: {proxy: "+proxy+"}\n"+boundConfig, dir)
	return &frontEnds{proxy: proxy, svc: s, grpc: grpcClient(t, s)}
}

var proofSeq atomic.Int64

// proofFor returns a fresh DPoP proof (its own jti) of EC256A for tok.
func proofFor(tok, htm, htu string) string {
	sum := sha256.Sum256([]byte(tok))
	return testkeys.Mint("ES256", testkeys.Private(testkeys.EC256A),
		map[string]any{"typ": "dpop+jwt", "jwk": testkeys.JWKJSON(testkeys.JWK{Key: testkeys.Public(testkeys.EC256A)})},
		map[string]any{"jti": fmt.Sprint("p", proofSeq.Add(1)), "htm": htm, "htu": htu, "iat": time.Now().Unix(),
			"ath": base64.RawURLEncoding.EncodeToString(sum[:])})
}

// TestFrontEndsAgreeOnBoundTokens sends DPoP-bound requests, each with a
// fresh proof, through forward-auth (nginx, traefik), gRPC Check and
// Service.Middleware over TLS: the same verdict and class everywhere.
func TestFrontEndsAgreeOnBoundTokens(t *testing.T) {
	k, err := cache.NewKey(testkeys.Public(testkeys.EC256A), cache.KeyMeta{})
	if err != nil {
		t.Fatal(err)
	}
	dtok := mintRS256(frontEndClaims(map[string]any{"cnf": map[string]any{"jkt": k.Thumbprint}}))
	type row struct {
		method, host, target string
		htm, htu             string
		scheme               string // Authorization scheme
		extra                [][2]string
	}
	var rows []row
	for _, m := range []string{"GET", "HEAD", "POST", "get"} {
		for _, h := range []string{"api.example", "api.example:443", "api.example:8443", "API.example"} {
			for _, tg := range []string{"/orders/1", "/orders/1?x=1", "/orders/%31", "/public/x", "/orders/1?_method=DELETE", "/orders/1/"} {
				for _, htm := range []string{"GET", "HEAD", "POST", "get"} {
					for _, htu := range []string{"https://api.example/orders/1", "https://api.example:443/orders/1", "https://api.example:8443/orders/1",
						"https://API.example/orders/1", "https://api.example/orders/%31", "https://api.example/public/x", "https://api.example/orders/1?x=1", "http://api.example/orders/1"} {
						rows = append(rows, row{m, h, tg, htm, htu, "DPoP", nil})
					}
				}
			}
		}
	}
	rows = append(rows,
		row{"GET", "api.example", "/orders/1", "GET", "https://api.example/orders/1", "Bearer", nil},
		row{"GET", "api.example", "/public/x", "GET", "https://api.example/public/x", "Bearer", nil},
		row{"GET", "api.example", "/orders/1", "GET", "https://api.example/orders/1", "DPoP", [][2]string{{"X-HTTP-Method-Override", "DELETE"}}},
		row{"GET", "api.example", "/orders/1", "GET", "https://api.example/orders/1", "dpop", nil},
	)
	svcs := map[string]*frontEnds{}
	for _, p := range []string{"nginx", "traefik"} {
		svcs[p] = newBoundFrontEnds(t, p)
	}
	bad := 0
	classes := map[string]int{}
	defer func() { t.Logf("grpc verdicts: %v", classes) }()
	for _, r := range rows {
		got := map[string]feVerdict{}
		mk := func() feRequest {
			hs := [][2]string{{"Authorization", r.scheme + " " + dtok}}
			if r.scheme != "Bearer" {
				hs = append(hs, [2]string{"DPoP", proofFor(dtok, r.htm, r.htu)})
			}
			return feRequest{r.method, r.host, r.target, append(hs, r.extra...)}
		}
		for _, p := range []string{"nginx", "traefik"} {
			if v, ok := svcs[p].authz(mk()); ok {
				got["authz/"+p] = v
			}
		}
		got["grpc"] = svcs["nginx"].check(t, mk())
		if v, ok := svcs["nginx"].middleware(t, mk()); ok {
			got["service-middleware"] = v
		}
		ref := got["grpc"]
		classes[ref.class]++
		for ep, v := range got {
			if v != ref && bad < 40 {
				bad++
				t.Errorf("%+v: %s = %+v, grpc = %+v", r, ep, v, ref)
			}
		}
	}
}
