package verify

import (
	"cmp"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/cache"
	"github.com/jwksverify/jwksverify/internal/testkeys"
	"github.com/jwksverify/jwksverify/verify/internal/rsaverify"
)

// Once the cross-check has caught a prepared verifier accepting a forgery
// (a proven bug), the verifier stops trusting that path for good: a valid
// token in between must not re-prove the key and let unsampled forgeries
// through again.
func TestCrossCheckMismatchSticks(t *testing.T) {
	for _, alg := range []string{"RS256", "ES256"} {
		t.Run(alg, func(t *testing.T) {
			v := cryptoVerifier(t, alg, Options{}) // default rate 1/1000
			v.sig.prepared = mutantSeam()
			_, forged0 := cryptoToken(alg, 0)
			if _, err := v.Verify(context.Background(), forged0); err == nil {
				t.Fatalf("first-use forgery accepted")
			}
			if v.CryptoStats().Mismatches != 1 {
				t.Fatalf("CryptoStats() = %+v, want the mismatch counted", v.CryptoStats())
			}
			// Ordinary traffic goes on: one valid token, then forgeries.
			valid, _ := cryptoToken(alg, 1)
			if _, err := v.Verify(context.Background(), valid); err != nil {
				t.Fatal(err)
			}
			accepted := 0
			for i := 2; i < 202; i++ {
				_, forged := cryptoToken(alg, i)
				if _, err := v.Verify(context.Background(), forged); err == nil {
					accepted++
				}
			}
			if accepted > 0 {
				t.Errorf("after a logged mismatch, %d of 200 forgeries were accepted (CryptoStats %+v)", accepted, v.CryptoStats())
			}
		})
	}
}

// A forgery the prepared path accepted unsampled is cached; when a later
// cross-check proves the prepared path wrong for that key, the cached
// verdicts it produced keep being served until the tokens expire.
func TestCrossCheckMismatchDropsCachedVerdicts(t *testing.T) {
	v := cryptoVerifier(t, "RS256", Options{CrossCheckRate: 1e-9, TokenCache: TokenCacheOptions{MaxEntries: 100}})
	v.sig.prepared = mutantSeam()
	valid, _ := cryptoToken("RS256", 0)
	if _, err := v.Verify(context.Background(), valid); err != nil { // proves the key
		t.Fatal(err)
	}
	_, forged1 := cryptoToken("RS256", 1)
	if _, err := v.Verify(context.Background(), forged1); err != nil {
		t.Fatalf("unsampled forgery: %v (this test needs it accepted, as 999 in 1000 are at the default rate)", err)
	}
	v.sig.cross.all = true // the sampler picks the next accept
	_, forged2 := cryptoToken("RS256", 2)
	if _, err := v.Verify(context.Background(), forged2); err == nil || v.CryptoStats().Mismatches != 1 {
		t.Fatalf("sampled forgery: %v, %+v; want a mismatch", err, v.CryptoStats())
	}
	if _, err := v.Verify(context.Background(), forged1); err == nil {
		t.Errorf("after the mismatch on kid k1, the earlier forgery is still accepted from the token cache (CacheStats %+v)", v.CacheStats())
	}
}

// pssMutantSeam is a prepared RSA verifier broken in its PSS code only (as
// a bug in rsaverify's VerifyPSSSaltHash would be): PKCS #1 v1.5 is right,
// PSS also accepts every signature whose last bit is flipped.
func pssMutantSeam() preparedCrypto {
	return preparedCrypto{
		rs: func(k *rsaverify.PublicKey, rs *rsSpec, signing string, sig []byte) bool {
			ok := verifyRSPrepared(k, rs, signing, sig)
			if rs.pss {
				ok = ok || verifyRSPrepared(k, rs, signing, flipLastBit(sig))
			}
			return ok
		},
		es: verifyESPrepared,
	}
}

