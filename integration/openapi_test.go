package integration

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"

	"github.com/jwksverify/jwksverify/internal/testkeys"
	"github.com/jwksverify/jwksverify/verify"
)

// The tests of this file hold api/openapi.yaml to the real binary: the
// document loads and validates as OpenAPI 3.1, its error classes are the
// code's, and every answer of every route and status that docs/API.md lists
// is validated against it (status, headers, body), with the requests that
// should conform validated too. server/openapi_test.go holds the document's
// paths to the server's route table.

const openAPIFile = "../api/openapi.yaml"

// loadOpenAPI loads and validates the document.
func loadOpenAPI(t *testing.T) *openapi3.T {
	t.Helper()
	doc, err := openapi3.NewLoader().LoadFromFile(openAPIFile)
	if err != nil {
		t.Fatalf("load %s: %v", openAPIFile, err)
	}
	if !doc.IsOpenAPI31OrLater() {
		t.Fatalf("%s is OpenAPI %s, want 3.1", openAPIFile, doc.OpenAPI)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("%s does not validate: %v", openAPIFile, err)
	}
	return doc
}

// pendingClasses are classes SPEC.md announces that the document lists
// before the code exports them (verify.Classes). A class leaves this list in
// the change that adds it to the code: TestOpenAPIErrorClasses fails until
// it does.
var pendingClasses = []string{}

// TestOpenAPIErrorClasses checks that the ErrorClass enum is every class
// the code exports, plus the pending ones and nothing else.
func TestOpenAPIErrorClasses(t *testing.T) {
	doc := loadOpenAPI(t)
	ref := doc.Components.Schemas["ErrorClass"]
	if ref == nil || ref.Value == nil {
		t.Fatal("api/openapi.yaml has no components.schemas.ErrorClass")
	}
	var enum []string
	for _, v := range ref.Value.Enum {
		s, ok := v.(string)
		if !ok {
			t.Fatalf("ErrorClass enum holds %v (%T), want strings", v, v)
		}
		enum = append(enum, s)
	}
	code := verify.Classes()
	for _, c := range code {
		if !slices.Contains(enum, c) {
			t.Errorf("verify.Classes() has %q; the ErrorClass enum of api/openapi.yaml lacks it", c)
		}
	}
	for _, c := range pendingClasses {
		if slices.Contains(code, c) {
			t.Errorf("verify.Classes() now has %q: remove it from pendingClasses (integration/openapi_test.go)", c)
		}
	}
	for _, c := range enum {
		if !slices.Contains(code, c) && !slices.Contains(pendingClasses, c) {
			t.Errorf("the ErrorClass enum of api/openapi.yaml has %q, which verify.Classes() does not (nor pendingClasses)", c)
		}
	}
}

// apiCase is one request to the binary and the status it must answer.
type apiCase struct {
	name  string
	admin bool // to the admin listener
	// elsewhere: the path is served on the other listener only, so this
	// one answers the document's NotFound.
	elsewhere bool
	method    string
	target    string // path and query
	header    http.Header
	body      string
	status    int
	// conforming: the request is one the document describes as valid (it
	// is validated too); false for requests meant to be refused.
	conforming bool
}

