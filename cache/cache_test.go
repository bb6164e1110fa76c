package cache_test

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/base64"
	"errors"
	"fmt"
	"math/big"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/jwksverify/jwksverify/cache"
	"github.com/jwksverify/jwksverify/internal/testkeys"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// rfc7638Key is the RSA key of RFC 7638 §3.1, whose thumbprint the RFC gives.
func rfc7638Key(t *testing.T) *rsa.PublicKey {
	t.Helper()
	n, err := base64.RawURLEncoding.DecodeString("0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw")
	if err != nil {
		t.Fatal(err)
	}
	return &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: 65537}
}

func TestNewKey(t *testing.T) {
	rsaPub := testkeys.Public(testkeys.RSA2048A).(*rsa.PublicKey)
	p224, err := ecdsa.GenerateKey(elliptic.P224(), fixedReader{})
	if err != nil {
		t.Fatal(err)
	}
	evenE := *rsaPub
	evenE.E = 65536
	bigE := *rsaPub
	bigE.E = 1<<31 + 1
	// Moduli of a given size (odd, not real keys: NewKey checks only the form).
	modulus := func(bits int) *rsa.PublicKey {
		n := new(big.Int).Lsh(big.NewInt(1), uint(bits-1))
		return &rsa.PublicKey{N: n.SetBit(n, 0, 1), E: 65537}
	}
	tests := []struct {
		name     string
		pub      any
		meta     cache.KeyMeta
		wantKty  string
		wantCrv  string
		wantSize int
		wantErr  error
	}{
		{name: "rsa-2048", pub: rsaPub, wantKty: "RSA", wantSize: 2048},
		{name: "rsa-3072", pub: testkeys.Public(testkeys.RSA3072), wantKty: "RSA", wantSize: 3072},
		{name: "rsa-1024-refused", pub: testkeys.Public(testkeys.RSA1024), wantErr: cache.ErrWeakKey},
		{name: "rsa-4096", pub: testkeys.Public(testkeys.RSA4096), wantKty: "RSA", wantSize: 4096},
		{name: "rsa-8192", pub: modulus(8192), wantKty: "RSA", wantSize: 8192},
		{name: "rsa-8193-refused", pub: modulus(8193), wantErr: cache.ErrUnsupportedKey},
		{name: "rsa-2047-refused", pub: modulus(2047), wantErr: cache.ErrWeakKey},
		{name: "rsa-even-modulus-refused", pub: &rsa.PublicKey{N: new(big.Int).Lsh(big.NewInt(1), 2047), E: 65537}, wantErr: cache.ErrUnsupportedKey},
		{name: "rsa-even-exponent-refused", pub: &evenE, wantErr: cache.ErrUnsupportedKey},
		{name: "rsa-exponent-over-2^31-refused", pub: &bigE, wantErr: cache.ErrUnsupportedKey},
		{name: "ec-p256", pub: testkeys.Public(testkeys.EC256A), wantKty: "EC", wantCrv: "P-256", wantSize: 256},
		{name: "ec-p384", pub: testkeys.Public(testkeys.EC384), wantKty: "EC", wantCrv: "P-384", wantSize: 384},
		{name: "ec-p521", pub: testkeys.Public(testkeys.EC521), wantKty: "EC", wantCrv: "P-521", wantSize: 521},
		{name: "ec-p224-refused", pub: &p224.PublicKey, wantErr: cache.ErrUnsupportedKey},
		{name: "ed25519", pub: testkeys.Public(testkeys.Ed25519A), wantKty: "OKP", wantCrv: "Ed25519", wantSize: 256},
		{name: "ed25519-short-refused", pub: ed25519.PublicKey{1, 2, 3}, wantErr: cache.ErrUnsupportedKey},
		{name: "oct-local", pub: testkeys.Secret(), meta: cache.KeyMeta{Local: true}, wantKty: "oct", wantSize: 8 * len(testkeys.Secret())},
		{name: "oct-remote-refused", pub: testkeys.Secret(), wantErr: cache.ErrUnsupportedKey},
		{name: "oct-empty-refused", pub: []byte{}, meta: cache.KeyMeta{Local: true}, wantErr: cache.ErrWeakKey},
		{name: "nil-rsa-refused", pub: (*rsa.PublicKey)(nil), wantErr: cache.ErrUnsupportedKey},
		{name: "private-key-refused", pub: testkeys.Private(testkeys.RSA2048A), wantErr: cache.ErrUnsupportedKey},
		{name: "string-refused", pub: "secret", wantErr: cache.ErrUnsupportedKey},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k, err := cache.NewKey(tt.pub, tt.meta)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("NewKey() error = %v, want %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			if k.Kty != tt.wantKty || k.Crv != tt.wantCrv || k.Size != tt.wantSize {
				t.Errorf("NewKey() = kty %q crv %q size %d, want %q %q %d", k.Kty, k.Crv, k.Size, tt.wantKty, tt.wantCrv, tt.wantSize)
			}
			if len(k.Thumbprint) != 43 {
				t.Errorf("NewKey().Thumbprint = %q, want 43 base64url characters", k.Thumbprint)
			}
		})
	}
}

