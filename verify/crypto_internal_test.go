package verify

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/jwksverify/jwksverify/cache"
	"github.com/jwksverify/jwksverify/internal/testkeys"
	"github.com/jwksverify/jwksverify/internal/testlog"
	"github.com/jwksverify/jwksverify/verify/internal/ecverify"
	"github.com/jwksverify/jwksverify/verify/internal/rsaverify"
)

// preparedSeam is the seam with both prepared verifiers, whatever
// rsaverify.Enabled and ecverify.Enabled say, so that the prepared paths are
// tested under GODEBUG=fips140=on and BoringCrypto too.
func preparedSeam() preparedCrypto {
	return preparedCrypto{rs: verifyRSPrepared, es: verifyESPrepared}
}

// testSigner is the signature step New builds for opts, over seam.
func testSigner(t testing.TB, opts Options, seam preparedCrypto) *signer {
	t.Helper()
	s := newSigner(opts, seam)
	return &s
}

// mustPrepare returns key's prepared form, failing for a key without one.
func mustPrepare(t testing.TB, key *cache.Key) *preparedKey {
	t.Helper()
	p, _ := key.Memo(prepareKey).(*preparedKey)
	if p == nil || (p.rsa == nil) == (p.ec == nil) {
		t.Fatalf("key %s %s has no prepared form", key.Kty, key.Crv)
	}
	return p
}

// issCrypto is the issuer of this file's verifiers.
const issCrypto = "https://crypto.example.com/"

// cryptoAlgs are the algorithms the cross-check covers, one per family and
// hash size.
var cryptoAlgs = []string{"RS256", "RS512", "PS256", "PS384", "ES256", "ES384", "ES512"}

// cryptoVerifier verifies issCrypto's tokens of alg against a fresh key (a
// new *cache.Key: nothing prepared or proven yet), with opts.
func cryptoVerifier(t testing.TB, alg string, opts Options) *Verifier {
	t.Helper()
	k, err := cache.NewKey(testkeys.Public(testkeys.NameForAlg(alg)), cache.KeyMeta{Kid: "k1"})
	if err != nil {
		t.Fatal(err)
	}
	var keys cache.Keys
	keys.Store(cache.NewSet([]*cache.Key{k}, nil, time.Time{}, time.Time{}))
	opts.Issuers = []Issuer{{Issuer: issCrypto, Keys: &keys}}
	opts.Now = func() time.Time { return time.Unix(1_800_000_000, 0) }
	v, err := New(opts)
	if err != nil {
		t.Fatalf("New() = %v", err)
	}
	return v
}

// cryptoToken mints a valid token of alg for cryptoVerifier, and the same
// token with the last bit of its signature flipped (the forgery).
func cryptoToken(alg string, i int) (valid, forged string) {
	tok := testkeys.Mint(alg, testkeys.SigningKey(alg), map[string]any{"kid": "k1"},
		map[string]any{"iss": issCrypto, "exp": 1_800_000_000 + 3600, "jti": fmt.Sprint(i)})
	dot := strings.LastIndexByte(tok, '.')
	sig, _ := base64.RawURLEncoding.DecodeString(tok[dot+1:])
	return tok, tok[:dot+1] + base64.RawURLEncoding.EncodeToString(flipLastBit(sig))
}

func flipLastBit(sig []byte) []byte {
	s := bytes.Clone(sig)
	if len(s) > 0 {
		s[len(s)-1] ^= 1
	}
	return s
}

// mutantSeam is a broken prepared verifier, as a bug might make one: it
// accepts what the real one accepts and also every signature whose last bit
// is flipped.
func mutantSeam() preparedCrypto {
	return preparedCrypto{
		rs: func(k *rsaverify.PublicKey, rs *rsSpec, signing string, sig []byte) bool {
			return verifyRSPrepared(k, rs, signing, sig) || verifyRSPrepared(k, rs, signing, flipLastBit(sig))
		},
		es: func(k *ecverify.PublicKey, es *esSpec, signing string, sig []byte) bool {
			return verifyESPrepared(k, es, signing, sig) || verifyESPrepared(k, es, signing, flipLastBit(sig))
		},
	}
}

