package verify_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/cache"
	"github.com/jwksverify/jwksverify/verify"
)

// cachedVerifier verifies issA's ES256 and RS256 tokens with a token cache of
// max entries, on clk.
func cachedVerifier(t testing.TB, keys *cache.Keys, clk *clock, max int) *verify.Verifier {
	t.Helper()
	return newVerifier(t, verify.Options{
		Issuers:    []verify.Issuer{{Issuer: issA, Keys: keys}},
		Now:        clk.now,
		TokenCache: verify.TokenCacheOptions{MaxEntries: max},
	})
}

func TestTokenCacheHit(t *testing.T) {
	clk := newClock(t0)
	v := cachedVerifier(t, allKeys(t), clk, 100)
	tok := mint("ES256", "k-ES256", nil)
	first, err := v.Verify(context.Background(), tok)
	if err != nil {
		t.Fatalf("Verify() = %v, want nil", err)
	}
	second, err := v.Verify(context.Background(), tok)
	if err != nil {
		t.Fatalf("Verify() again = %v, want nil", err)
	}
	if first != second {
		t.Errorf("Verify() again returned a new Result, want the cached one")
	}
	if s := v.CacheStats(); s.Hits != 1 || s.Misses != 1 || s.Entries != 1 || s.Bytes <= int64(len(first.Claims)) {
		t.Errorf("CacheStats() = %+v, want 1 hit, 1 miss, 1 entry, > %d bytes", s, len(first.Claims))
	}
	// A token that differs in one byte is a different token. The byte is in
	// the middle of the signature and always changes: ECDSA signatures are
	// random, so a fixed suffix would sometimes equal the original.
	if _, err := v.Verify(context.Background(), verify.AlterSignature(tok)); !errors.Is(err, verify.ErrBadSignature) && !errors.Is(err, verify.ErrMalformed) {
		t.Errorf("Verify(altered) = %v, want a rejection", err)
	}
}

func TestTokenCacheRejectionsAreNotCached(t *testing.T) {
	clk := newClock(t0)
	v := cachedVerifier(t, allKeys(t), clk, 100)
	tok := mint("ES256", "k-ES256", map[string]any{"exp": t0.Add(-time.Hour).Unix()})
	for range 3 {
		if _, err := v.Verify(context.Background(), tok); !errors.Is(err, verify.ErrExpired) {
			t.Fatalf("Verify() = %v, want %v", err, verify.ErrExpired)
		}
	}
	if s := v.CacheStats(); s.Entries != 0 || s.Hits != 0 {
		t.Errorf("CacheStats() = %+v, want no entries and no hits", s)
	}
}

func TestTokenCacheRechecksTime(t *testing.T) {
	exp := t0.Add(time.Hour)
	nbf := t0.Add(10 * time.Second)
	tests := []struct {
		name     string
		extra    map[string]any
		later    time.Time
		wantErr  error
		wantHits int // -1: not asserted (rejections)
	}{
		{"still-valid", nil, t0.Add(30 * time.Minute), nil, 1},
		{"expired-at-exp", nil, exp, nil, 0}, // within leeway: verified afresh
		{"expired-past-leeway", nil, exp.Add(30 * time.Second), verify.ErrExpired, -1},
		{"clock-back-before-nbf", map[string]any{"nbf": nbf.Unix()}, nbf.Add(-31 * time.Second), verify.ErrNotYetValid, -1},
		{"clock-back-within-nbf-leeway", map[string]any{"nbf": nbf.Unix()}, nbf.Add(-30 * time.Second), nil, 1},
		{"no-exp-within-ttl", map[string]any{"exp": nil}, t0.Add(5*time.Minute + 59*time.Second), nil, 1},
		{"no-exp-short-ttl", map[string]any{"exp": nil}, t0.Add(6*time.Minute + time.Second), nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := newClock(t0.Add(time.Minute))
			keys := allKeys(t)
			v := newVerifier(t, verify.Options{
				Issuers:    []verify.Issuer{{Issuer: issA, Keys: keys, RequiredClaims: []string{}}},
				Now:        clk.now,
				TokenCache: verify.TokenCacheOptions{MaxEntries: 10},
			})
			tok := mint("ES256", "k-ES256", tt.extra)
			if _, err := v.Verify(context.Background(), tok); err != nil {
				t.Fatalf("Verify() = %v, want nil", err)
			}
			clk.set(tt.later)
			_, err := v.Verify(context.Background(), tok)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Fatalf("Verify() later = %v, want %v", err, tt.wantErr)
			}
			if s := v.CacheStats(); tt.wantHits >= 0 && s.Hits != uint64(tt.wantHits) {
				t.Errorf("CacheStats().Hits = %d, want %d (%+v)", s.Hits, tt.wantHits, s)
			}
		})
	}
	t.Run("entry-ends-at-exp", func(t *testing.T) {
		clk := newClock(t0)
		v := cachedVerifier(t, allKeys(t), clk, 10)
		tok := mint("ES256", "k-ES256", nil)
		v.Verify(context.Background(), tok)
		clk.set(exp) // valid within leeway, but no longer served from the cache
		if _, err := v.Verify(context.Background(), tok); err != nil {
			t.Fatalf("Verify() = %v, want nil", err)
		}
		if s := v.CacheStats(); s.Hits != 0 || s.Misses != 2 {
			t.Errorf("CacheStats() = %+v, want 0 hits and 2 misses", s)
		}
	})
}

