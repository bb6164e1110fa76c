package main

import (
	"strings"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/internal/testkeys"
	"github.com/jwksverify/jwksverify/verify"
)

// TestVerifyIDTokenCLI: verify --kind id_token with its inputs, through
// --config (id_token.client_ids) and through --jwks with --audience as the
// client IDs; tokens of other kinds are wrong_type; --explain shows each
// ID-token step.
func TestVerifyIDTokenCLI(t *testing.T) {
	dir := t.TempDir()
	jwksFile := writeFile(t, dir, "jwks.json", testJWKS())
	cfg := writeFile(t, dir, "idt.yaml", []byte("issuers:\n  - issuer: https://idp.test/\n    jwks_file: jwks.json\n    audiences: [web-app]\n    id_token: {client_ids: [web-app]}\n"))
	now := time.Now().Truncate(time.Second)
	at, _ := verify.HalfHash("RS256", "the-access-token")
	idClaims := func(over map[string]any) map[string]any {
		c := claimsAt("https://idp.test/", "web-app", now)
		c["nonce"], c["at_hash"], c["auth_time"], c["acr"] = "n-123", at, now.Add(-time.Minute).Unix(), "silver"
		for k, v := range over {
			c[k] = v
		}
		return c
	}
	mintTyp := func(typ string, c map[string]any) string {
		return testkeys.Mint("RS256", testkeys.Private(testkeys.RSA2048A), map[string]any{"kid": "rsa-a", "typ": typ}, c)
	}
	good := mintRS256(idClaims(nil))
	events := idClaims(map[string]any{"events": map[string]any{"http://schemas.openid.net/event/backchannel-logout": map[string]any{}}})
	inputs := []string{"--kind", "id_token", "--nonce", "n-123", "--access-token", "the-access-token", "--max-age", "300", "--acr", "gold", "--acr", "silver"}
	tests := []struct {
		name      string
		args      []string
		wantCode  int
		wantClass string
	}{
		{"config-all-inputs", append([]string{"--config", cfg}, inputs...), 0, ""},
		{"jwks-audience-is-client-id", append([]string{"--jwks", jwksFile, "--audience", "web-app"}, inputs...), 0, ""},
		{"max-age-duration", []string{"--config", cfg, "--kind", "id_token", "--max-age", "5m"}, 0, ""},
		{"wrong-nonce", []string{"--config", cfg, "--kind", "id_token", "--nonce", "other"}, 1, "wrong_nonce"},
		{"wrong-access-token", []string{"--config", cfg, "--kind", "id_token", "--access-token", "other"}, 1, "wrong_hash"},
		{"code-without-c-hash", []string{"--config", cfg, "--kind", "id_token", "--code", "abc"}, 1, "missing_claim"},
		{"auth-too-old", []string{"--config", cfg, "--kind", "id_token", "--max-age", "10"}, 1, "auth_too_old"},
		{"wrong-acr", []string{"--config", cfg, "--kind", "id_token", "--acr", "gold"}, 1, "wrong_acr"},
		{"unknown-kind", []string{"--config", cfg, "--kind", "logout_token"}, exitUsage, ""},
		{"nonce-without-kind", []string{"--config", cfg, "--nonce", "n-123"}, exitUsage, ""},
		{"bad-max-age", []string{"--config", cfg, "--kind", "id_token", "--max-age", "-5"}, exitUsage, ""},
		{"jwks-without-audience", []string{"--jwks", jwksFile, "--kind", "id_token"}, exitUsage, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runApp(t, nil, "", append(append([]string{"verify"}, tt.args...), good)...)
			if r.code != tt.wantCode {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", r.code, tt.wantCode, r.stdout, r.stderr)
			}
			if tt.wantClass != "" {
				if got := decodeJSONLine(t, r.stdout); got["error"] != tt.wantClass {
					t.Fatalf("error = %v, want %s", got["error"], tt.wantClass)
				}
			}
		})
	}

	// Each forbidden pairing is wrong_type, as an access token and as an
	// ID token.
	kinds := map[string]string{
		"logout-token":         mintTyp("logout+jwt", events),
		"events-claim":         mintRS256(events),
		"set":                  mintTyp("secevent+jwt", idClaims(nil)),
		"dpop-proof":           mintTyp("dpop+jwt", idClaims(nil)),
		"introspection-answer": mintTyp("application/token-introspection+jwt", idClaims(nil)),
	}
	for name, tok := range kinds {
		for _, kind := range []string{"access_token", "id_token"} {
			t.Run("kind-"+name+"-as-"+kind, func(t *testing.T) {
				r := runApp(t, nil, "", "verify", "--config", cfg, "--kind", kind, tok)
				if got := decodeJSONLine(t, r.stdout); r.code != 1 || got["error"] != "wrong_type" {
					t.Fatalf("exit %d, error %v; want 1, wrong_type\nstderr: %s", r.code, got["error"], r.stderr)
				}
			})
		}
	}
	t.Run("at-jwt-as-id-token", func(t *testing.T) {
		r := runApp(t, nil, "", "verify", "--config", cfg, "--kind", "id_token", mintTyp("at+jwt", idClaims(nil)))
		if got := decodeJSONLine(t, r.stdout); r.code != 1 || got["error"] != "wrong_type" {
			t.Fatalf("exit %d, error %v; want 1, wrong_type", r.code, got["error"])
		}
	})

	t.Run("explain", func(t *testing.T) {
		r := runApp(t, nil, "", append(append([]string{"verify", "--config", cfg, "--explain"}, inputs...), good)...)
		if r.code != 0 {
			t.Fatalf("exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
		}
		for _, step := range []string{"kind", "aud", "iat", "azp", "nonce", "at_hash", "auth_time", "acr"} {
			if !strings.Contains(r.stdout, " "+step+" ") {
				t.Errorf("--explain lacks the step %s:\n%s", step, r.stdout)
			}
		}
		// The steps (not the claims of the valid token, printed after them)
		// never echo an input.
		steps, _, _ := strings.Cut(r.stdout, "\n{")
		for _, secret := range []string{"n-123", "the-access-token"} {
			if strings.Contains(steps, secret) || strings.Contains(r.stderr, secret) {
				t.Errorf("--explain echoes the input %q", secret)
			}
		}
		r = runApp(t, nil, "", "verify", "--config", cfg, "--explain", "--kind", "id_token", "--nonce", "other", good)
		if !strings.Contains(r.stdout, "nonce") || !strings.Contains(r.stdout, "FAIL") || r.code != 1 {
			t.Errorf("--explain with a wrong nonce: exit %d\n%s", r.code, r.stdout)
		}
	})
}