// TestCrossCheckCatchesMutant is issue 11's acceptance test of the
// cross-check: a prepared verifier broken to accept a bad signature is
// caught by the standard library's second opinion and fails closed
// (bad_signature), logs at error without the token, and counts a mismatch —
// on a key's first use and after the key was proven when every accept is
// checked; after a mismatch the standard library does every verify (no
// further cross-check is needed, and later forgeries are refused). A negative rate checks only
// until the key is proven: that is what it means, and the test says so.
func TestCrossCheckCatchesMutant(t *testing.T) {
	type step struct {
		forged bool
		want   error // nil: accepted
	}
	tests := []struct {
		name      string
		rate      float64
		seam      func() preparedCrypto
		steps     []step
		wantStats CryptoStats
	}{
		{"forgery-on-first-use", 0, mutantSeam, []step{{true, ErrBadSignature}, {false, nil}}, CryptoStats{CrossChecks: 1, Mismatches: 1}},
		{"forgery-after-proven-every-accept-checked", 1, mutantSeam, []step{{false, nil}, {true, ErrBadSignature}, {false, nil}}, CryptoStats{CrossChecks: 2, Mismatches: 1}},
		{"mismatch-turns-the-prepared-path-off", -1, mutantSeam, []step{{true, ErrBadSignature}, {true, ErrBadSignature}, {false, nil}, {false, nil}}, CryptoStats{CrossChecks: 1, Mismatches: 1}},
		{"negative-rate-checks-first-use-only", -1, mutantSeam, []step{{false, nil}, {true, nil}}, CryptoStats{CrossChecks: 1}},
		{"real-seam-refuses-without-a-check", 1, preparedSeam, []step{{true, ErrBadSignature}, {false, nil}}, CryptoStats{CrossChecks: 1}},
	}
	for _, alg := range cryptoAlgs {
		for _, tt := range tests {
			t.Run(alg+"/"+tt.name, func(t *testing.T) {
				var logs testlog.Buffer
				v := cryptoVerifier(t, alg, Options{CrossCheckRate: tt.rate, Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
				v.sig.prepared = tt.seam()
				var forgeries []string
				for i, st := range tt.steps {
					valid, forged := cryptoToken(alg, i)
					tok := valid
					if st.forged {
						tok = forged
						forgeries = append(forgeries, forged)
					}
					_, err := v.Verify(context.Background(), tok)
					if !errors.Is(err, st.want) || (err == nil) != (st.want == nil) {
						t.Fatalf("step %d (forged %v): Verify() = %v, want %v", i, st.forged, err, st.want)
					}
				}
				if got := v.CryptoStats(); got != tt.wantStats {
					t.Errorf("CryptoStats() = %+v, want %+v", got, tt.wantStats)
				}
				lines := strings.Count(logs.String(), "\n")
				if uint64(lines) != tt.wantStats.Mismatches {
					t.Errorf("%d log lines, want one per mismatch (%d):\n%s", lines, tt.wantStats.Mismatches, logs.String())
				}
				for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
					if line == "" {
						continue
					}
					for _, want := range []string{`"level":"ERROR"`, `"alg":"` + alg + `"`, `"kid":"k1"`, `"issuer":"` + issCrypto + `"`} {
						if !strings.Contains(line, want) {
							t.Errorf("log line %s lacks %s", line, want)
						}
					}
				}
				for _, f := range forgeries {
					for _, seg := range strings.Split(f, ".") {
						if strings.Contains(logs.String(), seg) {
							t.Errorf("the log holds a segment of the token: %s", logs.String())
						}
					}
				}
			})
		}
	}
}

// TestStandardCryptoRoutesEveryVerify: with Options.StandardCrypto, New's
// signature step has no prepared verifier, and even a seam handed to it is
// never called — every RS*, PS* and ES* verification, valid or forged, is
// crypto/rsa's or crypto/ecdsa's, with nothing to cross-check. Without it,
// the same seam does each verification.
func TestStandardCryptoRoutesEveryVerify(t *testing.T) {
	v := cryptoVerifier(t, "RS256", Options{StandardCrypto: true})
	if v.sig.prepared.rs != nil || v.sig.prepared.es != nil {
		t.Fatalf("New(StandardCrypto) has a prepared verifier: rs %v, es %v", v.sig.prepared.rs != nil, v.sig.prepared.es != nil)
	}
	for _, standard := range []bool{true, false} {
		for _, alg := range cryptoAlgs {
			t.Run(fmt.Sprintf("standard-%v/%s", standard, alg), func(t *testing.T) {
				opts := Options{StandardCrypto: standard, CrossCheckRate: -1}
				v := cryptoVerifier(t, alg, opts)
				var calls atomic.Int32
				seam := preparedSeam()
				rs, es := seam.rs, seam.es
				seam.rs = func(k *rsaverify.PublicKey, spec *rsSpec, signing string, sig []byte) bool {
					calls.Add(1)
					return rs(k, spec, signing, sig)
				}
				seam.es = func(k *ecverify.PublicKey, spec *esSpec, signing string, sig []byte) bool {
					calls.Add(1)
					return es(k, spec, signing, sig)
				}
				v.sig = *testSigner(t, opts, seam) // what New does, with the counting seam
				const n = 3
				for i := range n {
					valid, forged := cryptoToken(alg, i)
					if _, err := v.Verify(context.Background(), valid); err != nil {
						t.Fatalf("Verify(valid) = %v, want nil", err)
					}
					if _, err := v.Verify(context.Background(), forged); !errors.Is(err, ErrBadSignature) {
						t.Fatalf("Verify(forged) = %v, want %v", err, ErrBadSignature)
					}
				}
				wantCalls, wantStats := int32(2*n), CryptoStats{CrossChecks: 1}
				if standard {
					wantCalls, wantStats = 0, CryptoStats{}
				}
				if got := calls.Load(); got != wantCalls {
					t.Errorf("the prepared seam ran %d times, want %d", got, wantCalls)
				}
				if got := v.CryptoStats(); got != wantStats {
					t.Errorf("CryptoStats() = %+v, want %+v", got, wantStats)
				}
			})
		}
	}
}

// TestCrossCheckSampling checks how many accepts of a proven key are
// checked again: all at rate 1, none at a negative rate, about the rate's
// fraction between, and cached verdicts never (a token cache hit does not
// reach the signature step).
func TestCrossCheckSampling(t *testing.T) {
	const accepts = 2000
	tests := []struct {
		name     string
		opts     Options
		min, max uint64 // CrossChecks, the first use included
	}{
		{"rate-1", Options{CrossCheckRate: 1}, accepts, accepts},
		{"negative", Options{CrossCheckRate: -0.5}, 1, 1},
		// Binomial(1999, 0.25): mean 500, standard deviation 19.4; the
		// bounds are 7 deviations away.
		{"quarter", Options{CrossCheckRate: 0.25}, 1 + 364, 1 + 636},
		// Binomial(1999, 0.001): P(more than 15) < 1e-7.
		{"default", Options{}, 1, 1 + 15},
		{"cached-hits", Options{CrossCheckRate: 1, TokenCache: TokenCacheOptions{MaxEntries: 10}}, 1, 1},
	}
	// One token: without a token cache every Verify checks its signature.
	tok, _ := cryptoToken("RS256", 0)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := cryptoVerifier(t, "RS256", tt.opts)
			v.sig.prepared = preparedSeam() // also under fips140=on
			for i := range accepts {
				if _, err := v.Verify(context.Background(), tok); err != nil {
					t.Fatalf("Verify(%d) = %v", i, err)
				}
			}
			got := v.CryptoStats()
			if got.CrossChecks < tt.min || got.CrossChecks > tt.max || got.Mismatches != 0 {
				t.Errorf("CryptoStats() = %+v, want %d–%d cross-checks and no mismatch", got, tt.min, tt.max)
			}
		})
	}
}