// TestOpenAPIAnswers runs the binary and validates its answers for every
// route and every status that docs/API.md's endpoint table lists.
func TestOpenAPIAnswers(t *testing.T) {
	doc := loadOpenAPI(t)
	is := newTestIssuer(t)
	const down = "https://down.e2e.example/"
	const secret = "an-openapi-test-client-secret"
	t.Setenv("JV_OPENAPI_SECRET", secret)
	clients := "introspection: {clients: [{id: gateway, secret_env: JV_OPENAPI_SECRET}]}\n"
	// A: a ready issuer and one whose keys never load (a closed port), with
	// policies, routes (nginx preset), resource metadata and small bounds.
	a := startJWKSVerifyWith(t, "listen: 127.0.0.1:0\nissuers:\n"+is.IssuerConfig()+
		"  - issuer: "+down+"\n    jwks_url: http://127.0.0.1:1/jwks.json\n    audiences: [api://orders]\n"+
		clients+`forward_auth: {proxy: nginx, strip_authorization: true}
policies:
  - {name: orders-write, scopes: {all: [orders:write]}}
  - {name: public, allow_anonymous: true}
routes:
  - {methods: [POST, PUT, PATCH, DELETE], path: /orders/**, policy: orders-write}
resource_metadata: {resource: "https://api.example.com/", authorization_servers: ["`+is.Issuer+`"]}
limits: {max_token_bytes: 4096, max_body_bytes: 16384}
batch: {max_tokens: 3}
`, jwksverifyOptions{Unready: true})
	// B: api_auth on, the admin endpoints on their own listener, and a
	// drain long enough to ask /readyz while it lasts.
	b := startJWKSVerifyWith(t, "listen: 127.0.0.1:0\nadmin_listen: 127.0.0.1:0\nissuers:\n"+is.IssuerConfig()+
		clients+"api_auth: {required: true}\nshutdown_delay: 3s\n", jwksverifyOptions{})

	good, write := is.Token(nil), is.Token(map[string]any{"scope": "orders:read orders:write"})
	expired := is.Token(map[string]any{"exp": time.Now().Add(-time.Hour).Unix()})
	unavailable := is.Token(map[string]any{"iss": down})
	tooLarge := is.Token(map[string]any{"pad": strings.Repeat("x", 5000)})
	waitValid(t, a.HTTP, good)

	jsonBody := func(v any) string {
		js, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return string(js)
	}
	hdr := func(kv ...string) http.Header {
		h := http.Header{}
		for i := 0; i+1 < len(kv); i += 2 {
			h.Add(kv[i], kv[i+1])
		}
		return h
	}
	jsonCT := hdr("Content-Type", "application/json")
	basic := "Basic " + b64(url.QueryEscape("gateway")+":"+url.QueryEscape(secret))
	form := func(auth string) http.Header {
		return hdr("Content-Type", "application/x-www-form-urlencoded", "Authorization", auth)
	}
	// fwd is a forward-auth request from nginx for method and uri.
	fwd := func(method, uri, token string) http.Header {
		h := hdr("X-Original-Method", method, "X-Original-Uri", uri, "X-Original-Host", "api.example.com")
		if token != "" {
			h.Set("Authorization", "Bearer "+token)
		}
		return h
	}

	cases := []apiCase{
		{name: "verify-valid", method: "POST", target: "/v1/verify", header: jsonCT, body: jsonBody(map[string]string{"token": good}), status: 200, conforming: true},
		{name: "verify-expired", method: "POST", target: "/v1/verify", header: jsonCT, body: jsonBody(map[string]string{"token": expired}), status: 200, conforming: true},
		{name: "verify-empty-token", method: "POST", target: "/v1/verify", header: jsonCT, body: `{"token":""}`, status: 200, conforming: true},
		{name: "verify-policy-forbidden", method: "POST", target: "/v1/verify", header: jsonCT, body: jsonBody(map[string]any{"token": good, "policy": "orders-write", "request": map[string]string{"method": "POST", "host": "api.example.com", "path": "/orders/1"}}), status: 200, conforming: true},
		{name: "verify-policy-allowed", method: "POST", target: "/v1/verify", header: jsonCT, body: jsonBody(map[string]any{"token": write, "policy": "orders-write", "request": map[string]string{"method": "POST", "path": "/orders/1"}}), status: 200, conforming: true},
		{name: "verify-policy-rejected", method: "POST", target: "/v1/verify", header: jsonCT, body: jsonBody(map[string]any{"token": expired, "policy": "orders-write"}), status: 200, conforming: true},
		{name: "verify-policy-anonymous", method: "POST", target: "/v1/verify", header: jsonCT, body: `{"token":"","policy":"public"}`, status: 200, conforming: true},
		{name: "verify-no-token-member", method: "POST", target: "/v1/verify", header: jsonCT, body: `{"jwt":"abc"}`, status: 400},
		{name: "verify-not-json", method: "POST", target: "/v1/verify", header: jsonCT, body: `token=abc`, status: 400},
		{name: "verify-unknown-policy", method: "POST", target: "/v1/verify", header: jsonCT, body: jsonBody(map[string]string{"token": good, "policy": "nope"}), status: 400, conforming: true},
		{name: "verify-get", method: "GET", target: "/v1/verify", status: 405},
		{name: "verify-token-too-large", method: "POST", target: "/v1/verify", header: jsonCT, body: jsonBody(map[string]string{"token": tooLarge}), status: 413, conforming: true},
		{name: "verify-body-too-large", method: "POST", target: "/v1/verify", header: jsonCT, body: jsonBody(map[string]string{"token": good, "pad": strings.Repeat("x", 20000)}), status: 413, conforming: true},
		{name: "verify-keys-unavailable", method: "POST", target: "/v1/verify", header: jsonCT, body: jsonBody(map[string]string{"token": unavailable}), status: 503, conforming: true},

		{name: "batch-mixed", method: "POST", target: "/v1/verify/batch", header: jsonCT, body: jsonBody(map[string]any{"tokens": []string{good, expired, unavailable}}), status: 200, conforming: true},
		{name: "batch-empty", method: "POST", target: "/v1/verify/batch", header: jsonCT, body: `{"tokens":[]}`, status: 200, conforming: true},
		{name: "batch-too-many", method: "POST", target: "/v1/verify/batch", header: jsonCT, body: jsonBody(map[string]any{"tokens": []string{good, good, good, good}}), status: 400, conforming: true},
		{name: "batch-not-strings", method: "POST", target: "/v1/verify/batch", header: jsonCT, body: `{"tokens":[1]}`, status: 400},
		{name: "batch-get", method: "GET", target: "/v1/verify/batch", status: 405},
		{name: "batch-body-too-large", method: "POST", target: "/v1/verify/batch", header: jsonCT, body: jsonBody(map[string]any{"tokens": []string{strings.Repeat("x", 20000)}}), status: 413, conforming: true},

		{name: "introspect-active", method: "POST", target: "/introspect", header: form(basic), body: "token=" + good, status: 200, conforming: true},
		{name: "introspect-bearer-client", method: "POST", target: "/introspect", header: form("Bearer " + secret), body: "token=" + good + "&token_type_hint=access_token", status: 200, conforming: true},
		// Claims are passed through as the token has them: a scope array
		// (the policies read one as a list) and a token_type of the token's.
		{name: "introspect-active-scope-array", method: "POST", target: "/introspect", header: form(basic), body: "token=" + is.Token(map[string]any{"scope": []string{"orders:read", "orders:write"}}), status: 200, conforming: true},
		{name: "introspect-active-token-type-number", method: "POST", target: "/introspect", header: form(basic), body: "token=" + is.Token(map[string]any{"token_type": 1}), status: 200, conforming: true},
		{name: "introspect-inactive", method: "POST", target: "/introspect", header: form(basic), body: "token=" + expired, status: 200, conforming: true},
		{name: "introspect-no-token", method: "POST", target: "/introspect", header: form(basic), body: "token_type_hint=access_token", status: 400},
		{name: "introspect-token-twice", method: "POST", target: "/introspect", header: form(basic), body: "token=a&token=b", status: 400},
		{name: "introspect-json", method: "POST", target: "/introspect", header: hdr("Content-Type", "application/json", "Authorization", basic), body: `{"token":"a"}`, status: 400},
		{name: "introspect-no-credentials", method: "POST", target: "/introspect", header: hdr("Content-Type", "application/x-www-form-urlencoded"), body: "token=" + good, status: 401},
		{name: "introspect-wrong-secret", method: "POST", target: "/introspect", header: form("Basic " + b64("gateway:nope")), body: "token=" + good, status: 401},
		{name: "introspect-get", method: "GET", target: "/introspect", status: 405},
		{name: "introspect-body-too-large", method: "POST", target: "/introspect", header: form(basic), body: "token=" + good + "&pad=" + strings.Repeat("x", 20000), status: 413, conforming: true},
		{name: "introspect-keys-unavailable", method: "POST", target: "/introspect", header: form(basic), body: "token=" + unavailable, status: 503, conforming: true},

		{name: "authz-valid", method: "GET", target: "/v1/authz", header: fwd("GET", "/orders/1", good), status: 200, conforming: true},
		{name: "authz-valid-head", method: "HEAD", target: "/v1/authz", header: fwd("GET", "/orders/1", good), status: 200, conforming: true},
		{name: "authz-envoy-path", method: "POST", target: "/v1/authz/orders/42?x=1", header: fwd("GET", "/orders/42", good), status: 200, conforming: true},
		{name: "authz-no-token", method: "GET", target: "/v1/authz", header: fwd("GET", "/orders/1", ""), status: 401, conforming: true},
		{name: "authz-expired", method: "DELETE", target: "/v1/authz/x", header: fwd("GET", "/orders/1", expired), status: 401, conforming: true},
		{name: "authz-two-authorization", method: "GET", target: "/v1/authz", header: func() http.Header {
			h := fwd("GET", "/orders/1", good)
			h.Add("Authorization", "Bearer "+good)
			return h
		}(), status: 401},
		{name: "authz-forbidden", method: "GET", target: "/v1/authz", header: fwd("POST", "/orders/1", good), status: 403, conforming: true},
		{name: "authz-no-original-request", method: "GET", target: "/v1/authz", header: hdr("Authorization", "Bearer "+good), status: 403, conforming: true},
		{name: "authz-keys-unavailable", method: "GET", target: "/v1/authz", header: fwd("GET", "/orders/1", unavailable), status: 503, conforming: true},

		{name: "policy-allowed", method: "GET", target: "/v1/policy/orders-write", header: fwd("GET", "/anything", write), status: 200, conforming: true},
		{name: "policy-path-allowed", method: "PUT", target: "/v1/policy/orders-write/orders/7", header: fwd("PUT", "/orders/7", write), status: 200, conforming: true},
		{name: "policy-no-token", method: "GET", target: "/v1/policy/orders-write", header: fwd("GET", "/anything", ""), status: 401, conforming: true},
		{name: "policy-forbidden", method: "PATCH", target: "/v1/policy/orders-write/a/b", header: fwd("PATCH", "/a/b", good), status: 403, conforming: true},
		{name: "policy-unknown", method: "GET", target: "/v1/policy/nope", header: fwd("GET", "/anything", good), status: 404, conforming: true},
		{name: "policy-keys-unavailable", method: "OPTIONS", target: "/v1/policy/orders-write", header: fwd("GET", "/anything", unavailable), status: 503, conforming: true},

		{name: "resource-metadata", method: "GET", target: "/.well-known/oauth-protected-resource", status: 200, conforming: true},
		{name: "resource-metadata-post", method: "POST", target: "/.well-known/oauth-protected-resource", status: 405},
		{name: "openapi", method: "GET", target: "/openapi.yaml", status: 200, conforming: true},
		{name: "openapi-head", method: "HEAD", target: "/openapi.yaml", status: 200, conforming: true},
		{name: "openapi-post", method: "POST", target: "/openapi.yaml", status: 405},
		{name: "healthz", method: "GET", target: "/healthz", status: 200, conforming: true},
		{name: "healthz-put", method: "PUT", target: "/healthz", status: 405},
		{name: "readyz-not-ready", method: "GET", target: "/readyz", status: 503, conforming: true},
		{name: "readyz-delete", method: "DELETE", target: "/readyz", status: 405},
		{name: "issuers", method: "GET", target: "/v1/issuers", status: 200, conforming: true},
		{name: "issuers-post", method: "POST", target: "/v1/issuers", status: 405},
		{name: "metrics", method: "GET", target: "/metrics", status: 200, conforming: true},
		{name: "metrics-post", method: "POST", target: "/metrics", status: 405},
		{name: "not-found", method: "GET", target: "/v1/nope", status: 404},
	}
	// B: api_auth and the admin listener.
	casesB := []apiCase{
		{name: "api-auth-verify", method: "POST", target: "/v1/verify", header: jsonCT, body: jsonBody(map[string]string{"token": good}), status: 401},
		{name: "api-auth-batch", method: "POST", target: "/v1/verify/batch", header: jsonCT, body: `{"tokens":[]}`, status: 401},
		{name: "api-auth-verify-basic", method: "POST", target: "/v1/verify", header: hdr("Content-Type", "application/json", "Authorization", basic), body: jsonBody(map[string]string{"token": good}), status: 200, conforming: true},
		{name: "api-auth-batch-bearer", method: "POST", target: "/v1/verify/batch", header: hdr("Content-Type", "application/json", "Authorization", "Bearer "+secret), body: jsonBody(map[string]any{"tokens": []string{good}}), status: 200, conforming: true},
		{name: "admin-healthz-on-listen", method: "GET", target: "/healthz", status: 404, elsewhere: true},
		{name: "admin-healthz", admin: true, method: "GET", target: "/healthz", status: 200, conforming: true},
		{name: "admin-readyz", admin: true, method: "GET", target: "/readyz", status: 200, conforming: true},
		{name: "admin-issuers", admin: true, method: "GET", target: "/v1/issuers", status: 200, conforming: true},
		{name: "admin-metrics", admin: true, method: "GET", target: "/metrics", status: 200, conforming: true},
		{name: "admin-openapi", admin: true, method: "GET", target: "/openapi.yaml", status: 404, elsewhere: true},
	}

	// C: DPoP-bound tokens (sender_constraint: dpop required).
	c := startJWKSVerify(t, "listen: 127.0.0.1:0\nforward_auth: {proxy: nginx}\nissuers:\n"+is.IssuerConfig()+"    sender_constraint: {dpop: required}\n")
	dc := newDPoPClient(t, testkeys.EC256B)
	bound := is.Token(map[string]any{"cnf": map[string]string{"jkt": dc.jkt}})
	dpopFwd := func(scheme, proof string) http.Header {
		h := fwd("POST", "/orders/1", "")
		h.Set("X-Original-Proto", "https")
		h.Set("Authorization", scheme+" "+bound)
		if proof != "" {
			h.Set("DPoP", proof)
		}
		return h
	}
	casesC := []apiCase{
		{name: "dpop-valid", method: "GET", target: "/v1/authz", header: dpopFwd("DPoP", dc.proof("openapi-1", bound)), status: 200, conforming: true},
		{name: "dpop-invalid-proof", method: "GET", target: "/v1/authz", header: dpopFwd("DPoP", "not-a-proof"), status: 401, conforming: true},
		{name: "dpop-bound-as-bearer", method: "GET", target: "/v1/authz", header: dpopFwd("Bearer", ""), status: 401, conforming: true},
		{name: "verify-dpop-binding-checks", method: "POST", target: "/v1/verify", header: jsonCT, body: jsonBody(map[string]any{
			"token": bound, "dpop": dc.proof("openapi-2", bound),
			"request": map[string]string{"method": "POST", "scheme": "https", "host": "api.example.com", "path": "/orders/1"},
		}), status: 200, conforming: true},
	}

	// D: minting (a policy that mints, RFC 9701 introspection, the JWKS
	// on both listeners).
	mintKeys := filepath.Join(t.TempDir(), "mint.jwks")
	writeMintKeys(t, mintKeys, testkeys.PrivateJWKS(mintK1))
	d := startJWKSVerify(t, "listen: 127.0.0.1:0\nadmin_listen: 127.0.0.1:0\nissuers:\n"+is.IssuerConfig()+clients+
		"mint: {issuer: "+mintIssuer+", keys_file: "+mintKeys+", signing_kid: k1}\npolicies:\n  - {name: minting, mint: {audience: orders-service}}\n")
	// An RFC 9701 answer is a compact JWS: validated as the string it is.
	openapi3filter.RegisterBodyDecoder("application/token-introspection+jwt", openapi3filter.FileBodyDecoder)
	t.Cleanup(func() { openapi3filter.UnregisterBodyDecoder("application/token-introspection+jwt") })
	jwtAccept := form(basic)
	jwtAccept.Set("Accept", "application/token-introspection+jwt")
	casesD := []apiCase{
		{name: "mint-jwks", method: "GET", target: "/.well-known/jwks.json", status: 200, conforming: true},
		{name: "mint-jwks-head", method: "HEAD", target: "/.well-known/jwks.json", status: 200, conforming: true},
		{name: "mint-jwks-post", method: "POST", target: "/.well-known/jwks.json", status: 405},
		{name: "mint-jwks-admin", admin: true, method: "GET", target: "/.well-known/jwks.json", status: 200, conforming: true},
		{name: "mint-verify-minted", method: "POST", target: "/v1/verify", header: jsonCT, body: jsonBody(map[string]any{"token": good, "policy": "minting", "mint": true}), status: 200, conforming: true},
		{name: "mint-introspect-jwt", method: "POST", target: "/introspect", header: jwtAccept, body: "token=" + good, status: 200, conforming: true},
	}

	// E: revocation signals (back-channel logout, SET push), with an
	// issuer whose keys never load for the 503s. A SET body is text (a
	// compact JWS), which the validator must be told.
	openapi3filter.RegisterBodyDecoder("application/secevent+jwt", openapi3filter.PlainBodyDecoder)
	t.Cleanup(func() { openapi3filter.UnregisterBodyDecoder("application/secevent+jwt") })
	dir := t.TempDir()
	pushA, pushDown := filepath.Join(dir, "push-a"), filepath.Join(dir, "push-down")
	for f, v := range map[string]string{pushA: "openapi-push-bearer-a-0123456789", pushDown: "openapi-push-bearer-down-0123456789"} {
		if err := os.WriteFile(f, []byte(v), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	signalKeys := fmt.Sprintf("    backchannel_logout: {audiences: [web-app]}\n    ssf: {audiences: [%s], push: {bearer_token_file: %%s}}\n", setAudience)
	sg := startJWKSVerifyWith(t, "listen: 127.0.0.1:0\nstate_dir: "+filepath.Join(dir, "state")+"\nrevocation: {store: memory}\nissuers:\n"+
		is.IssuerConfig()+fmt.Sprintf(signalKeys, pushA)+
		"  - issuer: "+down+"\n    jwks_url: http://127.0.0.1:1/jwks.json\n"+fmt.Sprintf(signalKeys, pushDown), jwksverifyOptions{Unready: true})
	waitValid(t, sg.HTTP, good)
	signed := func(typ string, c map[string]any) string {
		return testkeys.Mint("RS256", testkeys.Private(testkeys.RSA2048A), map[string]any{"kid": "rsa-a", "typ": typ}, c)
	}
	logoutToken := func(iss, jti string) string {
		return url.Values{"logout_token": {signed("logout+jwt", map[string]any{"iss": iss, "aud": "web-app", "iat": time.Now().Unix(),
			"jti": jti, "sid": "s-1", "events": map[string]any{bclEvent: map[string]any{}}})}}.Encode()
	}
	set := func(iss, aud, jti string) string {
		return signed("secevent+jwt", map[string]any{"iss": iss, "aud": aud, "iat": time.Now().Unix(), "jti": jti,
			"sub_id": map[string]any{"format": "opaque", "id": "alice"}, "events": map[string]any{credChange: map[string]any{}}})
	}
	formCT := hdr("Content-Type", "application/x-www-form-urlencoded")
	push := func(bearer string) http.Header {
		return hdr("Content-Type", "application/secevent+jwt", "Authorization", "Bearer "+bearer)
	}
	casesSignals := []apiCase{
		{name: "logout", method: "POST", target: "/v1/logout/backchannel", header: formCT, body: logoutToken(is.Issuer, "openapi-lt-1"), status: 200, conforming: true},
		{name: "logout-replayed", method: "POST", target: "/v1/logout/backchannel", header: formCT, body: logoutToken(is.Issuer, "openapi-lt-1"), status: 400},
		{name: "logout-access-token", method: "POST", target: "/v1/logout/backchannel", header: formCT, body: "logout_token=" + good, status: 400},
		{name: "logout-get", method: "GET", target: "/v1/logout/backchannel", status: 405},
		{name: "logout-keys-unavailable", method: "POST", target: "/v1/logout/backchannel", header: formCT, body: logoutToken(down, "openapi-lt-2"), status: 503, conforming: true},
		{name: "ssf-push", method: "POST", target: "/v1/ssf/events", header: push("openapi-push-bearer-a-0123456789"), body: set(is.Issuer, setAudience, "openapi-set-1"), status: 202, conforming: true},
		{name: "ssf-wrong-audience", method: "POST", target: "/v1/ssf/events", header: push("openapi-push-bearer-a-0123456789"), body: set(is.Issuer, "elsewhere", "openapi-set-2"), status: 400},
		{name: "ssf-no-bearer", method: "POST", target: "/v1/ssf/events", header: hdr("Content-Type", "application/secevent+jwt"), body: set(is.Issuer, setAudience, "openapi-set-3"), status: 401},
		{name: "ssf-get", method: "GET", target: "/v1/ssf/events", status: 405},
		{name: "ssf-keys-unavailable", method: "POST", target: "/v1/ssf/events", header: push("openapi-push-bearer-down-0123456789"), body: set(down, setAudience, "openapi-set-4"), status: 503, conforming: true},
	}

	v := &openAPIValidator{doc: doc, seen: map[string][]int{}}
	for _, cd := range casesD {
		addr := d.HTTP
		if cd.admin {
			addr = d.Admin
		}
		t.Run(cd.name, func(t *testing.T) { v.check(t, addr, cd) })
	}
	for _, cs := range casesSignals {
		t.Run(cs.name, func(t *testing.T) { v.check(t, sg.HTTP, cs) })
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { v.check(t, a.HTTP, c) })
	}
	for _, c := range casesB {
		addr := b.HTTP
		if c.admin {
			addr = b.Admin
		}
		t.Run(c.name, func(t *testing.T) { v.check(t, addr, c) })
	}
	for _, cc := range casesC {
		t.Run(cc.name, func(t *testing.T) { v.check(t, c.HTTP, cc) })
	}
	// Draining: /readyz 503 {"draining":true} during shutdown_delay.
	t.Run("readyz-draining", func(t *testing.T) {
		if err := b.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(startTimeout)
		for {
			resp, err := httpClient().Get("http://" + b.Admin + "/readyz")
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusServiceUnavailable {
					break
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("/readyz after SIGTERM: %v %v, want 503 while draining", resp, err)
			}
			time.Sleep(pollEvery)
		}
		v.check(t, b.Admin, apiCase{method: "GET", target: "/readyz", status: 503, conforming: true})
	})

	t.Run("docs-statuses", func(t *testing.T) { v.coversAPIDoc(t) })
}

// waitValid polls /v1/verify until token is valid (the issuer's keys are
// loaded), or fails after startTimeout.
func waitValid(t *testing.T, addr, token string) {
	t.Helper()
	deadline := time.Now().Add(startTimeout)
	for {
		resp, err := httpClient().Post("http://"+addr+"/v1/verify", "application/json", strings.NewReader(`{"token":"`+token+`"}`))
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if bytes.HasPrefix(body, []byte(`{"valid":true`)) {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the token is not valid after %v: %v", startTimeout, err)
		}
		time.Sleep(pollEvery)
	}
}

// openAPIValidator validates answers against the document and records the
// statuses seen per path template ("" for paths the document lacks).
type openAPIValidator struct {
	doc  *openapi3.T
	seen map[string][]int
}

// check sends c to addr and validates the answer: the status c wants, then
// the document's response for it (headers and body), and the request
// itself when c is conforming.
func (v *openAPIValidator) check(t *testing.T, addr string, c apiCase) {
	t.Helper()
	req, err := http.NewRequest(c.method, "http://"+addr+c.target, strings.NewReader(c.body))
	if err != nil {
		t.Fatal(err)
	}
	if c.header != nil {
		req.Header = c.header.Clone()
	}
	resp, err := httpClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != c.status {
		t.Fatalf("%s %s = %d %s, want %d", c.method, c.target, resp.StatusCode, body, c.status)
	}
	tmpl, params := v.match(req.URL.Path)
	if c.elsewhere {
		tmpl, params = "", nil
	}
	v.seen[tmpl] = append(v.seen[tmpl], resp.StatusCode)
	route := v.route(t, tmpl, c.method)
	// The request, as the server got it, for the validators.
	vreq, _ := http.NewRequest(c.method, req.URL.String(), strings.NewReader(c.body))
	vreq.Header = c.header.Clone()
	if vreq.Header == nil {
		vreq.Header = http.Header{}
	}
	opts := &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true, AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}
	in := &openapi3filter.RequestValidationInput{Request: vreq, PathParams: params, Route: route, Options: opts}
	if c.conforming && tmpl != "" {
		if err := openapi3filter.ValidateRequest(context.Background(), in); err != nil {
			t.Errorf("%s %s: the request does not conform to api/openapi.yaml: %v", c.method, c.target, err)
		}
	}
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: resp.StatusCode, Header: resp.Header, Options: opts}
	out.SetBodyBytes(body)
	if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
		t.Errorf("%s %s = %d: the answer does not conform to api/openapi.yaml: %v\nheaders %v\nbody %s", c.method, c.target, resp.StatusCode, err, resp.Header, body)
	}
	// ValidateResponse passes a body the document does not describe, and
	// skips HEAD: hold both here.
	r := route.Operation.Responses.Status(resp.StatusCode)
	switch {
	case c.method == http.MethodHead && len(body) > 0:
		t.Errorf("HEAD %s answered a body of %d bytes", c.target, len(body))
	case c.method != http.MethodHead && len(body) > 0 && (r == nil || len(r.Value.Content) == 0):
		t.Errorf("%s %s = %d with a body (%s); api/openapi.yaml describes none", c.method, c.target, resp.StatusCode, resp.Header.Get("Content-Type"))
	case c.method == http.MethodHead && r == nil:
		t.Errorf("HEAD %s = %d; api/openapi.yaml has no such response", c.target, resp.StatusCode)
	}
}

