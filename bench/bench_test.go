package bench

import (
	"flag"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/bench/internal/fixture"
	"github.com/jwksverify/jwksverify/bench/internal/impls"
	"github.com/jwksverify/jwksverify/verify"
)

// cacheEntries sizes the verified-token cache of the cached implementation.
const cacheEntries = 1024

type impl struct {
	name   string
	verify VerifyFunc
}

// run benchmarks f on token after checking, outside the timer, that it
// accepts the token: a benchmark of a failing path measures nothing.
func run(b *testing.B, f VerifyFunc, token string) {
	b.Helper()
	if err := f(token); err != nil {
		b.Fatalf("verify() = %v, want nil", err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if err := f(token); err != nil {
			b.Fatalf("verify() = %v, want nil", err)
		}
	}
}

// issuer builds one issuer whose key set holds c's key and decoys.
func issuer(name string, c fixture.Case, decoys []fixture.Decoy) Issuer {
	return Issuer{Name: name, JWKS: fixture.JWKS(c, decoys), Keys: fixture.Set(c, decoys)}
}

// peers returns every implementation of the comparison for c over is, with
// the key given directly (direct) or picked by kid from is's JWKS.
func peers(b testing.TB, c fixture.Case, is Issuer, token string, direct bool) []impl {
	b.Helper()
	must := func(f VerifyFunc, err error) VerifyFunc {
		b.Helper()
		if err != nil {
			b.Fatal(err)
		}
		return f
	}
	uncached, _, err := Jwksverify(c.Alg, []Issuer{is}, verify.TokenCacheOptions{})
	if err != nil {
		b.Fatalf("verify.New() = %v", err)
	}
	cached, _, err := Jwksverify(c.Alg, []Issuer{is}, verify.TokenCacheOptions{MaxEntries: cacheEntries})
	if err != nil {
		b.Fatalf("verify.New() = %v", err)
	}
	out := []impl{{impls.Jwksverify, uncached}, {impls.Cached, cached}}
	if direct {
		out = append(out,
			impl{impls.Baseline, GolangJWTDirect(c.Alg, c.Public)},
			impl{impls.JWX, must(JWXDirect(c.Alg, c.Public))},
			impl{impls.GoJOSE, GoJOSE(c.Alg, is.Name, c.Public)},
		)
	} else {
		set, err := GoJOSEKeySet(is)
		if err != nil {
			b.Fatal(err)
		}
		out = append(out,
			impl{impls.Baseline, must(GolangJWTKeyfunc(c.Alg, is))},
			impl{impls.JWX, must(JWXKeySet(is))},
			impl{impls.GoJOSE, GoJOSE(c.Alg, is.Name, set)},
		)
	}
	return append(out, impl{impls.Floor, must(Floor(c.Alg, c.Public, token))})
}

// BenchmarkVerify verifies the same token through every implementation, for
// each algorithm, with the key given directly (for jwksverify: a 1-key set)
// and picked by kid from a 3-key JWKS.
func BenchmarkVerify(b *testing.B) {
	now := time.Now()
	for _, c := range fixture.Cases() {
		token := fixture.Mint(c, fixture.Claims(now, fixture.Issuer, 1))
		for _, keys := range []struct {
			name   string
			decoys []fixture.Decoy
		}{{"direct", nil}, {"jwks3", fixture.Decoys()}} {
			is := issuer(fixture.Issuer, c, keys.decoys)
			for _, p := range peers(b, c, is, token, keys.decoys == nil) {
				b.Run(fmt.Sprintf("alg=%s/impl=%s/keys=%s", c.Name, p.name, keys.name), func(b *testing.B) {
					run(b, p.verify, token)
				})
			}
		}
	}
}

// BenchmarkOverFloor measures jwksverify's uncached cost over the crypto
// floor as paired differences: each iteration times one jwksverify verify
// and one floor verify of the same token back to back (alternating which
// goes first) and the median difference is reported as ns-over-floor (and
// the difference of the two best times as ns-over-floor-best). The
// pairs see the same machine load, so the median is robust where the
// difference of two separately measured medians drowns in noise (1% of an
// ES512 verify is 30 µs, six times the target). ns/op is the pair's time.
func BenchmarkOverFloor(b *testing.B) {
	// With -benchtime 1x (CI's smoke run) one pair is enough.
	minPairs := 200
	if testing.Short() || benchtimeIsCount() {
		minPairs = 1
	}
	now := time.Now()
	for _, c := range fixture.Cases() {
		token := fixture.Mint(c, fixture.Claims(now, fixture.Issuer, 1))
		is := issuer(fixture.Issuer, c, fixture.Decoys())
		jv, _, err := Jwksverify(c.Alg, []Issuer{is}, verify.TokenCacheOptions{})
		if err != nil {
			b.Fatalf("verify.New() = %v", err)
		}
		floor, err := Floor(c.Alg, c.Public, token)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("alg=%s/keys=jwks3", c.Name), func(b *testing.B) {
			for _, f := range []VerifyFunc{jv, floor} {
				if err := f(token); err != nil {
					b.Fatalf("verify() = %v, want nil", err)
				}
			}
			var diffs []float64
			minJV, minFloor := time.Duration(math.MaxInt64), time.Duration(math.MaxInt64)
			first, second, jvFirst := jv, floor, true
			pair := func() {
				t0 := time.Now()
				e1 := first(token)
				t1 := time.Now()
				e2 := second(token)
				t2 := time.Now()
				if e1 != nil || e2 != nil {
					b.Fatalf("verify() = %v, %v, want nil", e1, e2)
				}
				dj, df := t1.Sub(t0), t2.Sub(t1)
				if !jvFirst {
					dj, df = df, dj
				}
				minJV, minFloor = min(minJV, dj), min(minFloor, df)
				diffs = append(diffs, float64(dj-df))
				first, second, jvFirst = second, first, !jvFirst
			}
			for b.Loop() {
				pair()
			}
			// Slow algorithms (ES512: 3 ms a pair) get too few pairs in a
			// short -benchtime; top up outside the timed loop.
			for len(diffs) < minPairs {
				pair()
			}
			slices.Sort(diffs)
			b.ReportMetric(diffs[len(diffs)/2], "ns-over-floor")
			// The best times of each: the machine's noise only ever adds.
			b.ReportMetric(float64(minJV-minFloor), "ns-over-floor-best")
		})
	}
}

