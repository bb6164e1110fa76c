package metrics

import (
	"strings"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/server"
	"github.com/jwksverify/jwksverify/server/internal/servertest"
	"github.com/jwksverify/jwksverify/verify"
)

// TestUse: after a reload swaps in a verifier without IssuerDown, the
// counters of the kept issuer go on, the removed issuer's series are gone
// and a decision for it is no longer recorded; reloads and the config hash
// are exported.
func TestUse(t *testing.T) {
	e := newEnv(t, envConfig{})
	e.m.Decided(server.EndpointAuthz, servertest.IssuerA, server.ClassValid, time.Millisecond)
	e.m.Decided(server.EndpointAuthz, servertest.IssuerDown, "keys_unavailable", time.Millisecond)
	only := e.V.Issuers()[:0]
	for _, is := range e.V.Issuers() {
		if is.Issuer == servertest.IssuerA {
			only = append(only, is)
		}
	}
	v2, err := verify.New(verify.Options{Issuers: only, Now: e.Clock.Now, Previous: e.V})
	if err != nil {
		t.Fatal(err)
	}
	e.m.Use(v2)
	e.m.Decided(server.EndpointAuthz, servertest.IssuerA, server.ClassValid, time.Millisecond)
	e.m.Decided(server.EndpointAuthz, servertest.IssuerDown, "keys_unavailable", time.Millisecond)
	e.m.Reloaded(ReloadSuccess)
	e.m.Reloaded(ReloadFailure)
	e.m.Reloaded(ReloadFailure)
	e.m.SetConfigHash("0123456789abcdef")
	e.m.SetConfigHash("fedcba9876543210")
	body := get(e.m.Handler(), "/metrics").Body.String()
	for _, tt := range []struct {
		line string
		want bool
	}{
		{`jwksverify_verify_total{class="valid",issuer="` + servertest.IssuerA + `"} 2`, true},
		{`issuer="` + servertest.IssuerDown + `"`, false},
		{`jwksverify_config_reloads_total{result="success"} 1`, true},
		{`jwksverify_config_reloads_total{result="failure"} 2`, true},
		{`jwksverify_config_info{hash="fedcba9876543210"} 1`, true},
		{`hash="0123456789abcdef"`, false},
	} {
		if got := strings.Contains(body, tt.line); got != tt.want {
			t.Errorf("/metrics contains %s = %v, want %v", tt.line, got, tt.want)
		}
	}
}

// TestConfigLastReloadSuccessful: config_last_reload_successful is 1 from
// the start, 0 after a failed reload and until one succeeds.
func TestConfigLastReloadSuccessful(t *testing.T) {
	e := newEnv(t, envConfig{})
	const name = "jwksverify_config_last_reload_successful "
	for _, tt := range []struct {
		name   string
		result string // "": no reload yet
		want   string
	}{
		{"start", "", "1"},
		{"failed", ReloadFailure, "0"},
		{"failed-again", ReloadFailure, "0"},
		{"succeeded", ReloadSuccess, "1"},
		{"failed-after-success", ReloadFailure, "0"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.result != "" {
				e.m.Reloaded(tt.result)
			}
			body := get(e.m.Handler(), "/metrics").Body.String()
			if !strings.Contains(body, "\n"+name+tt.want+"\n") {
				t.Errorf("/metrics lacks %s%s", name, tt.want)
			}
		})
	}
}
