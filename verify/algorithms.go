package verify

import (
	"fmt"
	"strings"

	"github.com/golang-jwt/jwt/v5"
)

// This file exports the algorithm rules that callers (configuration loaders,
// key listings) apply before a Verifier exists. The Verifier applies the same
// functions: there is one copy of each rule, the table in policy.go.

// Algorithms returns the JWS alg values the verifier checks, in the order of
// its table: HS256 HS384 HS512 RS256 RS384 RS512 PS256 PS384 PS512 ES256
// ES384 ES512 EdDSA. It returns a new slice on each call.
func Algorithms() []string {
	out := make([]string, len(algs))
	for i := range algs {
		out[i] = algs[i].name
	}
	return out
}

// MinHMACBytes returns the shortest secret the HMAC algorithm alg accepts:
// its hash size in bytes (32, 48 and 64 for HS256, HS384 and HS512; RFC 7518
// §3.2). It returns 0 when alg is not an HMAC algorithm of the table. A key
// shorter than this never fits alg (Verifier.Verify answers alg_not_allowed).
func MinHMACBytes(alg string) int {
	if a := lookupAlg(alg); a != nil {
		return a.minHMACBytes()
	}
	return 0
}

// minHMACBytes is [MinHMACBytes] of a, or 0 for an algorithm that is not HMAC.
func (a *algSpec) minHMACBytes() int {
	if m, ok := a.method.(*jwt.SigningMethodHMAC); ok {
		return m.Hash.Size()
	}
	return 0
}

// CheckAlgorithm reports whether name is an alg value the verifier checks
// (exact case): nil, or an error saying that "none" is never accepted or that
// name is unknown, listing the known ones. The message has no package prefix,
// for the caller to prefix with where the name came from. [New] refuses an
// Issuer.Algorithms entry with this error.
func CheckAlgorithm(name string) error {
	switch {
	case lookupAlg(name) != nil:
		return nil
	case strings.EqualFold(name, "none"):
		return fmt.Errorf("%q is never accepted (RFC 8725 §3.1)", name)
	}
	return fmt.Errorf("unknown algorithm %q (known: %s)", name, strings.Join(Algorithms(), ", "))
}
