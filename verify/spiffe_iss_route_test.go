package verify_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/cache"
	"github.com/jwksverify/jwksverify/internal/testkeys"
	"github.com/jwksverify/jwksverify/verify"
)

// TestSPIFFETokenNamingATemplateIssuerIsNotRoutedToItsTrustDomain: a
// token whose iss names a configured issuer is that issuer's, whatever its
// sub says (DECISIONS, issue 15: "an iss naming a configured issuer wins");
// only a token whose iss names none goes to the SPIFFE trust domain of its
// sub. An iss that a {tenantid} template matches names a configured issuer
// as much as an exact one does: a JWT-SVID signed by a (partner) trust
// domain's key that carries the iss and tid of an Entra tenant must not
// pass as that domain's token. It did: the trust domain was looked up
// before the templates, so such a token verified under the trust domain's
// keys, and a policy that holds the Entra tenant by its tid claim, as
// CONFIG.md advises, let it through, while the application behind read an
// Entra tenant's iss on a token Entra never signed.
func TestSPIFFETokenNamingATemplateIssuerIsNotRoutedToItsTrustDomain(t *testing.T) {
	const (
		tmpl     = "https://login.example.com/{tenantid}/v2.0"
		tid      = "72f988bf-86f1-41af-91ab-2d7cd011db47"
		tenant   = "https://login.example.com/" + tid + "/v2.0"
		svidAud  = "spiffe://partner.org/api"
		entraAud = "api://orders"
	)
	entra := keysOf(newKey(t, testkeys.Public(testkeys.RSA2048A), cache.KeyMeta{Kid: "entra", Issuer: tmpl}))
	partner := keysOf(newKey(t, testkeys.Public(testkeys.EC256A), cache.KeyMeta{Kid: "svid", Use: "jwt-svid"}))
	v := newVerifier(t, verify.Options{Issuers: []verify.Issuer{
		{Issuer: tmpl, Keys: entra, Audiences: []string{entraAud}},
		{TrustDomain: "partner.org", Keys: partner, Audiences: []string{svidAud}},
	}})
	svid := func(extra map[string]any) string {
		c := map[string]any{"sub": "spiffe://partner.org/w", "aud": []string{svidAud, entraAud}, "exp": t0.Add(time.Hour).Unix()}
		for k, val := range extra {
			c[k] = val
		}
		return testkeys.Mint("ES256", testkeys.Private(testkeys.EC256A), map[string]any{"kid": "svid"}, c)
	}
	ctx := context.Background()
	// The trust domain's own tokens still pass, with or without an iss of
	// no configured issuer.
	for _, extra := range []map[string]any{nil, {"iss": "https://spire.partner.org"}} {
		if _, err := v.Verify(ctx, svid(extra)); err != nil {
			t.Fatalf("Verify(JWT-SVID, %v) = %v, want nil", extra, err)
		}
	}
	for _, tt := range []struct {
		name  string
		extra map[string]any
	}{
		{"template-tenant", map[string]any{"iss": tenant, "tid": tid}},
		{"template-shape-tid-mismatch", map[string]any{"iss": tenant, "tid": "other"}},
		{"template-shape-no-tid", map[string]any{"iss": tenant}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res, err := v.Verify(ctx, svid(tt.extra))
			if err == nil {
				t.Fatalf("Verify() accepted a trust domain's token carrying iss %q (issuer %q, Issuer %q)", tenant, res.ConfiguredIssuer, res.Issuer)
			}
			if !errors.Is(err, verify.ErrWrongIssuer) && !errors.Is(err, verify.ErrBadSignature) && !errors.Is(err, verify.ErrUnknownKid) {
				t.Errorf("Verify() = %v, want wrong_issuer (or a key verdict of the template's)", err)
			}
		})
	}
}