// TestNewCrossCheckRate: New refuses a rate that is NaN or above 1, and
// takes any other.
func TestNewCrossCheckRate(t *testing.T) {
	tests := []struct {
		name    string
		rate    float64
		wantErr bool
	}{
		{"zero-default", 0, false},
		{"one", 1, false},
		{"tiny", 1e-9, false},
		{"negative", -1, false},
		{"minus-infinity", math.Inf(-1), false},
		{"above-one", 1.5, true},
		{"plus-infinity", math.Inf(1), true},
		{"nan", math.NaN(), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var keys cache.Keys
			_, err := New(Options{Issuers: []Issuer{{Issuer: issCrypto, Keys: &keys}}, CrossCheckRate: tt.rate})
			if (err != nil) != tt.wantErr {
				t.Fatalf("New(CrossCheckRate %v) = %v, wantErr %v", tt.rate, err, tt.wantErr)
			}
		})
	}
}

// TestDefaultCrypto: New uses each prepared verifier exactly when its
// package does not step aside (FIPS 140-3 mode, BoringCrypto); CI runs this
// under GODEBUG=fips140=on and GOEXPERIMENT=boringcrypto.
func TestDefaultCrypto(t *testing.T) {
	c := defaultCrypto()
	if (c.rs != nil) != rsaverify.Enabled() || (c.es != nil) != ecverify.Enabled() {
		t.Fatalf("defaultCrypto() has rs %v, es %v; want rsaverify.Enabled() %v, ecverify.Enabled() %v",
			c.rs != nil, c.es != nil, rsaverify.Enabled(), ecverify.Enabled())
	}
	v := cryptoVerifier(t, "RS256", Options{})
	if (v.sig.prepared.rs != nil) != rsaverify.Enabled() || (v.sig.prepared.es != nil) != ecverify.Enabled() {
		t.Fatalf("New() has rs %v, es %v; want rsaverify.Enabled() %v, ecverify.Enabled() %v",
			v.sig.prepared.rs != nil, v.sig.prepared.es != nil, rsaverify.Enabled(), ecverify.Enabled())
	}
}

