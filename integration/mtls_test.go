package integration

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// testPKI is a CA made at test time, with a server certificate for
// 127.0.0.1 and client certificates.
type testPKI struct {
	caCert *x509.Certificate
	caKey  *ecdsa.PrivateKey
	pool   *x509.CertPool
	dir    string
	serial int64
}

func newTestPKI(t *testing.T) *testPKI {
	t.Helper()
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tpl, tpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := x509.ParseCertificate(der)
	p := &testPKI{caCert: c, caKey: k, pool: x509.NewCertPool(), dir: t.TempDir(), serial: 1}
	p.pool.AddCert(c)
	p.write(t, "client-ca.crt", "CERTIFICATE", der)
	return p
}

func (p *testPKI) write(t *testing.T, name, typ string, der []byte) string {
	path := filepath.Join(p.dir, name)
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// issue returns a certificate for cn (a server one for 127.0.0.1 when
// server is set), as a tls.Certificate and its DER.
func (p *testPKI) issue(t *testing.T, cn string, server bool) (tls.Certificate, []byte) {
	t.Helper()
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	p.serial++
	tpl := &x509.Certificate{SerialNumber: big.NewInt(p.serial), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	if server {
		tpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		tpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1)}
	}
	der, err := x509.CreateCertificate(rand.Reader, tpl, p.caCert, &k.PublicKey, p.caKey)
	if err != nil {
		t.Fatal(err)
	}
	kd, _ := x509.MarshalPKCS8PrivateKey(k)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: k}, kd
}

func x5tS256(der []byte) string {
	s := sha256.Sum256(der)
	return base64.RawURLEncoding.EncodeToString(s[:])
}

// TestNginxMTLSBoundToken runs deploy/nginx/nginx-mtls.conf with real nginx
// (ssl_verify_client, $ssl_client_escaped_cert): a certificate-bound token
// passes with its certificate and fails with another or without one.
func TestNginxMTLSBoundToken(t *testing.T) {
	nginx := requireNginx(t)
	pki := newTestPKI(t)
	srvCert, srvKey := pki.issue(t, "127.0.0.1", true)
	crt := pki.write(t, "server.crt", "CERTIFICATE", srvCert.Certificate[0])
	key := pki.write(t, "server.key", "PRIVATE KEY", srvKey)
	certA, _ := pki.issue(t, "client-a", false)
	certB, _ := pki.issue(t, "client-b", false)

	is := newTestIssuer(t)
	up := startEcho(t)
	jv := startJWKSVerify(t, fmt.Sprintf(`listen: 127.0.0.1:0
shutdown_timeout: 1s
forward_auth: {proxy: nginx}
mtls: {client_cert_header: X-Client-Cert}
issuers:
%s    sender_constraint: {mtls: optional}
`, is.IssuerConfig()))

	addr := runNginxMTLS(t, nginx, pki, crt, key, jv.HTTP, up.Addr)

	bound := is.Token(map[string]any{"cnf": map[string]any{"x5t#S256": x5tS256(certA.Certificate[0])}})
	unbound := is.Token(nil)
	tests := []struct {
		name     string
		cert     *tls.Certificate
		token    string
		forged   string // an X-Client-Cert the client sends itself
		wantCode int
	}{
		{"bound-with-its-cert", &certA, bound, "", 200},
		{"bound-with-another-cert", &certB, bound, "", 401},
		{"bound-without-cert", nil, bound, "", 401},
		{"bound-without-cert-forged-header", nil, bound, "x", 401},
		{"unbound-without-cert", nil, unbound, "", 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tc := &tls.Config{RootCAs: pki.pool}
			if tt.cert != nil {
				tc.Certificates = []tls.Certificate{*tt.cert}
			}
			c := &http.Client{Transport: &http.Transport{TLSClientConfig: tc, DisableKeepAlives: true}, Timeout: 5 * time.Second}
			req, _ := http.NewRequest(http.MethodGet, "https://"+addr+"/orders/1", nil)
			req.Header.Set("Authorization", "Bearer "+tt.token)
			if tt.forged != "" {
				req.Header.Set("X-Client-Cert", tt.forged)
			}
			before := up.Hits()
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
			resp.Body.Close()
			if resp.StatusCode != tt.wantCode {
				t.Fatalf("status = %d, want %d", resp.StatusCode, tt.wantCode)
			}
			if reached := up.Hits() > before; reached != (tt.wantCode == 200) {
				t.Errorf("upstream reached = %t with status %d", reached, resp.StatusCode)
			}
			if tt.wantCode == 401 {
				if www := resp.Header.Values("Www-Authenticate"); len(www) != 1 || www[0] != `Bearer error="invalid_token", error_description="binding_mismatch"` {
					t.Errorf("WWW-Authenticate = %q", www)
				}
				if string(body) != `{"valid":false,"error":"binding_mismatch"}`+"\n" {
					t.Errorf("401 body = %q, want jwksverify's JSON", body)
				}
			}
		})
	}
}