func TestTokenCacheKeyRemoval(t *testing.T) {
	es := keyFor(t, "ES256", "k-ES256")
	rs := keyFor(t, "RS256", "k-RS256")
	kidless := keyFor(t, "EdDSA", "")
	tests := []struct {
		name    string
		token   string
		next    *cache.Set
		wantErr error
		wantHit bool
	}{
		{"key-removed", mint("ES256", "k-ES256", nil), cache.NewSet([]*cache.Key{rs, kidless}, nil, t0, time.Time{}), verify.ErrUnknownKid, false},
		{"key-replaced-by-new-parse", mint("ES256", "k-ES256", nil), cache.NewSet([]*cache.Key{keyFor(t, "ES256", "k-ES256"), rs}, nil, t0, time.Time{}), nil, false},
		{"other-key-removed", mint("ES256", "k-ES256", nil), cache.NewSet([]*cache.Key{es}, nil, t0, time.Time{}), nil, true},
		{"set-stale", mint("ES256", "k-ES256", nil), cache.NewSet([]*cache.Key{es, rs, kidless}, nil, t0, t0.Add(-time.Second)), verify.ErrKeysUnavailable, false},
		{"same-keys-new-times", mint("ES256", "k-ES256", nil), cache.NewSet([]*cache.Key{es, rs, kidless}, nil, t0, time.Time{}).WithTimes(t0, time.Time{}), nil, true},
		{"kidless-key-removed", mint("EdDSA", "", nil), cache.NewSet([]*cache.Key{es, rs}, nil, t0, time.Time{}), verify.ErrAlgNotAllowed, false},
		{"kidless-key-kept", mint("EdDSA", "", nil), cache.NewSet([]*cache.Key{kidless}, nil, t0, time.Time{}), nil, true},
		// Another kidless key in its place: the entry's key is not in the
		// set, whatever other kidless keys it holds.
		{"kidless-key-replaced-by-another", mint("EdDSA", "", nil), cache.NewSet([]*cache.Key{es, rs, keyFor(t, "ES256", "")}, nil, t0, time.Time{}), verify.ErrAlgNotAllowed, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			keys := keysOf(es, rs, kidless)
			v := cachedVerifier(t, keys, newClock(t0), 10)
			if _, err := v.Verify(context.Background(), tt.token); err != nil {
				t.Fatalf("Verify() = %v, want nil", err)
			}
			keys.Store(tt.next)
			_, err := v.Verify(context.Background(), tt.token)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Fatalf("Verify() after Store = %v, want %v", err, tt.wantErr)
			}
			if hit := v.CacheStats().Hits == 1; hit != tt.wantHit {
				t.Errorf("cache hit = %v, want %v", hit, tt.wantHit)
			}
		})
	}
	// A 304 of the very set the entry was made under keeps its keys (the
	// hit skips the lookup: cache.Set.SameKeys), but not its staleness.
	for _, tt := range []struct {
		name    string
		until   time.Time
		wantErr error
	}{
		{"not-modified", time.Time{}, nil},
		{"not-modified-stale", t0.Add(-time.Second), verify.ErrKeysUnavailable},
	} {
		t.Run(tt.name, func(t *testing.T) {
			keys := keysOf(es, rs, kidless)
			v := cachedVerifier(t, keys, newClock(t0), 10)
			tok := mint("ES256", "k-ES256", nil)
			if _, err := v.Verify(context.Background(), tok); err != nil {
				t.Fatalf("Verify() = %v, want nil", err)
			}
			keys.Store(keys.Load().WithTimes(t0, tt.until))
			_, err := v.Verify(context.Background(), tok)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Fatalf("Verify() after the 304 = %v, want %v", err, tt.wantErr)
			}
			if hit := v.CacheStats().Hits == 1; hit != (tt.wantErr == nil) {
				t.Errorf("cache hit = %v, want %v", hit, tt.wantErr == nil)
			}
		})
	}
}

