package integration

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// TestOpenAPIRevocationsAdminAnswers holds the revocations admin API
// (admin_listen, store: redis) to api/openapi.yaml as TestOpenAPIAnswers
// holds the rest of the API: every status its operations can answer,
// validated with kin-openapi — with Redis up, and with Redis stopped, when
// the store refuses every change and the stale copy every list (503).
func TestOpenAPIRevocationsAdminAnswers(t *testing.T) {
	doc := loadOpenAPI(t)
	rd := startRedis(t)
	t.Setenv("JV_REVOKE_SECRET", revokeSecret)
	is := newTestIssuer(t)
	// max_staleness leaves room for a slow moment while Redis is up (a
	// version check every second; a busy CI machine under -race can stall
	// the replica's follower for a second or more, and a "list" that
	// expects 200 then gets 503), and the wait for the stale copy below is
	// bounded well past it.
	p := startJWKSVerify(t, revocationConfig(is, fmt.Sprintf("revocation: {store: redis, max_staleness: 5s}\nredis: {url: \"redis://%s\", timeout: 5s}\n", rd.addr())))

	hdr := func(kv ...string) http.Header {
		h := http.Header{}
		for i := 0; i+1 < len(kv); i += 2 {
			h.Add(kv[i], kv[i+1])
		}
		return h
	}
	basic := "Basic " + b64("admin:"+revokeSecret)
	authed := hdr("Authorization", basic)
	authedJSON := hdr("Authorization", basic, "Content-Type", "application/json")
	entry := func(kind, value string) string {
		b, _ := json.Marshal(map[string]string{"issuer": is.Issuer, kind: value})
		return string(b)
	}
	listIssuer := "/v1/revocations?issuer=" + url.QueryEscape(is.Issuer)
	hc := httpClient()
	id := revokeAt(t, hc, p.Admin, entry("jti", "to-lift"))

	v := &openAPIValidator{doc: doc, seen: map[string][]int{}}
	up := []apiCase{
		{name: "add", method: "POST", target: "/v1/revocations", header: authedJSON, body: entry("sub", "alice"), status: 201, conforming: true},
		{name: "add-whole-issuer", method: "POST", target: "/v1/revocations", header: authedJSON, body: `{"issuer":"` + is.Issuer + `","issued_before":"2020-01-01T00:00:00Z"}`, status: 201, conforming: true},
		{name: "list", method: "GET", target: "/v1/revocations", header: authed, status: 200, conforming: true},
		{name: "list-issuer", method: "GET", target: listIssuer, header: authed, status: 200, conforming: true},
		{name: "list-head", method: "HEAD", target: "/v1/revocations", header: authed, status: 200, conforming: true},
		{name: "add-no-credentials", method: "POST", target: "/v1/revocations", header: hdr("Content-Type", "application/json"), body: entry("jti", "x"), status: 401},
		{name: "add-wrong-secret", method: "POST", target: "/v1/revocations", header: hdr("Content-Type", "application/json", "Authorization", "Basic "+b64("admin:nope")), body: entry("jti", "x"), status: 401},
		{name: "list-head-no-credentials", method: "HEAD", target: "/v1/revocations", status: 401},
		{name: "add-two-kinds", method: "POST", target: "/v1/revocations", header: authedJSON, body: `{"issuer":"` + is.Issuer + `","jti":"a","sub":"b"}`, status: 400},
		{name: "add-not-json", method: "POST", target: "/v1/revocations", header: authedJSON, body: `jti=a`, status: 400},
		{name: "add-text", method: "POST", target: "/v1/revocations", header: hdr("Authorization", basic, "Content-Type", "text/plain"), body: entry("jti", "x"), status: 415},
		{name: "add-too-large", method: "POST", target: "/v1/revocations", header: authedJSON, body: entry("jti", strings.Repeat("x", 9000)), status: 413},
		{name: "list-bad-query", method: "GET", target: "/v1/revocations?iss=x", header: authed, status: 400},
		{name: "list-head-bad-query", method: "HEAD", target: "/v1/revocations?iss=x", header: authed, status: 400},
		{name: "put", method: "PUT", target: "/v1/revocations", header: authed, status: 405},
		{name: "lift", method: "DELETE", target: "/v1/revocations/" + id, header: authed, status: 204, conforming: true},
		{name: "lift-unknown", method: "DELETE", target: "/v1/revocations/" + id, header: authed, status: 404},
		{name: "lift-no-credentials", method: "DELETE", target: "/v1/revocations/" + id, status: 401},
		{name: "get-one", method: "GET", target: "/v1/revocations/" + id, header: authed, status: 405},
	}
	for _, c := range up {
		t.Run(c.name, func(t *testing.T) { v.check(t, p.Admin, c) })
	}
	kept := revokeAt(t, hc, p.Admin, entry("jti", "kept"))

	// Redis stopped: past max_staleness the copy is stale; every change is
	// refused, nothing acknowledged.
	rd.p.stop()
	waitFor(t, 60*time.Second, "the copy goes stale", func() bool {
		code, _, err := adminCall(hc, p.Admin, http.MethodGet, "/v1/revocations", "")
		return err == nil && code == http.StatusServiceUnavailable
	})
	down := []apiCase{
		{name: "down-list", method: "GET", target: "/v1/revocations", header: authed, status: 503, conforming: true},
		{name: "down-list-head", method: "HEAD", target: "/v1/revocations", header: authed, status: 503, conforming: true},
		{name: "down-add", method: "POST", target: "/v1/revocations", header: authedJSON, body: entry("jti", "down"), status: 503, conforming: true},
		{name: "down-lift", method: "DELETE", target: "/v1/revocations/" + kept, header: authed, status: 503, conforming: true},
	}
	for _, c := range down {
		t.Run(c.name, func(t *testing.T) { v.check(t, p.Admin, c) })
	}
}

