package cache

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"testing"
)

// TestEd25519SmallOrderRefused: the points of order 1, 2, 4 and 8, in their
// canonical encodings, with the sign bit flipped, and in the non-canonical
// encodings crypto/ed25519 accepts (y + p), are refused as weak keys; real
// keys are not.
func TestEd25519SmallOrderRefused(t *testing.T) {
	small := []string{
		"0100000000000000000000000000000000000000000000000000000000000000", // identity
		"0100000000000000000000000000000000000000000000000000000000000080", // identity, "-0"
		"ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f", // order 2
		"0000000000000000000000000000000000000000000000000000000000000000", // order 4
		"0000000000000000000000000000000000000000000000000000000000000080", // order 4
		"26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05", // order 8
		"26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc85", // order 8
		"c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a", // order 8
		"c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac03fa", // order 8
		"eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f", // identity, y = p + 1
		"edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f", // order 4, y = p
		"edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff", // order 4, y = p
	}
	for _, h := range small {
		b, _ := hex.DecodeString(h)
		if _, err := NewKey(ed25519.PublicKey(b), KeyMeta{Kid: "x"}); !errors.Is(err, ErrWeakKey) {
			t.Errorf("NewKey(%s) = %v, want ErrWeakKey", h, err)
		}
	}
	for range 64 {
		pub, _, _ := ed25519.GenerateKey(rand.Reader)
		if _, err := NewKey(pub, KeyMeta{Kid: "x"}); err != nil {
			t.Fatalf("NewKey(%x) = %v", []byte(pub), err)
		}
	}
}
