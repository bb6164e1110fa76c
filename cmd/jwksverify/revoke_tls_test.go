package main

import (
	"crypto/tls"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jwksverify/jwksverify/internal/testkeys"
)

// TestRevokeOverAdminTLS: revoke reaches an admin listener under admin_tls
// that requires a client certificate (admin_tls.client_ca_file), trusting
// --ca-file and presenting --cert-file and --key-file; without them, or
// with half of a pair, or with TLS files for a plain-HTTP URL, it is
// refused.
func TestRevokeOverAdminTLS(t *testing.T) {
	serverCA, clientCA := testkeys.NewCA("admin CA"), testkeys.NewCA("operators CA")
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	caFile := write("ca.pem", serverCA.PEM)
	certPEM, keyPEM := clientCA.Issue("operator", true)
	certFile, keyFile := write("op.pem", certPEM), write("op.key", keyPEM)

	var seen string
	admin := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS != nil && len(r.TLS.VerifiedChains) > 0 {
			seen = r.TLS.VerifiedChains[0][0].Subject.CommonName
		}
		io.WriteString(w, `{"revocations":[]}`+"\n")
	}))
	sc, sk := serverCA.Issue("127.0.0.1", false)
	pair, err := tls.X509KeyPair(sc, sk)
	if err != nil {
		t.Fatal(err)
	}
	admin.TLS = &tls.Config{Certificates: []tls.Certificate{pair}, ClientCAs: clientCA.Pool, ClientAuth: tls.RequireAndVerifyClientCert}
	admin.StartTLS()
	defer admin.Close()

	for _, tt := range []struct {
		name string
		args []string
		want int
	}{
		{"ca-and-client-certificate", []string{"--admin", admin.URL, "--ca-file", caFile, "--cert-file", certFile, "--key-file", keyFile}, exitOK},
		{"no-client-certificate", []string{"--admin", admin.URL, "--ca-file", caFile}, exitUndecided},
		{"system-roots", []string{"--admin", admin.URL, "--cert-file", certFile, "--key-file", keyFile}, exitUndecided},
		{"cert-without-key", []string{"--admin", admin.URL, "--ca-file", caFile, "--cert-file", certFile}, exitUsage},
		{"key-is-not-the-certificate", []string{"--admin", admin.URL, "--ca-file", caFile, "--cert-file", certFile, "--key-file", caFile}, exitUsage},
		{"tls-files-for-plain-http", []string{"--admin", "http://127.0.0.1:1", "--ca-file", caFile}, exitUsage},
	} {
		t.Run(tt.name, func(t *testing.T) {
			seen = ""
			// A secret beside the certificate rows: without one (and without
			// --cert-file) revoke refuses before it connects.
			r := runApp(t, map[string]string{"JWKSVERIFY_ADMIN_SECRET": "s3cret-s3cret-s3cret"}, "", append([]string{"revoke", "list"}, tt.args...)...)
			if r.code != tt.want {
				t.Fatalf("exit = %d, want %d\n%s%s", r.code, tt.want, r.stdout, r.stderr)
			}
			if tt.want == exitOK && (seen != "operator" || !strings.Contains(r.stdout, "revocations")) {
				t.Errorf("the admin listener saw client certificate %q, stdout %q", seen, r.stdout)
			}
		})
	}
}
