package integration

import (
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestNginxMTLSConfForwardedHost runs deploy/nginx/nginx-mtls.conf (the
// shipped, hand-written mTLS file) with real nginx in front of jwksverify
// with a host route: admin.internal needs scope admin, everything else
// scope read. A reader's request to the public host carrying its own
// X-Forwarded-Host: admin.internal (or Forwarded: host=admin.internal, or
// X-Original-URL: /admin/secret) is allowed — jwksverify decided the
// public host — and nginx-mtls.conf passes the client's headers on, so an
// application that takes its host from them (Django's
// USE_X_FORWARDED_HOST, Flask's ProxyFix, Rails, Express's trust proxy)
// acts on admin.internal. SPEC: the files the project ships set
// X-Forwarded-Host and X-Forwarded-Proto and remove Forwarded and the
// other host/path headers (nginx.conf does; nginx-mtls.conf does not).
func TestNginxMTLSConfForwardedHost(t *testing.T) {
	nginx := requireNginx(t)
	pki := newTestPKI(t)
	srvCert, srvKey := pki.issue(t, "127.0.0.1", true)
	crt := pki.write(t, "server.crt", "CERTIFICATE", srvCert.Certificate[0])
	key := pki.write(t, "server.key", "PRIVATE KEY", srvKey)

	is := newTestIssuer(t)
	up := startEcho(t)
	jv := startJWKSVerify(t, fmt.Sprintf(`listen: 127.0.0.1:0
shutdown_timeout: 1s
forward_auth: {proxy: nginx}
mtls: {client_cert_header: X-Client-Cert}
issuers:
%s    sender_constraint: {mtls: optional}
policies:
  - {name: reader, scopes: {any: [read]}}
  - {name: admin, scopes: {any: [admin]}}
routes:
  - {host: admin.internal, policy: admin}
default_policy: reader
`, is.IssuerConfig()))

	addr := runNginxMTLS(t, nginx, pki, crt, key, jv.HTTP, up.Addr)
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pki.pool}, DisableKeepAlives: true}, Timeout: 5 * time.Second}
	reader := is.Token(map[string]any{"scope": "read"})

	// The controls: the public host is allowed to a reader, the admin host
	// refused.
	for host, want := range map[string]int{"": http.StatusOK, "admin.internal": http.StatusForbidden} {
		req, _ := http.NewRequest(http.MethodGet, "https://"+addr+"/secret", nil)
		if host != "" {
			req.Host = host
		}
		req.Header.Set("Authorization", "Bearer "+reader)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Fatalf("control: reader on Host %q: %d, want %d", host, resp.StatusCode, want)
		}
	}

	for _, h := range [][2]string{
		{"X-Forwarded-Host", "admin.internal"},
		{"Forwarded", "host=admin.internal;proto=https"},
		{"X-Original-Url", "/admin/secret"},
		{"X-Forwarded-Prefix", "/admin"},
		{"X-Host", "admin.internal"},
	} {
		t.Run(h[0], func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodGet, "https://"+addr+"/secret", nil)
			req.Header.Set("Authorization", "Bearer "+reader)
			req.Header.Set(h[0], h[1])
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			data, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			switch resp.StatusCode {
			case http.StatusOK:
			case http.StatusForbidden:
				return // refused: nothing reached the application
			default:
				t.Fatalf("status %d, want 200 or 403", resp.StatusCode)
			}
			var got echoed
			if err := json.Unmarshal(data, &got); err != nil {
				t.Fatal(err)
			}
			if v := got.Headers.Values(h[0]); len(v) > 0 && strings.Contains(strings.Join(v, ","), h[1]) {
				t.Errorf("jwksverify allowed a reader on the public host and the application got the client's %s: %q (jwksverify never decided it)", h[0], v)
			}
		})
	}
}
