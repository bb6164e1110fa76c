package proxyconfig

import (
	"errors"
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