func TestNewKeyThumbprintRFC7638(t *testing.T) {
	k, err := cache.NewKey(rfc7638Key(t), cache.KeyMeta{Kid: "2011-04-29"})
	if err != nil {
		t.Fatal(err)
	}
	const want = "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs" // RFC 7638 §3.1
	if k.Thumbprint != want {
		t.Errorf("Thumbprint = %q, want %q", k.Thumbprint, want)
	}
}

func TestNewKeyCopiesSecret(t *testing.T) {
	secret := []byte("0123456789abcdef0123456789abcdef")
	k, err := cache.NewKey(secret, cache.KeyMeta{Local: true})
	if err != nil {
		t.Fatal(err)
	}
	secret[0] = 'X'
	if got := k.Public.([]byte)[0]; got != '0' {
		t.Errorf("NewKey() shares the caller's secret: first byte %q after the caller changed it", got)
	}
}

func mustKey(t testing.TB, name, kid string) *cache.Key {
	t.Helper()
	k, err := cache.NewKey(testkeys.Public(name), cache.KeyMeta{Kid: kid})
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestSet(t *testing.T) {
	a := mustKey(t, testkeys.RSA2048A, "a")
	b := mustKey(t, testkeys.EC256A, "b")
	dup := mustKey(t, testkeys.RSA2048B, "a")
	anon := mustKey(t, testkeys.Ed25519A, "")
	s := cache.NewSet([]*cache.Key{a, b, dup, anon, nil}, []cache.Skipped{{Index: 9, Reason: "use enc"}}, t0, t0.Add(time.Hour))

	if got, ok := s.Lookup("a"); !ok || got != a {
		t.Errorf("Lookup(a) = %v, %v; want the first key with kid a", got, ok)
	}
	if _, ok := s.Lookup("missing"); ok {
		t.Error("Lookup(missing) found a key")
	}
	if s.Len() != 3 {
		t.Errorf("Len() = %d, want 3 (a, b, the kid-less key)", s.Len())
	}
	if got := s.KidlessKeys(); len(got) != 1 || got[0] != anon {
		t.Errorf("KidlessKeys() = %v, want [anon]", got)
	}
	skipped := s.Skipped()
	if len(skipped) != 2 || skipped[1].Reason != "duplicate kid" || skipped[1].Index != 2 {
		t.Errorf("Skipped() = %+v, want the caller's entry and the duplicate kid at index 2", skipped)
	}

	tests := []struct {
		name string
		set  *cache.Set
		now  time.Time
		want bool
	}{
		{name: "fresh", set: s, now: t0, want: true},
		{name: "at-the-bound", set: s, now: t0.Add(time.Hour), want: true},
		{name: "past-the-bound", set: s, now: t0.Add(time.Hour + time.Nanosecond), want: false},
		{name: "never-stale", set: cache.NewSet([]*cache.Key{a}, nil, t0, time.Time{}), now: t0.Add(1000 * time.Hour), want: true},
		{name: "nil-set", set: nil, now: t0, want: false},
		{name: "refreshed-by-304", set: s.WithTimes(t0.Add(time.Hour), t0.Add(2*time.Hour)), now: t0.Add(90 * time.Minute), want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.set.Usable(tt.now); got != tt.want {
				t.Errorf("Usable(%v) = %v, want %v", tt.now, got, tt.want)
			}
		})
	}

	r := s.WithTimes(t0.Add(time.Minute), t0.Add(2*time.Hour))
	if got, _ := r.Lookup("a"); got != a {
		t.Error("WithTimes() did not keep the same *Key pointers")
	}
	if !s.FetchedAt.Equal(t0) {
		t.Error("WithTimes() changed the original set")
	}
}

