package main

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/jwksverify/jwksverify/config"
	"github.com/jwksverify/jwksverify/internal/testlog"
)

// TestWarnAdminPlaintext: the revocations admin API on a plaintext admin
// listener that is not loopback is warned about at start (its callers'
// secrets and its entries cross the network in clear); admin_tls, a
// loopback address or no revocation store silence it.
func TestWarnAdminPlaintext(t *testing.T) {
	for _, tt := range []struct {
		name       string
		admin      string
		revocation bool
		tlsOn      bool
		warn       bool
	}{
		{"revocation-any-address", "0.0.0.0:9090", true, false, true},
		{"revocation-pod-address", "10.0.0.7:9090", true, false, true},
		{"revocation-admin-tls", "0.0.0.0:9090", true, true, false},
		{"revocation-loopback", "127.0.0.1:9090", true, false, false},
		{"no-revocation", "0.0.0.0:9090", false, false, false},
		{"no-admin-listen", "", true, false, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			plan := &config.Plan{AdminListen: tt.admin}
			if tt.revocation {
				plan.Revocation = &config.Revocation{}
			}
			var out testlog.Buffer
			warnAdminPlaintext(slog.New(slog.NewJSONHandler(&out, nil)), plan, tt.tlsOn)
			if got := strings.Contains(out.String(), "configure admin_tls"); got != tt.warn {
				t.Errorf("warned = %v, want %v (%s)", got, tt.warn, out.String())
			}
		})
	}
}