// TestTokenCacheKeyRemovedDuringVerify: a refresh that removes the key
// while a token is being verified with it publishes a set the verdict was
// never made under. The entry must not take that set as its own (it would
// then answer every hit under it without a lookup): the next call finds the
// key gone.
func TestTokenCacheKeyRemovedDuringVerify(t *testing.T) {
	es := keyFor(t, "ES256", "k-ES256")
	rs := keyFor(t, "RS256", "k-RS256")
	keys := keysOf(es, rs)
	v := cachedVerifier(t, keys, newClock(t0), 10)
	tok := mint("ES256", "k-ES256", nil)
	verify.SetAttemptHook(v, func(*cache.Key) { keys.Store(cache.NewSet([]*cache.Key{rs}, nil, t0, time.Time{})) })
	if _, err := v.Verify(context.Background(), tok); err != nil {
		t.Fatalf("Verify() = %v, want nil (the key was found before the refresh)", err)
	}
	verify.SetAttemptHook(v, nil)
	if _, err := v.Verify(context.Background(), tok); !errors.Is(err, verify.ErrUnknownKid) {
		t.Fatalf("Verify() after the refresh = %v, want %v", err, verify.ErrUnknownKid)
	}
}

// TestNewTokenCacheBounds: a shared cache needs room for an entry, and no
// negative byte bound.
func TestNewTokenCacheBounds(t *testing.T) {
	for _, tt := range []struct {
		name string
		o    verify.TokenCacheOptions
		ok   bool
	}{
		{"no-entries", verify.TokenCacheOptions{}, false},
		{"negative-entries", verify.TokenCacheOptions{MaxEntries: -1}, false},
		{"negative-bytes", verify.TokenCacheOptions{MaxEntries: 1, MaxBytes: -1}, false},
		{"one-entry", verify.TokenCacheOptions{MaxEntries: 1}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := verify.NewTokenCache(tt.o)
			if (err == nil) != tt.ok || (c != nil) != tt.ok {
				t.Fatalf("NewTokenCache(%+v) = %v, %v, want ok=%v", tt.o, c, err, tt.ok)
			}
		})
	}
}