func TestNilSet(t *testing.T) {
	var s *cache.Set
	if _, ok := s.Lookup("a"); ok || s.Len() != 0 || s.Keys() != nil || s.KidlessKeys() != nil || s.Skipped() != nil {
		t.Error("a nil *Set is not empty")
	}
}

func TestKeysNegativeMemory(t *testing.T) {
	var k cache.Keys
	if k.Load() != nil {
		t.Fatal("zero Keys holds a set")
	}
	k.RememberMissing("gone", t0.Add(30*time.Second))
	if !k.RecentlyMissing("gone", t0) {
		t.Error("RecentlyMissing(gone) = false right after RememberMissing")
	}
	if k.RecentlyMissing("gone", t0.Add(30*time.Second)) {
		t.Error("RecentlyMissing(gone) = true at its expiry")
	}
	if k.RecentlyMissing("other", t0) {
		t.Error("RecentlyMissing(other) = true, never remembered")
	}

	// A set that now holds the kid makes the memory forget it.
	k.RememberMissing("new", t0.Add(time.Hour))
	k.Store(cache.NewSet([]*cache.Key{mustKey(t, testkeys.EC256A, "new")}, nil, t0, time.Time{}))
	if k.RecentlyMissing("new", t0) {
		t.Error("RecentlyMissing(new) = true after a set holding it was stored")
	}

	long := string(make([]byte, cache.MaxMissingKidLen+1))
	k.RememberMissing(long, t0.Add(time.Hour))
	if k.RecentlyMissing(long, t0) {
		t.Error("a kid over MaxMissingKidLen was remembered")
	}
}

func TestKeysNegativeMemoryBounded(t *testing.T) {
	var k cache.Keys
	for i := range 3 * cache.MaxMissing {
		k.RememberMissing(strconv.Itoa(i), t0.Add(time.Hour))
	}
	remembered := 0
	for i := range 3 * cache.MaxMissing {
		if k.RecentlyMissing(strconv.Itoa(i), t0) {
			remembered++
		}
	}
	if remembered > cache.MaxMissing || remembered == 0 {
		t.Errorf("remembered %d kids, want 1..%d", remembered, cache.MaxMissing)
	}
	if !k.RecentlyMissing(strconv.Itoa(3*cache.MaxMissing-1), t0) {
		t.Error("the newest kid was dropped; eviction must drop the oldest")
	}
}

func TestKeysStatus(t *testing.T) {
	var k cache.Keys
	if got := k.Status(); got.Source != "" {
		t.Errorf("zero Keys Status() = %+v, want zero", got)
	}
	k.SetStatus(cache.Status{Source: "https://idp/jwks", ConsecutiveFailures: 2, Stats: cache.FetchStats{Fetches: 3}})
	if got := k.Status(); got.Source != "https://idp/jwks" || got.ConsecutiveFailures != 2 || got.Stats != (cache.FetchStats{}) {
		t.Errorf("Status() = %+v, want the published status with the live (zero) counters, not the published Stats", got)
	}
}

// Status().Stats are the live counters at the call: a count made after the
// status was published shows at once; a negative-memory hit counts where it
// happens, a miss does not.
func TestKeysLiveCounters(t *testing.T) {
	var k cache.Keys
	k.SetStatus(cache.Status{Source: "https://idp/jwks"})
	c := k.Counters()
	if c != k.Counters() {
		t.Fatal("Counters() returns another pointer on each call")
	}
	c.Fetches.Add(2)
	c.NotModified.Add(1)
	c.Errors.Add(3)
	c.KeysSkipped.Add(4)
	c.UnknownKidRefreshes.Add(5)
	c.SuppressedRefreshes.Add(6)
	k.RememberMissing("gone", t0.Add(time.Minute))
	for _, kid := range []string{"gone", "gone", "other"} {
		k.RecentlyMissing(kid, t0)
	}
	k.RecentlyMissing("gone", t0.Add(time.Hour)) // expired: a miss
	want := cache.FetchStats{Fetches: 2, NotModified: 1, Errors: 3, KeysSkipped: 4,
		UnknownKidRefreshes: 5, SuppressedRefreshes: 6, NegativeKidHits: 2}
	if got := k.Status().Stats; got != want {
		t.Errorf("Status().Stats = %+v, want %+v", got, want)
	}
	if got := c.Load(); got != want {
		t.Errorf("Counters().Load() = %+v, want %+v", got, want)
	}
}