// An RSA key without a JWK alg serves RS* and PS* (and every hash): each
// is its own code in the prepared verifier. A key proven by its RS256
// accepts is not proven for PS256: the first PS256 accept, and the first
// of each other algorithm, is cross-checked too, so that a bug in one
// algorithm's code is caught on its first use rather than one accept in a
// thousand later.
func TestCrossCheckProvesEachAlgorithm(t *testing.T) {
	tests := []struct {
		name         string
		proveWith    []string // valid tokens verified first
		forgeAlg     string
		wantMismatch bool
	}{
		{"rs256-then-ps256-forgery", []string{"RS256"}, "PS256", true},
		{"rs256-rs512-then-ps384-forgery", []string{"RS256", "RS512"}, "PS384", true},
		{"ps256-then-ps512-forgery", []string{"PS256"}, "PS512", true},
		{"ps256-proven-then-ps256-forgery-unsampled", []string{"PS256"}, "PS256", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := cryptoVerifier(t, "RS256", Options{CrossCheckRate: 1e-9})
			v.sig.prepared = pssMutantSeam()
			for i, alg := range tt.proveWith {
				valid, _ := cryptoToken(alg, i)
				if _, err := v.Verify(context.Background(), valid); err != nil {
					t.Fatalf("Verify(valid %s) = %v", alg, err)
				}
			}
			_, forged := cryptoToken(tt.forgeAlg, 99)
			_, err := v.Verify(context.Background(), forged)
			if tt.wantMismatch {
				if !errors.Is(err, ErrBadSignature) || v.CryptoStats().Mismatches != 1 {
					t.Fatalf("Verify(forged %s) = %v, CryptoStats %+v; want bad_signature and one mismatch (first use of %s with this key)",
						tt.forgeAlg, err, v.CryptoStats(), tt.forgeAlg)
				}
				return
			}
			// The documented limit of sampling: once an algorithm is proven
			// for the key, an unsampled accept is not checked again.
			if err != nil {
				t.Fatalf("Verify(forged %s, unsampled) = %v; this case pins the sampling it relies on", tt.forgeAlg, err)
			}
		})
	}
}

// An operator who turns crypto.standard_library on (a reload with
// StandardCrypto) has stopped trusting the prepared verifiers: the
// verdicts they produced, cached in the token cache the reload shares,
// must not be answered by the new verifier, which would otherwise keep
// accepting a forgery the prepared path let through unsampled until it
// expires. Verdicts of a reload that keeps the prepared path are kept.
func TestStandardCryptoReloadDropsPreparedVerdicts(t *testing.T) {
	for _, tt := range []struct {
		name     string
		standard bool
		rate     float64 // the reloaded CrossCheckRate (0: the same as before)
		wantHit  bool
	}{
		{"standard-library-turned-on", true, 0, false},
		{"prepared-kept", false, 0, true},
		// Every accept checked from now on: the verdicts accepted unsampled
		// before are not answered either.
		{"cross-check-of-every-accept-turned-on", false, 1, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tc, err := NewTokenCache(TokenCacheOptions{MaxEntries: 100})
			if err != nil {
				t.Fatal(err)
			}
			v1 := cryptoVerifier(t, "RS256", Options{CrossCheckRate: 1e-9, Cache: tc})
			v1.sig.prepared = mutantSeam()
			valid, _ := cryptoToken("RS256", 0)
			_, forged := cryptoToken("RS256", 1)
			for _, tok := range []string{valid, forged} { // the key proven, then a forgery accepted unsampled
				if _, err := v1.Verify(context.Background(), tok); err != nil {
					t.Fatalf("v1.Verify() = %v (this test needs the forgery accepted unsampled)", err)
				}
			}
			rate := cmp.Or(tt.rate, 1e-9)
			v2, err := New(Options{Issuers: v1.Issuers(), Now: v1.now, Cache: tc, Previous: v1, StandardCrypto: tt.standard, CrossCheckRate: rate})
			if err != nil {
				t.Fatal(err)
			}
			if !tt.standard {
				v2.sig.prepared = mutantSeam()
			}
			_, err = v2.Verify(context.Background(), forged)
			if hit := err == nil; hit != tt.wantHit {
				t.Errorf("v2.Verify(forged) = %v; want the cached verdict answered: %v", err, tt.wantHit)
			}
		})
	}
}