func TestTokenCacheBounded(t *testing.T) {
	t.Run("entries", func(t *testing.T) {
		v := cachedVerifier(t, allKeys(t), newClock(t0), 10)
		for i := range 50 {
			if _, err := v.Verify(context.Background(), mint("ES256", "k-ES256", map[string]any{"jti": fmt.Sprint(i)})); err != nil {
				t.Fatalf("Verify() = %v, want nil", err)
			}
			if s := v.CacheStats(); s.Entries > 10 {
				t.Fatalf("CacheStats().Entries = %d after %d tokens, want ≤ 10", s.Entries, i+1)
			}
		}
		if s := v.CacheStats(); s.Entries != 10 || s.Evictions != 40 {
			t.Errorf("CacheStats() = %+v, want 10 entries and 40 evictions", s)
		}
	})
	t.Run("bytes", func(t *testing.T) {
		const maxBytes = 8 << 10
		v := newVerifier(t, verify.Options{
			Issuers:    []verify.Issuer{{Issuer: issA, Keys: allKeys(t)}},
			TokenCache: verify.TokenCacheOptions{MaxEntries: 1000, MaxBytes: maxBytes},
		})
		for i := range 100 {
			if _, err := v.Verify(context.Background(), mint("ES256", "k-ES256", map[string]any{"jti": fmt.Sprint(i)})); err != nil {
				t.Fatalf("Verify() = %v, want nil", err)
			}
		}
		s := v.CacheStats()
		if s.Bytes > maxBytes || s.Entries == 0 || s.Entries >= 100 {
			t.Errorf("CacheStats() = %+v, want 0 < entries < 100 within %d bytes", s, maxBytes)
		}
		// A token too large for the whole budget is not cached at all.
		big := mint("ES256", "k-ES256", map[string]any{"pad": strings.Repeat("x", maxBytes)})
		before := v.CacheStats().Entries
		if _, err := v.Verify(context.Background(), big); err != nil {
			t.Fatalf("Verify(big) = %v, want nil", err)
		}
		if after := v.CacheStats(); after.Entries != before || after.Bytes > maxBytes {
			t.Errorf("CacheStats() after a big token = %+v, want it not cached", after)
		}
	})
}

func TestTokenCacheOff(t *testing.T) {
	v := newVerifier(t, verify.Options{Issuers: []verify.Issuer{{Issuer: issA, Keys: allKeys(t)}}})
	tok := mint("ES256", "k-ES256", nil)
	a, _ := v.Verify(context.Background(), tok)
	b, _ := v.Verify(context.Background(), tok)
	if a == b || v.CacheStats() != (verify.CacheStats{}) {
		t.Errorf("with the cache off: same Result %v, stats %+v; want fresh results and zero stats", a == b, v.CacheStats())
	}
}

func TestTokenCacheConcurrent(t *testing.T) {
	clk := newClock(t0)
	keys := allKeys(t)
	v := cachedVerifier(t, keys, clk, 8)
	var toks []string
	for i := range 16 {
		alg := []string{"ES256", "RS256", "EdDSA", "PS256"}[i%4]
		toks = append(toks, mint(alg, kidFor(alg), map[string]any{"jti": fmt.Sprint(i)}))
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				if g == 0 && i%50 == 0 {
					keys.Store(keys.Load().WithTimes(t0, time.Time{}))
					clk.set(t0.Add(time.Duration(i) * time.Second))
				}
				if _, err := v.Verify(context.Background(), toks[(g+i)%len(toks)]); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("Verify() = %v, want nil", err)
	}
	s := v.CacheStats()
	if s.Entries > 8 || s.Hits+s.Misses != 8*200 {
		t.Errorf("CacheStats() = %+v, want ≤ 8 entries and %d lookups", s, 8*200)
	}
}

