package verify_test

import (
	"context"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"maps"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/jwksverify/jwksverify/cache"
	"github.com/jwksverify/jwksverify/internal/testkeys"
	"github.com/jwksverify/jwksverify/verify"
)

// t0 is the fixed "now" of every test.
var t0 = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

const (
	issA = "https://a.example.com/"
	issB = "https://b.example.com/"
	aud  = "api://orders"
)

// kidFor names the test key of alg in sets built by keysFor.
func kidFor(alg string) string { return "k-" + alg }

// keyFor builds the verification key of alg with kid (HS* keys are Local).
func keyFor(t testing.TB, alg, kid string) *cache.Key {
	t.Helper()
	var pub any = testkeys.Secret()
	local := true
	if n := testkeys.NameForAlg(alg); n != "" {
		pub, local = testkeys.Public(n), false
	}
	k, err := cache.NewKey(pub, cache.KeyMeta{Kid: kid, Local: local})
	if err != nil {
		t.Fatalf("NewKey(%s) = %v", alg, err)
	}
	return k
}

// newKey wraps cache.NewKey for a test.
func newKey(t testing.TB, pub any, meta cache.KeyMeta) *cache.Key {
	t.Helper()
	k, err := cache.NewKey(pub, meta)
	if err != nil {
		t.Fatalf("NewKey() = %v", err)
	}
	return k
}

// keysOf publishes a set of keys that never goes stale.
func keysOf(keys ...*cache.Key) *cache.Keys {
	var ks cache.Keys
	ks.Store(cache.NewSet(keys, nil, t0, time.Time{}))
	return &ks
}

// allKeys holds one key per algorithm, with kid kidFor(alg).
func allKeys(t testing.TB) *cache.Keys {
	t.Helper()
	var keys []*cache.Key
	for _, alg := range testkeys.Algorithms {
		keys = append(keys, keyFor(t, alg, kidFor(alg)))
	}
	return keysOf(keys...)
}

// clock is a settable fake clock, safe for concurrent use.
type clock struct{ ns atomic.Int64 }

func newClock(at time.Time) *clock { c := &clock{}; c.set(at); return c }
func (c *clock) set(at time.Time)  { c.ns.Store(at.UnixNano()) }
func (c *clock) now() time.Time    { return time.Unix(0, c.ns.Load()).UTC() }

// claims returns valid claims for issA at t0, with extra members merged in
// (a nil value deletes a member).
func claims(extra map[string]any) map[string]any {
	c := map[string]any{
		"iss": issA,
		"sub": "alice",
		"aud": aud,
		"iat": t0.Unix(),
		"exp": t0.Add(time.Hour).Unix(),
	}
	maps.Copy(c, extra)
	for k, v := range extra {
		if v == nil {
			delete(c, k)
		}
	}
	return c
}

// mint signs claims(extra) with alg's test key under kid ("" for none).
func mint(alg, kid string, extra map[string]any) string {
	h := map[string]any{}
	if kid != "" {
		h["kid"] = kid
	}
	return testkeys.Mint(alg, testkeys.SigningKey(alg), h, claims(extra))
}

// signRaw signs an arbitrary header and payload (JSON text, possibly
// malformed on purpose), which testkeys.Mint cannot produce.
func signRaw(t testing.TB, alg, header, payload string) string {
	t.Helper()
	enc := base64.RawURLEncoding
	in := enc.EncodeToString([]byte(header)) + "." + enc.EncodeToString([]byte(payload))
	sig, err := jwt.GetSigningMethod(alg).Sign(in, testkeys.SigningKey(alg))
	if err != nil {
		t.Fatalf("Sign() = %v", err)
	}
	return in + "." + enc.EncodeToString(sig)
}

// segment returns the decoded segment i of a token.
func segment(t testing.TB, token string, i int) []byte {
	t.Helper()
	b, err := base64.RawURLEncoding.DecodeString(strings.Split(token, ".")[i])
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// issuerA is the default test issuer: every algorithm (HMAC included), one
// audience.
func issuerA(keys *cache.Keys) verify.Issuer {
	return verify.Issuer{Issuer: issA, Keys: keys, Audiences: []string{aud}, AllowHMAC: true}
}

func newVerifier(t testing.TB, opts verify.Options) *verify.Verifier {
	t.Helper()
	if opts.Now == nil {
		opts.Now = func() time.Time { return t0 }
	}
	v, err := verify.New(opts)
	if err != nil {
		t.Fatalf("New() = %v", err)
	}
	return v
}

// fakeRefresher publishes next into keys when asked, or fails with err
// (storeOnErr: publishes next and still fails, as when a concurrent refresh
// spent the budget).
type fakeRefresher struct {
	keys       *cache.Keys
	next       *cache.Set
	err        error
	storeOnErr bool
	calls      atomic.Int32
}

func (f *fakeRefresher) RefreshUnknownKid(ctx context.Context, kid string) error {
	f.calls.Add(1)
	if f.err == nil || f.storeOnErr {
		f.keys.Store(f.next)
	}
	return f.err
}

// publicPEM returns pub as PEM ("PUBLIC KEY") and DER (PKIX).
func publicPEM(t testing.TB, pub any) (pemBytes, der []byte) {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), der
}
