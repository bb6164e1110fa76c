package jwks

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/jwksverify/jwksverify/cache"
	"github.com/jwksverify/jwksverify/internal/testkeys"
)

// staticKeys returns an HMAC secret with kid "h" and an RSA key with kid "a"
// (the kid of keyA, which the test sources publish).
func staticKeys(t *testing.T) (secret, rsaKey *cache.Key) {
	t.Helper()
	secret, err := cache.NewKey(testkeys.Secret(), cache.KeyMeta{Kid: "h", Local: true, Use: "sig"})
	if err != nil {
		t.Fatal(err)
	}
	rsaKey, err = cache.NewKey(testkeys.Public(testkeys.RSA2048B), cache.KeyMeta{Kid: "a", Local: true})
	if err != nil {
		t.Fatal(err)
	}
	return secret, rsaKey
}

func TestStaticKeysOptions(t *testing.T) {
	secret, rsaKey := staticKeys(t)
	kidless1, err := cache.NewKey(testkeys.Public(testkeys.EC256A), cache.KeyMeta{})
	if err != nil {
		t.Fatal(err)
	}
	kidless2, err := cache.NewKey(testkeys.Public(testkeys.EC256B), cache.KeyMeta{})
	if err != nil {
		t.Fatal(err)
	}
	other, err := cache.NewKey(testkeys.Public(testkeys.RSA2048C), cache.KeyMeta{Kid: "a"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		opts    Options
		wantErr error
	}{
		{name: "static-alone", opts: Options{StaticKeys: []*cache.Key{secret}}},
		{name: "static-with-url", opts: Options{URL: "https://idp.example/jwks", StaticKeys: []*cache.Key{secret, rsaKey}}},
		{name: "static-with-file", opts: Options{File: "keys.json", StaticKeys: []*cache.Key{secret}}},
		{name: "two-kidless", opts: Options{StaticKeys: []*cache.Key{kidless1, kidless2}}},
		{name: "empty-static-no-source", opts: Options{StaticKeys: []*cache.Key{}}, wantErr: ErrInvalidOptions},
		{name: "nil-key", opts: Options{StaticKeys: []*cache.Key{secret, nil}}, wantErr: ErrInvalidOptions},
		{name: "duplicate-kid", opts: Options{StaticKeys: []*cache.Key{rsaKey, other}}, wantErr: ErrInvalidOptions},
		{name: "static-with-two-sources", opts: Options{URL: "https://idp.example/jwks", File: "k.json", StaticKeys: []*cache.Key{secret}}, wantErr: ErrInvalidOptions},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := tt.opts.withDefaults(); !errors.Is(err, tt.wantErr) {
				t.Fatalf("withDefaults() = %v, want %v", err, tt.wantErr)
			}
		})
	}
}

// With StaticKeys alone the fetcher publishes them at once, never stale, is
// ready, arms no timer, starts no goroutine and refuses refreshes at once.
func TestFetcherStaticOnly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		secret, rsaKey := staticKeys(t)
		ignore := goleak.IgnoreCurrent()
		clk := newBubbleClock()
		f, err := New(testOptions(clk, Options{Issuer: "local", StaticKeys: []*cache.Key{secret, rsaKey}}))
		if err != nil {
			t.Fatalf("New() = %v", err)
		}
		defer f.Close()
		goleak.VerifyNone(t, ignore) // no loop, no poller

		done, cancel := context.WithCancel(context.Background())
		cancel()
		if err := f.Ready(done); err != nil {
			t.Errorf("Ready() = %v, want nil at once", err)
		}
		set := f.Keys().Load()
		if h, _ := set.Lookup("h"); h != secret || set.Len() != 2 || !set.UsableUntil.IsZero() || !set.FetchedAt.Equal(t0) {
			t.Errorf("published set = %+v, want both static keys, never stale, fetched at %v", set, t0)
		}
		if a, _ := set.Lookup("a"); a != rsaKey {
			t.Errorf("Lookup(a) = %p, want the static key %p", a, rsaKey)
		}
		st := f.Keys().Status()
		if st.Source != "static" || !st.LastSuccess.Equal(t0) || st.LastError != "" || !st.NextRefresh.IsZero() {
			t.Errorf("Status() = %+v, want source static, a success at start, no refresh", st)
		}
		if err := f.RefreshUnknownKid(context.Background(), "x"); !errors.Is(err, ErrSuppressed) {
			t.Errorf("RefreshUnknownKid(x) = %v, want %v", err, ErrSuppressed)
		}
		if s := f.Stats(); s != (cache.FetchStats{}) {
			t.Errorf("Stats() = %+v, want zero: nothing fetched", s)
		}
		// No timer is armed: no goroutine was started to arm one (goleak
		// above), and NextRefresh is zero.
		if err := f.Close(); err != nil {
			t.Errorf("Close() = %v", err)
		}
		if err := f.RefreshUnknownKid(context.Background(), "x"); !errors.Is(err, ErrClosed) {
			t.Errorf("RefreshUnknownKid() after Close = %v, want %v", err, ErrClosed)
		}

		got, err := Fetch(context.Background(), Options{StaticKeys: []*cache.Key{secret}})
		if err != nil || got.Len() != 1 || !got.UsableUntil.IsZero() {
			t.Errorf("Fetch(static only) = %+v, %v; want the secret, never stale", got, err)
		}
	})
}

