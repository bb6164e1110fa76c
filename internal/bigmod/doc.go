// Package bigmod is Go's crypto/internal/fips140/bigmod (Go 1.26.8): modular
// arithmetic on fixed-size natural numbers with Montgomery multiplication.
//
// It is copied here for one reason: crypto/rsa builds a [Modulus] (its
// Montgomery constants, including R² mod N) from the public key on every
// verification, a third of an RSA verify. internal/rsaverify builds the
// Modulus once per key, when
// the key enters the cache, as BoringSSL does with its cached Montgomery
// context. See internal/rsaverify for the benchmark.
//
// Changes from upstream, and nothing else (diff against
// $GOROOT/src/crypto/internal/fips140/bigmod to check):
//   - imports: encoding/binary for fips140deps/byteorder, golang.org/x/sys/cpu
//     for fips140deps/cpu; no fips140/check self-test import and no
//     crypto/internal/impl registration (this copy is never the FIPS module);
//   - supportADX moved to nat_amd64.go;
//   - assembly kept for amd64 and arm64 only (the pure-Go fallback elsewhere);
//     arm64's shared helper renamed jwksverify_bigmod_addMulVVWx, since its
//     upstream name is a global symbol the linker would see twice;
//   - preallocTarget raised from 2048 to 4096 bits, so verifying with 3072-
//     and 4096-bit keys keeps its numbers on the stack (93 → 1 allocation per
//     RS256-3072 verify, with the Modulus prepared once).
//
// Upstream's nat_test.go is kept unchanged and runs with this package's tests.
// The code is under Go's BSD-style license, in the LICENSE file here.
package bigmod