// match returns the document's path template for path and its parameters:
// an exact path, else one whose {param} segments match one segment each,
// except a last {path}, which matches the rest (one segment or more), as
// the document says of it. "" when none does.
func (v *openAPIValidator) match(path string) (string, map[string]string) {
	if v.doc.Paths.Value(path) != nil {
		return path, nil
	}
	segs := strings.Split(strings.TrimPrefix(path, "/"), "/")
	for _, tmpl := range v.doc.Paths.InMatchingOrder() {
		ts := strings.Split(strings.TrimPrefix(tmpl, "/"), "/")
		params := map[string]string{}
		ok := true
		for i, s := range ts {
			if i >= len(segs) || segs[i] == "" {
				ok = false
				break
			}
			name, isParam := strings.CutPrefix(s, "{")
			name, _ = strings.CutSuffix(name, "}")
			switch {
			case isParam && name == "path" && i == len(ts)-1:
				params[name] = strings.Join(segs[i:], "/")
			case isParam:
				params[name] = segs[i]
			case s != segs[i]:
				ok = false
			}
			if !ok {
				break
			}
		}
		if ok && (len(ts) == len(segs) || params["path"] != "" && strings.HasSuffix(tmpl, "{path}")) {
			return tmpl, params
		}
	}
	return "", nil
}