// TestKeysConcurrent runs readers against a writer swapping whole sets; under
// -race it proves readers never see a partly built set.
func TestKeysConcurrent(t *testing.T) {
	var k cache.Keys
	sets := make([]*cache.Set, 4)
	for i := range sets {
		sets[i] = cache.NewSet([]*cache.Key{mustKey(t, testkeys.EC256A, fmt.Sprint("k", i))}, nil, t0, time.Time{})
	}
	var wg sync.WaitGroup
	for r := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 2000 {
				s := k.Load()
				if s == nil {
					continue
				}
				if s.Len() != 1 {
					t.Errorf("reader %d saw a set of %d keys", r, s.Len())
					return
				}
				k.RecentlyMissing(fmt.Sprint(i), t0)
			}
		}()
	}
	for i := range 2000 {
		k.Store(sets[i%len(sets)])
		k.RememberMissing(fmt.Sprint(i), t0.Add(time.Second))
	}
	wg.Wait()
}

func BenchmarkLookup(b *testing.B) {
	for _, n := range []int{1, 1000} {
		b.Run(fmt.Sprint("keys=", n), func(b *testing.B) {
			keys := make([]*cache.Key, n)
			for i := range keys {
				keys[i] = mustKey(b, testkeys.EC256A, fmt.Sprint("kid-", i))
			}
			var ks cache.Keys
			ks.Store(cache.NewSet(keys, nil, t0, time.Time{}))
			kid := fmt.Sprint("kid-", n/2)
			b.ReportAllocs()
			for b.Loop() {
				if _, ok := ks.Load().Lookup(kid); !ok {
					b.Fatal("not found")
				}
			}
		})
	}
}

// fixedReader is a deterministic byte source for key generation in tests.
type fixedReader struct{}

func (fixedReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(i*7 + 1)
	}
	return len(p), nil
}

// TestNewKeyCopiesMaterial: a Key keeps its own copy of the public key, so a
// caller changing theirs afterwards changes neither the key the verifier
// uses nor its thumbprint.
func TestNewKeyCopiesMaterial(t *testing.T) {
	rsaOrig := testkeys.Public(testkeys.RSA2048A).(*rsa.PublicKey)
	ecOrig := testkeys.Public(testkeys.EC256A).(*ecdsa.PublicKey)
	edOrig := testkeys.Public(testkeys.Ed25519A).(ed25519.PublicKey)
	tests := []struct {
		name   string
		pub    func() any  // a fresh copy of the caller's key
		mutate func(p any) // what the caller does afterwards
		equal  func(a, b any) bool
	}{
		{"rsa", func() any { return &rsa.PublicKey{N: new(big.Int).Set(rsaOrig.N), E: rsaOrig.E} },
			func(p any) { p.(*rsa.PublicKey).N.SetInt64(35); p.(*rsa.PublicKey).E = 3 },
			func(a, b any) bool { return a.(*rsa.PublicKey).Equal(b) }},
		{"ec", func() any {
			raw, _ := ecOrig.Bytes()
			k, _ := ecdsa.ParseUncompressedPublicKey(ecOrig.Curve, raw)
			return k
		},
			//lint:ignore SA1019 changing the raw coordinate is the misuse NewKey must not be exposed to
			func(p any) { p.(*ecdsa.PublicKey).X.SetInt64(1) },
			func(a, b any) bool { return a.(*ecdsa.PublicKey).Equal(b) }},
		{"ed25519", func() any { return slices.Clone(edOrig) },
			func(p any) { p.(ed25519.PublicKey)[0] ^= 0xff },
			func(a, b any) bool { return a.(ed25519.PublicKey).Equal(b) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, err := cache.NewKey(tt.pub(), cache.KeyMeta{})
			if err != nil {
				t.Fatal(err)
			}
			callers := tt.pub()
			k, err := cache.NewKey(callers, cache.KeyMeta{})
			if err != nil {
				t.Fatal(err)
			}
			tt.mutate(callers)
			if !tt.equal(k.Public, want.Public) {
				t.Errorf("Public changed with the caller's key")
			}
			if k.Thumbprint != want.Thumbprint {
				t.Errorf("Thumbprint = %q, want %q", k.Thumbprint, want.Thumbprint)
			}
		})
	}
}

