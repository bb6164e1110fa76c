package signals_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"fmt"
	"log/slog"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/jwksverify/jwksverify/cache"
	"github.com/jwksverify/jwksverify/replay"
	"github.com/jwksverify/jwksverify/revoke"
	"github.com/jwksverify/jwksverify/signals"
	"github.com/jwksverify/jwksverify/verify"
)

// printStore is a revoke.Adder that prints what it stores.
type printStore struct{}

func (printStore) Add(_ context.Context, e revoke.Entry) (revoke.Entry, error) {
	fmt.Printf("revoke %s %s=%s (from %s)\n", e.Issuer, e.Kind, e.Value, e.Source)
	e.ID = "1"
	return e, nil
}

// A back-channel logout token of a session revokes that session: its sid.
// The same token again is refused, its jti being used.
func ExampleReceiver_Logout() {
	idp, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	now := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	key, _ := cache.NewKey(&idp.PublicKey, cache.KeyMeta{Kid: "k1"})
	var keys cache.Keys // a jwks.Fetcher fills it in a service
	keys.Store(cache.NewSet([]*cache.Key{key}, nil, now, time.Time{}))
	v, err := verify.New(verify.Options{Issuers: []verify.Issuer{{Issuer: "https://idp.example.com/", Keys: &keys}}})
	if err != nil {
		panic(err)
	}
	used, _ := replay.NewMemory(0) // replay.Redis across replicas
	r, err := signals.New(signals.Options{
		Verifier: v, Replay: used, Store: printStore{}, Logger: slog.New(slog.DiscardHandler),
		Issuers: []signals.Issuer{{Issuer: "https://idp.example.com/",
			Logout: &signals.Logout{Audiences: []string{"web-app"}, Revoke: signals.RevokeSession}}},
	})
	if err != nil {
		panic(err)
	}
	tok := jwt.NewWithClaims(jwt.SigningMethodES256, jwt.MapClaims{
		"iss": "https://idp.example.com/", "aud": "web-app", "iat": now.Unix(), "jti": "bcl-1", "sid": "s-42",
		"events": map[string]any{signals.BackchannelLogoutEvent: map[string]any{}},
	})
	tok.Header["kid"], tok.Header["typ"] = "k1", "logout+jwt"
	lt, _ := tok.SignedString(idp)

	if _, err := r.Logout(context.Background(), lt, now); err != nil {
		panic(err)
	}
	_, err = r.Logout(context.Background(), lt, now)
	fmt.Println(signals.Code(err), err)
	// Output:
	// revoke https://idp.example.com/ sid=s-42 (from backchannel_logout)
	// invalid_request invalid_request: jti already used
}