// scaleCase is the algorithm of the scale benchmarks: RS256 with a 2048-bit
// key, what most IdPs sign with.
const scaleCase = "RS256-2048"

// BenchmarkScaleKeys picks the key by kid from JWKS of 1, 3 and 1 000 keys
// (the signing key in the middle; the filler keys are P-256).
func BenchmarkScaleKeys(b *testing.B) {
	c, err := fixture.CaseByName(scaleCase)
	if err != nil {
		b.Fatal(err)
	}
	token := fixture.Mint(c, fixture.Claims(time.Now(), fixture.Issuer, 1))
	for _, n := range []int{1, 3, 1000} {
		var decoys []fixture.Decoy
		switch n {
		case 3:
			decoys = fixture.Decoys()
		case 1000:
			decoys = fixture.GeneratedDecoys(n - 1)
		}
		is := issuer(fixture.Issuer, c, decoys)
		for _, p := range peers(b, c, is, token, false) {
			if p.name == impls.Floor {
				continue
			}
			b.Run(fmt.Sprintf("keys=%d/impl=%s", n, p.name), func(b *testing.B) {
				run(b, p.verify, token)
			})
		}
	}
}

// BenchmarkScaleIssuers routes a token among 1, 10 and 100 configured
// issuers (each with a 3-key set; the token's issuer in the middle).
func BenchmarkScaleIssuers(b *testing.B) {
	c, err := fixture.CaseByName(scaleCase)
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range []int{1, 10, 100} {
		issuers := make([]Issuer, n)
		for i := range issuers {
			issuers[i] = issuer(fmt.Sprintf("https://idp-%03d.example.com/", i), c, fixture.Decoys())
		}
		token := fixture.Mint(c, fixture.Claims(time.Now(), issuers[n/2].Name, 1))
		uncached, _, err := Jwksverify(c.Alg, issuers, verify.TokenCacheOptions{})
		if err != nil {
			b.Fatalf("verify.New() = %v", err)
		}
		cached, _, err := Jwksverify(c.Alg, issuers, verify.TokenCacheOptions{MaxEntries: cacheEntries})
		if err != nil {
			b.Fatalf("verify.New() = %v", err)
		}
		baseline, err := GolangJWTKeyfuncIssuers(c.Alg, issuers)
		if err != nil {
			b.Fatal(err)
		}
		for _, p := range []impl{{impls.Jwksverify, uncached}, {impls.Cached, cached}, {impls.Baseline, baseline}} {
			b.Run(fmt.Sprintf("issuers=%d/impl=%s", n, p.name), func(b *testing.B) {
				run(b, p.verify, token)
			})
		}
	}
}

