package verify_test

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"testing"

	"github.com/jwksverify/jwksverify/cache"
	"github.com/jwksverify/jwksverify/jwks"
	"github.com/jwksverify/jwksverify/verify"
)

// forgeEdDSA signs header.payload for the small-order public key pubHex
// without any private key: with A of small order, [k]A is in a group of at
// most 8 elements, so R = [S]B verifies whenever [k]A is the identity.
// S = 1, R = B. Returns a token the key accepts for every message whose k
// is a multiple of A's order (always, for the identity).
func forgeEdDSA(header, payload string) string {
	enc := base64.RawURLEncoding
	in := enc.EncodeToString([]byte(header)) + "." + enc.EncodeToString([]byte(payload))
	sig := make([]byte, 64)
	base, _ := hex.DecodeString("5866666666666666666666666666666666666666666666666666666666666666") // B
	copy(sig, base)
	sig[32] = 1 // S = 1, little-endian
	return in + "." + enc.EncodeToString(sig)
}

// TestSmallOrderEd25519KeyRefused: an OKP key whose point has small order
// (the identity, the point of order 2, …) verifies signatures that anyone
// can compute without a private key. Like an RSA key with e = 1, it must
// never be used to verify: jwks.Parse must skip it, and a token "signed"
// with it must not pass.
func TestSmallOrderEd25519KeyRefused(t *testing.T) {
	identity, _ := hex.DecodeString("0100000000000000000000000000000000000000000000000000000000000000")
	jwk := map[string]any{"kty": "OKP", "crv": "Ed25519", "kid": "ed", "x": base64.RawURLEncoding.EncodeToString(identity)}
	raw, _ := json.Marshal(map[string]any{"keys": []any{jwk}})
	keys, skipped, err := jwks.Parse(raw, jwks.ParseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 0 {
		t.Errorf("jwks.Parse kept the small-order Ed25519 key (skipped %v)", skipped)
	}
	// Whatever the source: cache.NewKey is the one gate every key passes.
	k, err := cache.NewKey(ed25519.PublicKey(identity), cache.KeyMeta{Kid: "ed"})
	if err == nil {
		v := newVerifier(t, verify.Options{Issuers: []verify.Issuer{issuerA(keysOf(k))}})
		payload, _ := json.Marshal(claims(nil))
		tok := forgeEdDSA(`{"alg":"EdDSA","kid":"ed"}`, string(payload))
		if _, err := v.Verify(context.Background(), tok); err == nil {
			t.Errorf("a token forged without a private key verified under the small-order key")
		} else if !errors.Is(err, verify.ErrRejected) {
			t.Errorf("Verify() = %v", err)
		}
	}
}
