package dpop_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jwksverify/jwksverify/dpop"
	"github.com/jwksverify/jwksverify/internal/testkeys"
	"github.com/jwksverify/jwksverify/verify"
)

// FuzzCheck feeds arbitrary proofs to the checker: it must never panic,
// and every rejection is of a class (invalid_dpop_proof or, for a valid
// proof of another key, binding_mismatch). A fuzzed proof rarely carries
// a valid signature, so the checks behind it are FuzzCheckSigned's.
func FuzzCheck(f *testing.F) {
	f.Add(proof("ES256", testkeys.EC256A, nil, nil))
	f.Add(proof("EdDSA", testkeys.Ed25519A, nil, nil))
	f.Add(proof("PS256", testkeys.RSA2048A, nil, nil))
	f.Add("e30.e30.")
	f.Add(`eyJ0eXAiOiJkcG9wK2p3dCIsImFsZyI6IkVTMjU2IiwiandrIjp7Imt0eSI6IkVDIn19.e30.AA`)
	c := newChecker(f, dpop.Options{})
	f.Fuzz(func(t *testing.T, p string) {
		_, err := c.Check(context.Background(), input(p, "jkt"), t0)
		if err != nil && !errors.Is(err, verify.ErrInvalidDPoPProof) && !errors.Is(err, verify.ErrBindingMismatch) {
			t.Fatalf("Check() = %v: not a proof verdict", err)
		}
	})
}