// route returns the operation of method on tmpl. A method the path does not
// list (a 405) is held to the 405 response its operations share; a path the
// document lacks to components.responses.NotFound.
func (v *openAPIValidator) route(t *testing.T, tmpl, method string) *routers.Route {
	t.Helper()
	if tmpl == "" {
		nf := v.doc.Components.Responses["NotFound"]
		if nf == nil {
			t.Fatal("api/openapi.yaml has no components.responses.NotFound")
		}
		op := &openapi3.Operation{Responses: openapi3.NewResponses(openapi3.WithStatus(http.StatusNotFound, nf))}
		return &routers.Route{Spec: v.doc, Path: "", PathItem: &openapi3.PathItem{}, Method: method, Operation: op}
	}
	item := v.doc.Paths.Value(tmpl)
	op := item.GetOperation(method)
	if op == nil {
		for _, other := range item.Operations() {
			if r := other.Responses.Status(http.StatusMethodNotAllowed); r != nil {
				op = &openapi3.Operation{Responses: openapi3.NewResponses(openapi3.WithStatus(http.StatusMethodNotAllowed, r))}
				break
			}
		}
		if op == nil {
			t.Fatalf("api/openapi.yaml has no %s %s and no 405 response on that path", method, tmpl)
		}
	}
	return &routers.Route{Spec: v.doc, Path: tmpl, PathItem: item, Method: method, Operation: op}
}

