package signals_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/cache"
	"github.com/jwksverify/jwksverify/internal/testkeys"
	"github.com/jwksverify/jwksverify/jwks"
	"github.com/jwksverify/jwksverify/revoke"
	"github.com/jwksverify/jwksverify/signals"
	"github.com/jwksverify/jwksverify/verify"
)

// TestSignalOfAKidAbsentFromStaticKeys: an issuer whose keys are static
// (secret_file) has no source to refresh, so a kid it does not hold will
// never be found: a logout token or SET naming one is refused (400,
// invalid_key), not answered 503 for ever (the IdP retrying it without
// end, a poller stuck on it).
func TestSignalOfAKidAbsentFromStaticKeys(t *testing.T) {
	secret := testkeys.Secret()
	k, err := cache.NewKey(secret, cache.KeyMeta{Kid: "hs-1", Local: true, Use: "sig"})
	if err != nil {
		t.Fatal(err)
	}
	f, err := jwks.New(jwks.Options{Issuer: issuerA, StaticKeys: []*cache.Key{k}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	if err := f.Ready(t.Context()); err != nil {
		t.Fatal(err)
	}
	v, err := verify.New(verify.Options{Issuers: []verify.Issuer{{Issuer: issuerA, Keys: f.Keys(), Refresher: f,
		Algorithms: []string{"HS256"}, Audiences: []string{"api://orders"}}}})
	if err != nil {
		t.Fatal(err)
	}
	r, _ := receiverOver(t, v)
	now := time.Now()
	at := map[string]any{"iat": now.Add(-time.Second).Unix(), "exp": now.Add(2 * time.Minute).Unix()}
	// The control: the kid the set holds is taken.
	good := testkeys.Mint("HS256", secret, map[string]any{"kid": "hs-1"}, logoutClaims(apply(at, map[string]any{"jti": "logout-good"})))
	if _, err := r.Logout(context.Background(), good, now); err != nil {
		t.Fatalf("Logout() with the static kid = %v, want nil", err)
	}
	for i := range 3 {
		bad := testkeys.Mint("HS256", secret, map[string]any{"kid": "hs-2"}, logoutClaims(apply(at, map[string]any{"jti": "logout-bad"})))
		if _, err := r.Logout(context.Background(), bad, now); !errors.Is(err, signals.ErrInvalid) || errors.Is(err, signals.ErrUnavailable) {
			t.Fatalf("attempt %d: Logout() of a kid the static set lacks = %v, want a refusal (nothing will ever refresh it)", i, err)
		}
	}
	set := testkeys.Mint("HS256", secret, map[string]any{"kid": "hs-2", "typ": "secevent+jwt"},
		setClaims(map[string]any{signals.EventCredentialChange: map[string]any{}}, map[string]any{"sub_id": issSubA, "iat": at["iat"]}))
	if _, _, err := r.Receive(context.Background(), issuerA, set, revoke.SourceSSFPush, now); signals.Code(err) != "invalid_key" {
		t.Fatalf("Receive() of a kid the static set lacks = %v (code %q), want invalid_key", err, signals.Code(err))
	}
}