// TestKeyMemo checks the key's memo slot: fill runs once however many
// goroutines ask at once, every caller gets its result, a filled slot costs
// no allocation, and a key built as a struct literal (no slot) gets nil and
// never runs fill.
func TestKeyMemo(t *testing.T) {
	k, err := cache.NewKey(testkeys.Public(testkeys.RSA2048A), cache.KeyMeta{Kid: "a"})
	if err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int32
	fill := func(got *cache.Key) any {
		calls.Add(1)
		return "prepared:" + got.Thumbprint
	}
	want := "prepared:" + k.Thumbprint
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			if v := k.Memo(fill); v != want {
				t.Errorf("Memo() = %v, want %s", v, want)
			}
		})
	}
	wg.Wait()
	if n := calls.Load(); n != 1 {
		t.Fatalf("fill ran %d times, want 1", n)
	}
	if v := k.Memo(func(*cache.Key) any { return "other" }); v != want {
		t.Errorf("Memo(another fill) = %v, want the first fill's %s", v, want)
	}
	if allocs := testing.AllocsPerRun(100, func() { _ = k.Memo(fill) }); allocs != 0 {
		t.Errorf("Memo() on a filled slot allocates %v times, want 0", allocs)
	}

	literal := &cache.Key{Kid: "b", Kty: "RSA"}
	calls.Store(0)
	for range 3 {
		if v := literal.Memo(fill); v != nil {
			t.Errorf("struct literal: Memo() = %v, want nil (no slot)", v)
		}
	}
	if n := calls.Load(); n != 0 {
		t.Errorf("struct literal: fill ran %d times in 3 calls, want 0 (no slot)", n)
	}
}

// TestNoCryptoImports checks the seam of issue 11: cache holds public
// material and imports none of the module's internal crypto packages (how a
// signature is checked is package verify's business).
func TestNoCryptoImports(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if strings.HasPrefix(pkg, "github.com/jwksverify/jwksverify/internal/") {
			t.Errorf("cache depends on %s, want no internal package", pkg)
		}
	}
}

// TestSetSameKeys holds SameKeys to key identity: a set and its WithTimes
// copies hold the same keys; a set parsed again from the same keys, an
// empty set and nil do not.
func TestSetSameKeys(t *testing.T) {
	a := mustKey(t, testkeys.RSA2048A, "a")
	b := mustKey(t, testkeys.EC256A, "b")
	s := cache.NewSet([]*cache.Key{a, b}, nil, t0, time.Time{})
	again := cache.NewSet([]*cache.Key{a, b}, nil, t0, time.Time{})
	fewer := cache.NewSet([]*cache.Key{a}, nil, t0, time.Time{})
	empty := cache.NewSet(nil, nil, t0, time.Time{})
	for _, tt := range []struct {
		name string
		x, y *cache.Set
		want bool
	}{
		{"itself", s, s, true},
		{"not-modified", s, s.WithTimes(t0.Add(time.Minute), t0.Add(time.Hour)), true},
		{"not-modified-twice", s.WithTimes(t0, time.Time{}), s.WithTimes(t0.Add(time.Minute), time.Time{}), true},
		{"parsed-again", s, again, false},
		{"fewer-keys", s, fewer, false},
		{"empty", empty, empty, false},
		{"nil", s, nil, false},
		{"nil-receiver", nil, s, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.x.SameKeys(tt.y); got != tt.want {
				t.Errorf("SameKeys() = %v, want %v", got, tt.want)
			}
		})
	}
}