// BenchmarkScaleToken verifies a typical (~250-byte payload) and a 10 KB
// token (a long groups claim), with the key picked from a 3-key JWKS.
func BenchmarkScaleToken(b *testing.B) {
	c, err := fixture.CaseByName(scaleCase)
	if err != nil {
		b.Fatal(err)
	}
	is := issuer(fixture.Issuer, c, fixture.Decoys())
	for _, size := range []struct {
		name  string
		bytes int
	}{{"typical", 0}, {"10KB", 7400}} {
		claims := fixture.Claims(time.Now(), fixture.Issuer, 1)
		if size.bytes > 0 {
			// A 7.4 KB payload is ~9.9 KB of base64url, plus header and signature.
			claims = fixture.Pad(claims, size.bytes)
		}
		token := fixture.Mint(c, claims)
		for _, p := range peers(b, c, is, token, false) {
			b.Run(fmt.Sprintf("token=%s/impl=%s", size.name, p.name), func(b *testing.B) {
				run(b, p.verify, token)
				b.ReportMetric(float64(len(token)), "token-bytes")
			})
		}
	}
}

// BenchmarkTokenCache fills the verified-token cache with 10 000 distinct
// ES256 tokens from 10 issuers and reports the heap each entry holds
// (B/entry: runtime.MemStats around the fill, after a GC each time).
//
// budget=ample gives the cache bytes enough for every entry and then
// measures hits cycling over all the cached tokens. budget=default leaves
// MaxBytes at its default (what a server's max_entries alone gives) and only
// reports how many entries the cache kept (entries-held); its ns/op is set
// to 0 as it times nothing.
func BenchmarkTokenCache(b *testing.B) {
	const issuersN, n = 10, 10000
	c, err := fixture.CaseByName("ES256")
	if err != nil {
		b.Fatal(err)
	}
	issuers := make([]Issuer, issuersN)
	for i := range issuers {
		issuers[i] = issuer(fmt.Sprintf("https://idp-%03d.example.com/", i), c, fixture.Decoys())
	}
	now := time.Now()
	tokens := make([]string, n)
	for i := range tokens {
		tokens[i] = fixture.Mint(c, fixture.Claims(now, issuers[i%issuersN].Name, i))
	}
	for _, budget := range []struct {
		name     string
		maxBytes int64
	}{{"ample", n * 8 << 10}, {"default", 0}} {
		b.Run(fmt.Sprintf("entries=%d/budget=%s/impl=%s", n, budget.name, impls.Cached), func(b *testing.B) {
			f, v, err := Jwksverify(c.Alg, issuers, verify.TokenCacheOptions{MaxEntries: n, MaxBytes: budget.maxBytes})
			if err != nil {
				b.Fatalf("verify.New() = %v", err)
			}
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			for _, t := range tokens {
				// A copy, as a server hands the cache a token read from a request.
				if err := f(strings.Clone(t)); err != nil {
					b.Fatalf("verify() = %v, want nil", err)
				}
			}
			runtime.GC()
			runtime.ReadMemStats(&after)
			held := v.CacheStats().Entries
			if held == 0 {
				b.Fatalf("CacheStats().Entries = 0, want > 0")
			}
			// Metrics are reported after the loop: b.Loop's first call resets them.
			report := func() {
				b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/float64(held), "B/entry")
				b.ReportMetric(float64(held), "entries-held")
				b.ReportMetric(float64(len(tokens[0])), "token-bytes")
			}
			if budget.maxBytes == 0 {
				for b.Loop() {
				}
				report()
				b.ReportMetric(0, "ns/op")
				return
			}
			if held != n {
				b.Fatalf("CacheStats().Entries = %d, want %d", held, n)
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if err := f(tokens[i]); err != nil {
					b.Fatalf("verify() = %v, want nil", err)
				}
				if i++; i == n {
					i = 0
				}
			}
			report()
		})
	}
}

// benchtimeIsCount reports whether -test.benchtime is an iteration count
// ("1x"), as in CI's compile-and-run smoke of the benchmarks.
func benchtimeIsCount() bool {
	f := flag.Lookup("test.benchtime")
	return f != nil && strings.HasSuffix(f.Value.String(), "x")
}
