package cache_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"fmt"
	"time"

	"github.com/jwksverify/jwksverify/cache"
)

// A fetcher builds a whole set and publishes it; readers load it without a lock.
func ExampleKeys() {
	private, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	key, err := cache.NewKey(&private.PublicKey, cache.KeyMeta{Kid: "2026-11", Alg: "ES256", Use: "sig"})
	if err != nil {
		panic(err)
	}
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

	var keys cache.Keys
	keys.Store(cache.NewSet([]*cache.Key{key}, nil, now, now.Add(24*time.Hour)))

	set := keys.Load()
	k, ok := set.Lookup("2026-11")
	fmt.Println(ok, k.Kty, k.Crv, k.Size, set.Usable(now.Add(time.Hour)), set.Usable(now.Add(25*time.Hour)))
	// Output: true EC P-256 256 true false
}