// TestCaddyMTLSForgedCertHeader runs `jwksverify proxy-config caddy` with
// real Caddy and mtls.client_cert_header: a client's own X-Client-Cert never
// reaches jwksverify, so a stolen certificate-bound token sent with its
// (public) certificate in that header is refused. The site is plain HTTP,
// so Caddy verified no certificate at all.
func TestCaddyMTLSForgedCertHeader(t *testing.T) {
	caddy := requireTool(t, "caddy", "caddy")
	pki := newTestPKI(t)
	certA, _ := pki.issue(t, "client-a", false)
	is := newTestIssuer(t)
	up := startEcho(t)
	port := freePort(t)
	cfg := fmt.Sprintf(`listen: 127.0.0.1:%d
shutdown_timeout: 1s
forward_auth: {proxy: caddy}
mtls: {client_cert_header: X-Client-Cert}
issuers:
%s    sender_constraint: {mtls: optional}
`, port, is.IssuerConfig())
	startJWKSVerify(t, cfg)
	cfgPath := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(freePort(t))
	dir := t.TempDir()
	confPath := filepath.Join(dir, "Caddyfile")
	if err := os.WriteFile(confPath, []byte(proxyConfig(t, "caddy", proxyBackends{upstream: up, config: cfgPath}, addr)), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(caddy, "run", "--config", confPath, "--adapter", "caddyfile")
	cmd.Env = append(os.Environ(), "HOME="+dir, "XDG_DATA_HOME="+filepath.Join(dir, "data"), "XDG_CONFIG_HOME="+filepath.Join(dir, "config"))
	waitTCP(t, startProcess(t, "caddy", cmd), addr)

	pemA := url.PathEscape(string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: certA.Certificate[0]})))
	bound := is.Token(map[string]any{"cnf": map[string]any{"x5t#S256": x5tS256(certA.Certificate[0])}})
	for _, tt := range []struct {
		name     string
		token    string
		forged   string
		wantCode int
	}{
		{"unbound", is.Token(nil), "", 200},
		{"bound-without-cert", bound, "", 401},
		{"bound-forged-pem", bound, pemA, 401},
		{"bound-forged-der", bound, base64.StdEncoding.EncodeToString(certA.Certificate[0]), 401},
	} {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/orders/1", nil)
			req.Header.Set("Authorization", "Bearer "+tt.token)
			if tt.forged != "" {
				req.Header.Set("X-Client-Cert", tt.forged)
			}
			before := up.Hits()
			resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tt.wantCode {
				t.Fatalf("status = %d, want %d", resp.StatusCode, tt.wantCode)
			}
			if reached := up.Hits() > before; reached != (tt.wantCode == 200) {
				t.Errorf("upstream reached = %t with status %d", reached, resp.StatusCode)
			}
		})
	}
}

// runNginxMTLS runs deploy/nginx/nginx-mtls.conf with nginx, its TLS files
// crt and key and pki's client CA, in front of jwksverify at jvHTTP and the
// application at upstream, and returns its address. The file's documented
// placeholders must each be on exactly one non-comment line: an edit that
// breaks the substitution fails loudly.
func runNginxMTLS(t *testing.T, nginx string, pki *testPKI, crt, key, jvHTTP, upstream string) string {
	t.Helper()
	port := freePort(t)
	raw, err := os.ReadFile("../deploy/nginx/nginx-mtls.conf")
	if err != nil {
		t.Fatal(err)
	}
	conf := string(raw)
	for _, sub := range [][2]string{
		{"listen 8443", "listen 127.0.0.1:" + strconv.Itoa(port)},
		{"/etc/nginx/tls/server.crt", crt},
		{"/etc/nginx/tls/server.key", key},
		{"/etc/nginx/tls/client-ca.crt", filepath.Join(pki.dir, "client-ca.crt")},
		{"127.0.0.1:8080", jvHTTP},
		{"127.0.0.1:9000", upstream},
	} {
		var b strings.Builder
		n := 0
		for line := range strings.Lines(conf) {
			if !strings.HasPrefix(strings.TrimSpace(line), "#") && strings.Contains(line, sub[0]) {
				n++
				line = strings.ReplaceAll(line, sub[0], sub[1])
			}
			b.WriteString(line)
		}
		if n != 1 {
			t.Fatalf("deploy/nginx/nginx-mtls.conf: placeholder %q on %d non-comment lines, want 1", sub[0], n)
		}
		conf = b.String()
	}
	return runNginx(t, nginx, conf, port)
}
