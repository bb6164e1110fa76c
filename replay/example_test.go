package replay_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"time"

	"github.com/jwksverify/jwksverify/replay"
)

// A replay store remembers a key until its ttl runs out: the first Use of a
// key is fresh, every later one within the ttl is a replay. A DPoP
// checker keys it by issuer and proof jti; Redis shares it between
// replicas (NewRedis).
func ExampleMemory() {
	store, err := replay.NewMemory(100_000)
	if err != nil {
		panic(err)
	}
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	key := sha256.Sum256([]byte("https://idp.example.com/ proof-jti-1"))

	for _, at := range []time.Time{now, now.Add(time.Second), now.Add(2 * time.Minute)} {
		fresh, err := store.Use(context.Background(), key, time.Minute, at)
		fmt.Println(at.Sub(now), fresh, err)
	}
	// Output:
	// 0s true <nil>
	// 1s false <nil>
	// 2m0s true <nil>
}
