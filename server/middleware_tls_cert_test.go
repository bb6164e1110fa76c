package server_test

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/jwksverify/jwksverify/mtls"
	"github.com/jwksverify/jwksverify/server"
	"github.com/jwksverify/jwksverify/server/internal/servertest"
)

// TestMiddlewareTLSConnectionCert: over a TLS connection Server.Middleware
// terminated itself, the connection's certificate is the only one: a
// client without a certificate that writes its victim's public certificate
// into the forwarded header (mtls.client_cert_header, configured for the
// proxy in front of forward-auth) passed a stolen certificate-bound token.
func TestMiddlewareTLSConnectionCert(t *testing.T) {
	victim := servertest.ClientCert(t, "victim")
	leaf, err := x509.ParseCertificate(victim)
	if err != nil {
		t.Fatal(err)
	}
	ve := servertest.NewEnv(t, servertest.Config{TokenCache: 10, NoDown: true})
	srv, err := server.New(server.Options{Verifier: ve.V, Logger: slog.New(slog.DiscardHandler), Now: ve.Clock.Now,
		SenderConstraints: map[string]server.SenderConstraint{servertest.IssuerA: {MTLS: server.ConstraintRequired}},
		ClientCert:        server.ClientCertSource{Header: "X-Client-Cert"}})
	if err != nil {
		t.Fatal(err)
	}
	bound := servertest.Mint(servertest.Claims(map[string]any{"cnf": map[string]any{"x5t#S256": mtls.Thumbprint(victim)}}))
	forwarded := url.PathEscape(string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: victim})))
	for _, tt := range []struct {
		name   string
		peer   []*x509.Certificate
		header string
		want   bool
	}{
		{name: "connection-cert", peer: []*x509.Certificate{leaf}, want: true},
		{name: "no-cert-forwarded-header", header: forwarded, want: false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			reached := false
			h := srv.Middleware(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { reached = true }))
			r := httptest.NewRequest("GET", "https://api.example/x", nil)
			r.TLS = &tls.ConnectionState{PeerCertificates: tt.peer}
			r.Header.Set("Authorization", "Bearer "+bound)
			if tt.header != "" {
				r.Header.Set("X-Client-Cert", tt.header)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if reached != tt.want {
				t.Errorf("Middleware() reached the handler = %v (%d %s), want %v", reached, w.Code, w.Header().Get("WWW-Authenticate"), tt.want)
			}
		})
	}
}
