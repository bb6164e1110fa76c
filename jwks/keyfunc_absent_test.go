package jwks

import (
	"context"
	"errors"
	"testing"

	"github.com/golang-jwt/jwt/v5"

	"github.com/jwksverify/jwksverify/cache"
	"github.com/jwksverify/jwksverify/internal/testkeys"
	"github.com/jwksverify/jwksverify/verify"
)

// TestKeyfuncStaticKidNotRefreshed: a kid a static set lacks will never be
// found by a refresh (there is no source), so its unknown_kid does not wrap
// verify.ErrKidNotRefreshed (which tells a caller "try later"), in the
// verifier as in the Keyfunc.
func TestKeyfuncStaticKidNotRefreshed(t *testing.T) {
	secret, _ := staticKeys(t)
	f, err := New(Options{Issuer: "https://idp.example/", StaticKeys: []*cache.Key{secret}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	tok := testkeys.Mint("HS256", testkeys.Secret(), map[string]any{"kid": "other"}, map[string]any{"iss": "https://idp.example/"})
	_, err = jwt.Parse(tok, f.Keyfunc().KeyfuncCtx(context.Background()))
	if !errors.Is(err, verify.ErrUnknownKid) || errors.Is(err, verify.ErrKidNotRefreshed) {
		t.Errorf("Keyfunc: %v, want unknown_kid without ErrKidNotRefreshed", err)
	}
	v, err := verify.New(verify.Options{Issuers: []verify.Issuer{{Issuer: "https://idp.example/", Keys: f.Keys(), Refresher: f, Algorithms: []string{"HS256"}}}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = v.Verify(context.Background(), tok)
	if !errors.Is(err, verify.ErrUnknownKid) || errors.Is(err, verify.ErrKidNotRefreshed) {
		t.Errorf("Verify: %v, want unknown_kid without ErrKidNotRefreshed", err)
	}
}