// StaticKeys are merged into every set of a source, first; a source's key
// whose kid a static key holds is skipped and reported; a source set whose
// only key is such a one is no usable set (the last good one stays).
func TestFetcherStaticKeysMerged(t *testing.T) {
	secret, rsaKey := staticKeys(t)
	static := []*cache.Key{secret, rsaKey}
	check := func(t *testing.T, set *cache.Set) {
		t.Helper()
		if h, _ := set.Lookup("h"); h != secret {
			t.Errorf("Lookup(h) = %p, want the static secret", h)
		}
		if a, _ := set.Lookup("a"); a != rsaKey {
			t.Errorf("Lookup(a) = %p, want the static key, not the source's", a)
		}
		if b, ok := set.Lookup("b"); !ok || b.Kty != "EC" {
			t.Errorf("Lookup(b) = %v, %v; want the source's EC key", b, ok)
		}
		if keys := set.Keys(); len(keys) != 3 || keys[0] != secret || keys[1] != rsaKey {
			t.Errorf("Keys() = %v, want the static keys first, then b", keys)
		}
		want := cache.Skipped{Index: 0, Kid: "a", Kty: "RSA", Reason: "kid held by a configured static key"}
		if sk := set.Skipped(); len(sk) != 1 || sk[0] != want {
			t.Errorf("Skipped() = %+v, want [%+v]", sk, want)
		}
	}

	t.Run("remote", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ks := newKeyServer(t, testkeys.JWKS(keyA, keyB))
			clk := newBubbleClock()
			f, d := startFetcher(t, clk, Options{URL: ks.URL(), StaticKeys: static})
			set := f.Keys().Load()
			check(t, set)
			if !set.UsableUntil.Equal(t0.Add(DefaultStaleFor)) {
				t.Errorf("UsableUntil = %v, want the source's staleness", set.UsableUntil)
			}
			if s := f.Stats(); s.KeysSkipped != 1 {
				t.Errorf("Stats().KeysSkipped = %d, want 1", s.KeysSkipped)
			}

			ks.setBody(testkeys.JWKS(keyA)) // only a key the static one shadows
			clk.step(t, d)
			if st := f.Keys().Status(); f.Keys().Load() != set || !strings.Contains(st.LastError, ErrNoKeys.Error()) {
				t.Errorf("after a set of shadowed keys: Status() = %+v, want %v and the last good set kept", st, ErrNoKeys)
			}
		})
	})

	t.Run("file", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "keys.json")
			if err := os.WriteFile(file, testkeys.JWKS(keyA, keyB), 0o600); err != nil {
				t.Fatal(err)
			}
			f, _ := startFetcher(t, newBubbleClock(), Options{File: file, StaticKeys: static})
			check(t, f.Keys().Load())
			if !f.Keys().Load().UsableUntil.IsZero() {
				t.Errorf("a file set with static keys goes stale")
			}
		})
	})

	t.Run("fetch", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ks := newKeyServer(t, testkeys.JWKS(keyA, keyB))
			set, err := Fetch(context.Background(), testOptions(newBubbleClock(), Options{URL: ks.URL(), StaticKeys: static}))
			if err != nil {
				t.Fatalf("Fetch() = %v", err)
			}
			check(t, set)
		})
	})

	t.Run("state-dir", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ks := newKeyServer(t, testkeys.JWKS(keyA, keyB))
			dir := t.TempDir()
			o := Options{Issuer: "https://idp.example/", URL: ks.URL(), StateDir: dir, StaticKeys: static}
			f, _ := startFetcher(t, newBubbleClock(), o)
			f.Close()
			ks.set(func(ks *keyServer) { ks.status = http.StatusServiceUnavailable })
			f, _ = startFetcher(t, newBubbleClock(), o)
			check(t, f.Keys().Load()) // loaded from the state file, merged again
		})
	})
}

// With a source that is down at start, the static keys alone verify at
// once; Ready waits for the source's first set, which is then merged.
func TestFetcherStaticKeysSourceDown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		secret, _ := staticKeys(t)
		ks := newKeyServer(t, testkeys.JWKS(keyA))
		ks.set(func(ks *keyServer) { ks.status = http.StatusBadGateway })
		clk := newBubbleClock()
		f, d := startFetcher(t, clk, Options{URL: ks.URL(), StaticKeys: []*cache.Key{secret}})

		set := f.Keys().Load()
		if h, _ := set.Lookup("h"); h != secret || set.Len() != 1 || !set.Usable(clk.Now().Add(1000*time.Hour)) {
			t.Errorf("before the first fetch: set = %+v, want the secret alone, usable", set)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
		defer cancel()
		if err := f.Ready(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Ready() with the source down = %v, want %v", err, context.DeadlineExceeded)
		}
		if st := f.Keys().Status(); st.ConsecutiveFailures != 1 || !strings.Contains(st.LastError, "502") {
			t.Errorf("Status() = %+v, want the failed fetch", st)
		}

		ks.set(func(ks *keyServer) { ks.status = 0 })
		clk.step(t, d)
		if err := f.Ready(context.Background()); err != nil {
			t.Errorf("Ready() after the source answered = %v", err)
		}
		set = f.Keys().Load()
		if _, ok := set.Lookup("a"); !ok || set.Len() != 2 || set.UsableUntil.IsZero() {
			t.Errorf("after the first fetch: set = %+v, want the secret and a, with the source's staleness", set)
		}
	})
}