// coversAPIDoc checks that every status docs/API.md's endpoint table lists
// for an endpoint was validated, and that the document's responses for its
// paths are exactly those statuses.
func (v *openAPIValidator) coversAPIDoc(t *testing.T) {
	raw, err := os.ReadFile("../docs/API.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, _ := strings.Cut(string(raw), "| endpoint | methods | answers |")
	table, _, _ = strings.Cut(table, "\n\n")
	rows := 0
	status := regexp.MustCompile(`\b[1-5][0-9]{2}\b`)
	paths := regexp.MustCompile("`(/[^`]*)`")
	for line := range strings.Lines(table) {
		cells := strings.Split(strings.Trim(strings.TrimSpace(line), "|"), "|")
		if len(cells) != 3 || strings.HasPrefix(strings.TrimSpace(cells[0]), "-") {
			continue
		}
		rows++
		var tmpls []string
		for _, m := range paths.FindAllStringSubmatch(cells[0], -1) {
			p := strings.ReplaceAll(m[1], "<name>", "{name}")
			if rest, ok := strings.CutSuffix(p, "/*"); ok {
				p = rest + "/{path}"
			}
			tmpls = append(tmpls, p)
		}
		if len(tmpls) == 0 {
			tmpls = []string{""} // anything else
		}
		var want []int
		for _, s := range status.FindAllString(cells[2], -1) {
			n, _ := strconv.Atoi(s)
			want = append(want, n)
		}
		slices.Sort(want)
		for _, code := range want {
			if !slices.ContainsFunc(tmpls, func(p string) bool { return slices.Contains(v.seen[p], code) }) {
				t.Errorf("docs/API.md lists %d for %v; no answer of it was validated", code, tmpls)
			}
		}
		for _, p := range tmpls {
			if p == "" {
				continue
			}
			item := v.doc.Paths.Value(p)
			if item == nil {
				t.Errorf("docs/API.md lists %s; api/openapi.yaml has no such path", p)
				continue
			}
			var got []int
			for _, op := range item.Operations() {
				for code := range op.Responses.Map() {
					n, _ := strconv.Atoi(code)
					if !slices.Contains(got, n) {
						got = append(got, n)
					}
				}
			}
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Errorf("api/openapi.yaml answers %s with %v; docs/API.md lists %v", p, got, want)
			}
		}
	}
	if rows < 10 {
		t.Fatalf("docs/API.md's endpoint table has %d rows, want every endpoint", rows)
	}
}

// b64 is the standard base64 of s, as HTTP Basic has it.
func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