// A mismatch proves the prepared code wrong, not one key: every other key
// goes to the standard library from then on, even one proven before the
// mismatch (whose accepts are otherwise checked one in a sample), and a
// reload (Options.Previous) does not turn the prepared path back on.
func TestCrossCheckMismatchTurnsEveryKeyOff(t *testing.T) {
	for _, tt := range []struct{ alg, second string }{
		{"RS256", testkeys.RSA2048B},
		{"ES256", testkeys.EC256B},
	} {
		t.Run(tt.alg, func(t *testing.T) {
			k1, err := cache.NewKey(testkeys.Public(testkeys.NameForAlg(tt.alg)), cache.KeyMeta{Kid: "k1"})
			if err != nil {
				t.Fatal(err)
			}
			k2, err := cache.NewKey(testkeys.Public(tt.second), cache.KeyMeta{Kid: "k2"})
			if err != nil {
				t.Fatal(err)
			}
			var keys cache.Keys
			keys.Store(cache.NewSet([]*cache.Key{k1, k2}, nil, time.Time{}, time.Time{}))
			now := func() time.Time { return time.Unix(1_800_000_000, 0) }
			opts := Options{Issuers: []Issuer{{Issuer: issCrypto, Keys: &keys}}, Now: now, CrossCheckRate: 1e-9}
			v1, err := New(opts)
			if err != nil {
				t.Fatal(err)
			}
			v1.sig.prepared = mutantSeam()
			k2Token := func(i int) (valid, forged string) {
				tok := testkeys.Mint(tt.alg, testkeys.Private(tt.second), map[string]any{"kid": "k2"},
					map[string]any{"iss": issCrypto, "exp": 1_800_000_000 + 3600, "jti": fmt.Sprint(i)})
				dot := strings.LastIndexByte(tok, '.')
				sig, _ := base64.RawURLEncoding.DecodeString(tok[dot+1:])
				return tok, tok[:dot+1] + base64.RawURLEncoding.EncodeToString(flipLastBit(sig))
			}
			valid, _ := k2Token(0)
			if _, err := v1.Verify(context.Background(), valid); err != nil { // proves k2
				t.Fatalf("Verify(valid, k2) = %v", err)
			}
			_, forgedK1 := cryptoToken(tt.alg, 1)
			if _, err := v1.Verify(context.Background(), forgedK1); !errors.Is(err, ErrBadSignature) || v1.CryptoStats().Mismatches != 1 {
				t.Fatalf("Verify(forged, k1) = %v, %+v; want bad_signature and a mismatch", err, v1.CryptoStats())
			}
			_, forgedK2 := k2Token(2)
			if _, err := v1.Verify(context.Background(), forgedK2); !errors.Is(err, ErrBadSignature) {
				t.Errorf("after a mismatch on k1, Verify(forged, proven k2) = %v, want %v", err, ErrBadSignature)
			}
			opts.Previous = v1
			v2, err := New(opts)
			if err != nil {
				t.Fatal(err)
			}
			v2.sig.prepared = mutantSeam()
			_, forgedK2 = k2Token(3)
			if _, err := v2.Verify(context.Background(), forgedK2); !errors.Is(err, ErrBadSignature) {
				t.Errorf("after a reload, Verify(forged, proven k2) = %v, want %v", err, ErrBadSignature)
			}
		})
	}
}

