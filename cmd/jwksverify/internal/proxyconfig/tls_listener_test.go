package proxyconfig

import (
	"errors"
	"io"
	"testing"

	"github.com/jwksverify/jwksverify/request"
)

// TestFromPlanRefusesTLSListeners: every file speaks plain HTTP (and
// Envoy's plaintext gRPC) to jwksverify. Written for a configuration whose
// listener serves TLS (as deploy/kubernetes' does), it made every auth
// call fail: refused, naming the setting, instead of a file that cannot
// work.
func TestFromPlanRefusesTLSListeners(t *testing.T) {
	const issuers = "issuers:\n  - {issuer: https://idp.example.com/, jwks_url: https://idp.example.com/jwks, audiences: [api]}\n"
	const tls = "{cert_file: /etc/jwksverify/tls.crt, key_file: /etc/jwksverify/tls.key}"
	for _, tt := range []struct {
		name, yaml string
		px         request.Proxy
		err        error
	}{
		{"plain", "listen: :8080\ngrpc_listen: :9001\n", request.Envoy, nil},
		{"http-tls-nginx", "listen: :8080\ntls: " + tls + "\n", request.Nginx, ErrTLS},
		{"http-tls-caddy", "listen: :8080\ntls: " + tls + "\n", request.Caddy, ErrTLS},
		{"http-tls-traefik", "listen: :8080\ntls: " + tls + "\n", request.Traefik, ErrTLS},
		{"http-tls-envoy", "listen: :8080\ntls: " + tls + "\n", request.Envoy, ErrTLS},
		{"grpc-tls-envoy", "listen: :8080\ngrpc_listen: :9001\ngrpc_tls: " + tls + "\n", request.Envoy, ErrTLS},
		{"admin-tls-envoy", "listen: :8080\nadmin_listen: :9090\nadmin_tls: " + tls + "\n", request.Envoy, ErrTLS},
		{"admin-tls-nginx", "listen: :8080\nadmin_listen: :9090\nadmin_tls: " + tls + "\n", request.Nginx, nil}, // nginx never dials the admin listener
		{"grpc-tls-nginx", "listen: :8080\ngrpc_listen: :9001\ngrpc_tls: " + tls + "\n", request.Nginx, nil},    // nginx never dials gRPC
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := FromPlan(loadPlan(t, tt.yaml+issuers), tt.px)
			if !errors.Is(err, tt.err) {
				t.Errorf("FromPlan(%s) = %v, want %v", tt.px, err, tt.err)
			}
		})
	}
}

// TestWriteRefusesAddressesTheFileWouldReadAsSyntax: --listen and
// --upstream (and the configuration's addresses) are written into the
// proxy's file as they are; one holding a ';', a quote, a space or a
// newline would be read there as configuration.
func TestWriteRefusesAddressesTheFileWouldReadAsSyntax(t *testing.T) {
	for _, tt := range []struct {
		name, upstream string
		ok             bool
	}{
		{"ipv4", "127.0.0.1:9000", true},
		{"ipv6", "[::1]:9000", true},
		{"dns-name", "app.internal:9000", true},
		// A Docker Compose service name: request.CheckHost's rule for a
		// host name ('_' included), which nginx, Caddy, Traefik and Envoy
		// write and resolve as it is.
		{"underscore-name", "my_app:9000", true},
		{"empty-label", "app..internal:9000", false},
		{"semicolon", "127.0.0.1:9000; include /etc/passwd", false},
		{"newline", "app:9000\n  location /admin { }", false},
		{"quote", `app":9000`, false},
		{"space-in-host", "app x:9000", false},
		{"port-zero", "app:0", false},
		{"port-too-large", "app:65536", false},
		{"port-padded", "app:09000", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, px := range []request.Proxy{request.Nginx, request.Caddy, request.Traefik, request.Envoy} {
				err := Write(io.Discard, Input{Proxy: px, JWKSVerify: "127.0.0.1:8080", Upstream: tt.upstream})
				if (err == nil) != tt.ok {
					t.Errorf("%s: Write(upstream %q) = %v, want ok %v", px, tt.upstream, err, tt.ok)
				}
			}
		})
	}
}