// TestOpenAPIRevocationsAdminSecurityWorks: each security scheme
// api/openapi.yaml offers for the revocations admin API authenticates a
// caller on the listener that serves it (admin_listen), under admin_tls
// with a client CA (the document's clientCertificate needs it: without
// admin_tls that listener is plain HTTP and no certificate can be
// presented). A caller with none is 401, and a plain-HTTP one never
// reaches the API.
func TestOpenAPIRevocationsAdminSecurityWorks(t *testing.T) {
	doc := loadOpenAPI(t)
	s := newTLSSetup(t)
	is := newTestIssuer(t)
	t.Setenv("JV_REVOKE_SECRET", revokeSecret)
	caller := s.clientCA.ClientCert("revocations-operator")
	cfg := fmt.Sprintf(`listen: 127.0.0.1:0
admin_listen: 127.0.0.1:0
shutdown_timeout: 1s
state_dir: %s
revocation: {store: memory}
admin_tls: {cert_file: %s, key_file: %s, client_ca_file: %s, client_auth: request}
introspection: {clients: [{id: admin, secret_env: JV_REVOKE_SECRET}]}
issuers:
%s`, t.TempDir(), s.cert, s.key, s.clientPEM, is.IssuerConfig())
	jv := startJWKSVerifyWith(t, cfg, jwksverifyOptions{Ready: s.client(nil, false), AdminScheme: "https"})
	list := "https://" + jv.Admin + "/v1/revocations"
	get := func(c *http.Client, url string, set func(*http.Request)) (int, error) {
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		set(req)
		resp, err := c.Do(req)
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	none := func(*http.Request) {}

	// How a caller presents each scheme at the admin listener.
	try := map[string]func() (int, error){
		"clientBasic": func() (int, error) {
			return get(s.client(nil, false), list, func(r *http.Request) { r.SetBasicAuth("admin", revokeSecret) })
		},
		"clientBearer": func() (int, error) {
			return get(s.client(nil, false), list, func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+revokeSecret) })
		},
		// A certificate admin_tls.client_ca_file verified.
		"clientCertificate": func() (int, error) { return get(s.client(&caller, false), list, none) },
	}
	t.Run("no-credentials", func(t *testing.T) {
		if code, err := get(s.client(nil, false), list, none); err != nil || code != http.StatusUnauthorized {
			t.Errorf("GET /v1/revocations without credentials = %d %v, want 401", code, err)
		}
	})
	t.Run("plain-http", func(t *testing.T) {
		code, err := get(httpClient(), "http://"+jv.Admin+"/v1/revocations", func(r *http.Request) { r.SetBasicAuth("admin", revokeSecret) })
		if err == nil && code == http.StatusOK {
			t.Errorf("GET http://admin_listen/v1/revocations = 200 under admin_tls; want no answer from the API")
		}
	})
	for _, path := range []string{"/v1/revocations", "/v1/revocations/{id}"} {
		for method, op := range doc.Paths.Value(path).Operations() {
			if op.Security == nil {
				continue
			}
			for _, req := range *op.Security {
				for scheme := range req {
					t.Run(method+" "+path+" "+scheme, func(t *testing.T) {
						f := try[scheme]
						if f == nil {
							t.Fatalf("api/openapi.yaml offers %s for %s %s; this test knows no way to present it", scheme, method, path)
						}
						if code, err := f(); err != nil || code != http.StatusOK {
							t.Errorf("api/openapi.yaml offers %s for %s %s; presented at admin_listen it gets %d %v, want 200", scheme, method, path, code, err)
						}
					})
				}
			}
		}
	}
}
