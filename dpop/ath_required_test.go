package dpop_test

import (
	"context"
	"testing"

	"github.com/jwksverify/jwksverify/dpop"
	"github.com/jwksverify/jwksverify/internal/testkeys"
	"github.com/jwksverify/jwksverify/verify"
)

// TestCheckWithoutAccessTokenIsNotAnAllow: a caller that builds an Input
// for a bound token (JKT set: it holds the token) but forgets AccessToken
// must not have a proof accepted without any ath, nor one whose ath names
// another token: an empty AccessToken turned the ath check off. RFC 9449
// §4.3 step 12: a proof presented with an access token carries its ath.
func TestCheckWithoutAccessTokenIsNotAnAllow(t *testing.T) {
	jkt := thumb(t, testkeys.EC256A)
	for name, claims := range map[string]map[string]any{
		"no-ath":             {"jti": "j-noath", "ath": nil},
		"ath-of-other-token": {"jti": "j-other", "ath": ath("some other access token")},
		"ath-of-the-token":   {"jti": "j-right"},
		// The hash of "" is what an empty AccessToken would be compared
		// to: the missing token is refused before any comparison.
		"ath-of-the-empty-string": {"jti": "j-empty", "ath": ath("")},
	} {
		t.Run(name, func(t *testing.T) {
			in := input(proof("ES256", testkeys.EC256A, nil, claims), jkt)
			in.AccessToken = ""
			got, err := newChecker(t, dpop.Options{}).Check(context.Background(), in, t0)
			if err == nil || verify.Class(err) != "invalid_dpop_proof" {
				t.Errorf("Check(Input without AccessToken) = %+v, %v; want invalid_dpop_proof", got, err)
			}
		})
	}
}
