// Package bigmod is Go's crypto/internal/fips140/bigmod (Go 1.26.8): modular
// arithmetic on fixed-size natural numbers with Montgomery multiplication.
//
// It is copied here for one reason: crypto/rsa builds a [Modulus] (its
// Montgomery constants, including R² mod N) from the public key on every
// verification, a third of an RSA verify. verify/internal/rsaverify builds the
// Modulus once per key, on the key's first use, as BoringSSL does with its
// cached Montgomery context. See verify/internal/rsaverify for the benchmark.
//
// Changes from upstream, and nothing else:
//   - imports: encoding/binary for fips140deps/byteorder, golang.org/x/sys/cpu
//     for fips140deps/cpu; no fips140/check self-test import and no
//     crypto/internal/impl registration (this copy is never the FIPS module);
//   - supportADX moved to nat_amd64.go;
//   - assembly kept for amd64 and arm64 only (the pure-Go fallback elsewhere;
//     upstream's _asm generator, the other architectures' .s files and
//     nat_wasm.go are left out); arm64's shared helper renamed
//     jwksverify_bigmod_addMulVVWx, since its upstream name is a global symbol
//     the linker would see twice;
//   - preallocTarget raised from 2048 to 4096 bits, so verifying with 3072-
//     and 4096-bit keys keeps its numbers on the stack (93 → 1 allocation per
//     RS256-3072 verify, with the Modulus prepared once);
//   - files of ours: this doc.go, nat_amd64.go, upstream.patch, and
//     nat_adx_amd64_test.go, which runs nat_amd64.s's MULQ path (taken by
//     CPUs without ADX) beside the ADX one, against math/big.
//
// upstream.patch is exactly that list as `diff -ru` of upstream against this
// directory, and CI's .ci/bigmod-drift fails when the toolchain's bigmod and
// this copy differ by anything else — a new Go release that changed
// upstream, or a change here without a record. After porting or documenting
// the change, `.ci/bigmod-drift --update` rewrites the patch for review.
// Upstream's nat_test.go and testdata are kept unchanged and run with this
// package's tests; CI also runs them, and verify/internal/rsaverify's, with
// GODEBUG=cpu.adx=off and with -tags purego. The code is under Go's
// BSD-style license, in the LICENSE file here (Go's own LICENSE, unchanged).
package bigmod
