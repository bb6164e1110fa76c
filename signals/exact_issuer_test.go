package signals_test

import (
	"errors"
	"testing"

	"github.com/jwksverify/jwksverify/cache"
	"github.com/jwksverify/jwksverify/replay"
	"github.com/jwksverify/jwksverify/signals"
	"github.com/jwksverify/jwksverify/verify"
)

// TestNewRefusesIssuersThatTakeNoSignals: VerifySigned refuses every token
// of a {tenantid} template or a SPIFFE trust domain (wrong_issuer), so a
// receiver built for one refused each of its logout tokens and SETs (a
// poller reports them to the transmitter as invalid_issuer, which drops
// them). New refuses such an issuer instead of taking it.
func TestNewRefusesIssuersThatTakeNoSignals(t *testing.T) {
	const template = "https://login.example.com/{tenantid}/v2.0"
	v, err := verify.New(verify.Options{Issuers: []verify.Issuer{
		{Issuer: template, Keys: &cache.Keys{}},
		{TrustDomain: "example.org", Audiences: []string{"a"}, Keys: &cache.Keys{}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	mem, err := replay.NewMemory(0)
	if err != nil {
		t.Fatal(err)
	}
	for _, iss := range []string{template, "spiffe://example.org"} {
		t.Run(iss, func(t *testing.T) {
			_, err := signals.New(signals.Options{Verifier: v, Replay: mem, Store: &adder{},
				Issuers: []signals.Issuer{{Issuer: iss, Logout: &signals.Logout{Audiences: []string{clientID}}}}})
			var oe *signals.OptionError
			if !errors.As(err, &oe) || oe.Field != "Issuers[0].Issuer" {
				t.Fatalf("New() = %v, want Issuers[0].Issuer refused", err)
			}
		})
	}
}
