package config

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestPlanMint checks the mint section and the policies' mint sections:
// the library's rules (mint.CheckOptions, mint.NewPolicy) with the YAML
// path of every refusal.
func TestPlanMint(t *testing.T) {
	const top = "mint: {issuer: https://jwksverify.internal, keys_file: mint.jwks, signing_kid: k2, ttl: 5m}\n"
	const pol = "policies:\n  - name: orders-read\n    mint: "
	tests := []struct {
		name    string
		doc     string
		wantErr string // "" = valid
		check   func(t *testing.T, p *Plan)
	}{
		{"off-by-default", disc, "", func(t *testing.T, p *Plan) {
			if p.Mint != nil || p.Server.MintPolicies != nil {
				t.Errorf("Mint = %+v, MintPolicies = %v; want none", p.Mint, p.Server.MintPolicies)
			}
		}},
		{"spec-example", disc + top + pol + "{audience: orders-service, claims: {sub: sub, tenant: tid, scope: scope}, ttl: 1m}\n", "", func(t *testing.T, p *Plan) {
			if p.Mint.Issuer != "https://jwksverify.internal" || p.Mint.SigningKid != "k2" || p.Mint.TTL != 5*time.Minute || !filepath.IsAbs(p.Mint.KeysFile) || p.Mint.Watch != time.Second {
				t.Errorf("Mint = %+v", p.Mint)
			}
			if p.Server.MintPolicies["orders-read"] == nil {
				t.Errorf("MintPolicies = %v", p.Server.MintPolicies)
			}
		}},
		{"no-issuer", disc + "mint: {keys_file: k.jwks, signing_kid: k2}\n", "mint.issuer", nil},
		{"no-keys-file", disc + "mint: {issuer: i, signing_kid: k2}\n", "mint.keys_file", nil},
		{"no-signing-kid", disc + "mint: {issuer: i, keys_file: k.jwks}\n", "mint.signing_kid", nil},
		{"ttl-too-long", disc + "mint: {issuer: i, keys_file: k.jwks, signing_kid: k2, ttl: 48h}\n", "mint.ttl", nil},
		{"reserved-header", disc + "mint: {issuer: i, keys_file: k.jwks, signing_kid: k2, header: Host}\n", "mint.header", nil},
		{"unknown-key", disc + "mint: {issuer: i, keys_file: k.jwks, signing_kid: k2, cache: 1}\n", "cache", nil},
		{"policy-without-top", disc + pol + "{audience: a}\n", "policies[0] (orders-read).mint", nil},
		{"no-audience", disc + top + pol + "{claims: {tenant: tid}}\n", "policies[0] (orders-read).mint.audience", nil},
		{"reserved-claim", disc + top + pol + "{audience: a, claims: {client_id: azp}}\n", "policies[0] (orders-read).mint.claims[client_id]", nil},
		{"policy-ttl", disc + top + pol + "{audience: a, ttl: 72h}\n", "policies[0] (orders-read).mint.ttl", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := parse(t, tt.doc)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Parse() = %v", err)
				}
				tt.check(t, p)
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Parse() = %v, want an error naming %s", err, tt.wantErr)
			}
		})
	}
}