// TestCrossCheckLayout: the sampler's counter has two cache lines to itself
// (crossCheck's comment says why).
func TestCrossCheckLayout(t *testing.T) {
	if n := unsafe.Sizeof(crossCheck{}); n != 128 {
		t.Fatalf("unsafe.Sizeof(crossCheck{}) = %d, want 128", n)
	}
}

// TestPreparedFormFollowsPublic: a copy of a Key shares its memo slot; if
// the copy's Public is another key, the prepared form of the first is not
// used for it (the standard library decides, and gets it right).
func TestPreparedFormFollowsPublic(t *testing.T) {
	a, err := cache.NewKey(testkeys.Public(testkeys.RSA2048A), cache.KeyMeta{Kid: "k1"})
	if err != nil {
		t.Fatal(err)
	}
	step := testSigner(t, Options{CrossCheckRate: -1}, preparedSeam())
	spec := lookupAlg("RS256")
	tokA := testkeys.Mint("RS256", testkeys.Private(testkeys.RSA2048A), nil, map[string]any{"sub": "a"})
	tokB := testkeys.Mint("RS256", testkeys.Private(testkeys.RSA2048B), nil, map[string]any{"sub": "a"})
	split := func(tok string) (string, []byte) {
		dot := strings.LastIndexByte(tok, '.')
		sig, _ := base64.RawURLEncoding.DecodeString(tok[dot+1:])
		return tok[:dot], sig
	}
	if s, sig := split(tokA); !step.verify(&issuer{}, spec, s, sig, a) {
		t.Fatal("verify(A's token, A) = false, want true")
	}
	b := *a
	b.Public = testkeys.Public(testkeys.RSA2048B)
	if s, sig := split(tokA); step.verify(&issuer{}, spec, s, sig, &b) {
		t.Error("verify(A's token, copy of A holding B) = true, want false")
	}
	if s, sig := split(tokB); !step.verify(&issuer{}, spec, s, sig, &b) {
		t.Error("verify(B's token, copy of A holding B) = false, want true")
	}
}