// A mismatch that the predecessor sees after its successor was built — a
// request still in flight on it after the reload's swap, or while the
// reload waits for an added issuer's keys before swapping — proves the
// prepared code wrong for the successor too: it turns the successor's
// prepared path off, drops the verdicts the successor cached meanwhile
// (a forgery accepted unsampled), in a cache shared with the predecessor
// or one of its own, and is counted in its CryptoStats (the counter the
// metrics read from the swap on).
func TestCrossCheckMismatchAfterReloadReachesSuccessor(t *testing.T) {
	for _, tt := range []struct {
		alg, second string
		cache       string // the successor's token cache: "none", "shared", "own"
	}{
		{"RS256", testkeys.RSA2048B, "none"},
		{"ES256", testkeys.EC256B, "none"},
		{"RS256", testkeys.RSA2048B, "shared"},
		{"RS256", testkeys.RSA2048B, "own"},
		{"ES256", testkeys.EC256B, "own"},
	} {
		t.Run(tt.alg+"-"+tt.cache, func(t *testing.T) {
			k1, err := cache.NewKey(testkeys.Public(testkeys.NameForAlg(tt.alg)), cache.KeyMeta{Kid: "k1"})
			if err != nil {
				t.Fatal(err)
			}
			k2, err := cache.NewKey(testkeys.Public(tt.second), cache.KeyMeta{Kid: "k2"})
			if err != nil {
				t.Fatal(err)
			}
			var keys cache.Keys
			keys.Store(cache.NewSet([]*cache.Key{k1, k2}, nil, time.Time{}, time.Time{}))
			now := func() time.Time { return time.Unix(1_800_000_000, 0) }
			shared, err := NewTokenCache(TokenCacheOptions{MaxEntries: 100})
			if err != nil {
				t.Fatal(err)
			}
			opts := Options{Issuers: []Issuer{{Issuer: issCrypto, Keys: &keys}}, Now: now, CrossCheckRate: 1e-9, Cache: shared}
			v1, err := New(opts)
			if err != nil {
				t.Fatal(err)
			}
			v1.sig.prepared = mutantSeam()
			k2Token := func(i int) (valid, forged string) {
				tok := testkeys.Mint(tt.alg, testkeys.Private(tt.second), map[string]any{"kid": "k2"},
					map[string]any{"iss": issCrypto, "exp": 1_800_000_000 + 3600, "jti": fmt.Sprint(i)})
				dot := strings.LastIndexByte(tok, '.')
				sig, _ := base64.RawURLEncoding.DecodeString(tok[dot+1:])
				return tok, tok[:dot+1] + base64.RawURLEncoding.EncodeToString(flipLastBit(sig))
			}
			valid, _ := k2Token(0)
			if _, err := v1.Verify(context.Background(), valid); err != nil { // proves k2
				t.Fatalf("Verify(valid, k2) = %v", err)
			}
			opts.Previous = v1
			switch tt.cache {
			case "none":
				opts.Cache = nil
			case "own":
				opts.Cache, opts.TokenCache = nil, TokenCacheOptions{MaxEntries: 50}
			}
			v2, err := New(opts) // the reload's verifier, built before the mismatch
			if err != nil {
				t.Fatal(err)
			}
			v2.sig.prepared = mutantSeam()
			// The successor, swapped in, accepts a forgery with the proven
			// key unsampled (and caches it, with a cache).
			_, early := k2Token(1)
			if _, err := v2.Verify(context.Background(), early); err != nil {
				t.Fatalf("v2.Verify(forged, k2) before the mismatch = %v (this test needs it accepted unsampled)", err)
			}
			_, forgedK1 := cryptoToken(tt.alg, 1)
			if _, err := v1.Verify(context.Background(), forgedK1); !errors.Is(err, ErrBadSignature) || v1.CryptoStats().Mismatches != 1 {
				t.Fatalf("v1.Verify(forged, k1) = %v, %+v; want bad_signature and a mismatch", err, v1.CryptoStats())
			}
			if got := v2.CryptoStats().Mismatches; got != 1 {
				t.Errorf("v2.CryptoStats().Mismatches = %d after its predecessor's mismatch, want 1", got)
			}
			_, forgedK2 := k2Token(2)
			if _, err := v2.Verify(context.Background(), forgedK2); !errors.Is(err, ErrBadSignature) {
				t.Errorf("after the predecessor's mismatch, v2.Verify(forged, proven k2) = %v, want %v", err, ErrBadSignature)
			}
			if _, err := v2.Verify(context.Background(), early); !errors.Is(err, ErrBadSignature) {
				t.Errorf("after the predecessor's mismatch, v2.Verify(the forgery it accepted before) = %v, want %v", err, ErrBadSignature)
			}
		})
	}
}