// TestTokenCacheResultMatchesUncached: the Result a cache hit hands out (a
// compact copy, sharing strings with the configuration) equals the one an
// uncached verify builds, and the miss that filled the cache handed out the
// same cached Result.
func TestTokenCacheResultMatchesUncached(t *testing.T) {
	const tmpl = "https://login.example.com/{tenantid}/v2.0"
	const tid = "9188040d-6c67-4c5b-b112-36a304b66dad"
	withAud := verify.Issuer{Issuer: issA, Audiences: []string{"api://other", aud}}
	noAud := verify.Issuer{Issuer: issA}
	tests := []struct {
		name  string
		is    verify.Issuer
		extra map[string]any
	}{
		{"configured-audience", withAud, nil},
		{"audience-not-configured", noAud, map[string]any{"aud": "api://anything"}},
		{"audience-array", withAud, map[string]any{"aud": []string{"api://x", aud, "api://y"}}},
		{"empty-audience-array", noAud, map[string]any{"aud": []string{}}},
		{"no-audience", noAud, map[string]any{"aud": nil}},
		{"no-sub-no-jti", withAud, map[string]any{"sub": nil}},
		{"escaped-strings", withAud, map[string]any{"sub": "al\u00efce\n", "jti": "j\"1"}},
		{"nbf-and-jti", withAud, map[string]any{"nbf": t0.Unix(), "jti": "id-1"}},
		{"skip-issuer-check", verify.Issuer{SkipIssuerCheck: true}, map[string]any{"iss": issB}},
		{"tenant-template", verify.Issuer{Issuer: tmpl}, map[string]any{"iss": "https://login.example.com/" + tid + "/v2.0", "tid": tid}},
		{"extracted-claims", verify.Issuer{Issuer: issA, ExtractClaims: []string{"sub", "scp", "roles"}},
			map[string]any{"scp": "a b", "roles": []string{"x", "y"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := tt.is
			is.Keys = allKeys(t)
			cached := newVerifier(t, verify.Options{Issuers: []verify.Issuer{is}, TokenCache: verify.TokenCacheOptions{MaxEntries: 10}})
			plain := newVerifier(t, verify.Options{Issuers: []verify.Issuer{is}})
			tok := mint("ES256", kidFor("ES256"), tt.extra)
			want, err := plain.Verify(context.Background(), tok)
			if err != nil {
				t.Fatalf("Verify(uncached) = %v, want nil", err)
			}
			first, err := cached.Verify(context.Background(), tok)
			if err != nil {
				t.Fatalf("Verify(miss) = %v, want nil", err)
			}
			hit, err := cached.Verify(context.Background(), tok)
			if err != nil {
				t.Fatalf("Verify(hit) = %v, want nil", err)
			}
			if s := cached.CacheStats(); s.Hits != 1 || first != hit {
				t.Fatalf("CacheStats() = %+v, same Result %v; want 1 hit and the cached Result twice", s, first == hit)
			}
			if !hit.Cached() || want.Cached() {
				t.Errorf("Cached() = %v for the hit, %v uncached; want true, false", hit.Cached(), want.Cached())
			}
			if got := verify.WithoutCacheMark(hit); !reflect.DeepEqual(got, want) {
				t.Errorf("Verify(hit) = %+v, want %+v", got, want)
			}
		})
	}
}

// TestTokenCacheInsertEvictsAtMost16: an insert into a cache full by bytes
// makes room by at most 16 evictions, then gives up and caches nothing: a
// large token costs a bounded amount of work under the shard locks, and
// does not empty the cache of the small tokens every other caller repeats.
func TestTokenCacheInsertEvictsAtMost16(t *testing.T) {
	const maxBytes = 64 << 10
	v := newVerifier(t, verify.Options{
		Issuers:       []verify.Issuer{{Issuer: issA, Keys: allKeys(t)}},
		MaxTokenBytes: verify.MaxMaxTokenBytes,
		TokenCache:    verify.TokenCacheOptions{MaxEntries: 10000, MaxBytes: maxBytes},
	})
	for i := range 1000 {
		if _, err := v.Verify(context.Background(), mint("ES256", "k-ES256", map[string]any{"jti": fmt.Sprint(i)})); err != nil {
			t.Fatalf("Verify() = %v, want nil", err)
		}
	}
	full := v.CacheStats()
	if full.Entries < 40 || full.Evictions == 0 {
		t.Fatalf("CacheStats() = %+v, want a cache full by bytes", full)
	}
	// Room for the big token takes about 32 entries' worth of bytes.
	per := full.Bytes / int64(full.Entries)
	big := mint("ES256", "k-ES256", map[string]any{"pad": strings.Repeat("x", int(32*per))})
	if _, err := v.Verify(context.Background(), big); err != nil {
		t.Fatalf("Verify(big) = %v, want nil", err)
	}
	after := v.CacheStats()
	if n := after.Evictions - full.Evictions; n > 17 {
		t.Errorf("one insert evicted %d entries, want at most 16 (and the one its entry count may need)", n)
	}
	if after.Entries < full.Entries-17 {
		t.Errorf("entries %d → %d: the insert emptied the cache", full.Entries, after.Entries)
	}
	if after.Bytes > maxBytes {
		t.Errorf("CacheStats().Bytes = %d, over %d", after.Bytes, maxBytes)
	}
}
