package verify_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/verify"
)

// TestOpaqueFutureIat: an introspection answer whose iat is ahead of now
// beyond leeway is not_yet_valid, as a JWT is (it would escape every
// issued_before revocation).
func TestOpaqueFutureIat(t *testing.T) {
	keys := keysOf(keyFor(t, "RS256", "k-RS256"))
	future := time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC)
	a := issuerA(keys)
	a.Introspector = introspector(t, issA, map[string]string{
		"opaque-future": fmt.Sprintf(`{"sub":"bob","aud":%q,"iat":%d,"exp":%d}`, aud, future.Unix(), t0.Add(time.Hour).Unix()),
	})
	v := newVerifier(t, verify.Options{Issuers: []verify.Issuer{a}})
	if res, err := v.Verify(context.Background(), "opaque-future"); !errors.Is(err, verify.ErrNotYetValid) {
		t.Errorf("opaque token with iat %s: %v, %v; want not_yet_valid, as a JWT's", future, res, err)
	}
}

// TestIDTokenClassOrder: an ID token's iat is checked after its aud, as
// before access tokens' iat was checked: a wrong aud with a future iat is
// wrong_audience.
func TestIDTokenClassOrder(t *testing.T) {
	v := newVerifier(t, verify.Options{Issuers: []verify.Issuer{idIssuer(allKeys(t), "")}})
	tok := mintID("ES256", nil, map[string]any{"aud": "someone-else", "iat": t0.Add(time.Hour).Unix()})
	_, err := v.VerifyIDTokenAt(context.Background(), tok, t0, verify.IDTokenChecks{})
	if !errors.Is(err, verify.ErrWrongAudience) {
		t.Errorf("ID token wrong aud + future iat: %v ; want wrong_audience", err)
	}
}
