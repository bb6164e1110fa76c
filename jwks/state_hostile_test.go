package jwks

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/jwksverify/jwksverify/internal/redact"
	"github.com/jwksverify/jwksverify/internal/testkeys"
)

// A state file is trusted within its bounds only: at start, with the IdP
// down, a corrupt, truncated, oversized, another issuer's, undated,
// past-stale_for, secret-holding or over-max_keys file publishes nothing
// (or, for a secret among good keys, the good keys without it); a file
// dated in the future counts as fetched now, never later.
func TestFetcherHostileStateFile(t *testing.T) {
	const iss = "https://idp.example/"
	good := func(mod func(s *stateFile)) []byte {
		s := stateFile{Issuer: iss, FetchedAt: t0.Add(-10 * time.Minute), JWKS: testkeys.JWKS(keyA, keyB)}
		mod(&s)
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	secret := base64.RawURLEncoding.EncodeToString(testkeys.Secret())
	tests := []struct {
		name     string
		content  func(src string) []byte
		opts     Options
		wantKeys int
		wantAt   time.Time // FetchedAt of the published set, when wantKeys > 0
	}{
		{name: "good", content: func(src string) []byte { return good(func(s *stateFile) { s.Source = src }) }, wantKeys: 2, wantAt: t0.Add(-10 * time.Minute)},
		{name: "corrupt", content: func(string) []byte { return []byte("{not json") }},
		{name: "truncated", content: func(src string) []byte {
			b := good(func(s *stateFile) { s.Source = src })
			return b[:len(b)/2]
		}},
		{name: "oversized", opts: Options{MaxBytes: MinMaxBytes}, content: func(src string) []byte {
			return good(func(s *stateFile) { s.Source = src; s.ETag = strings.Repeat("x", 70<<10) })
		}},
		{name: "other-issuer", content: func(src string) []byte {
			return good(func(s *stateFile) { s.Source, s.Issuer = src, "https://other.example/" })
		}},
		{name: "undated", content: func(src string) []byte { return good(func(s *stateFile) { s.Source, s.FetchedAt = src, time.Time{} }) }},
		{name: "past-stale-for", opts: Options{StaleFor: time.Minute}, content: func(src string) []byte { return good(func(s *stateFile) { s.Source = src }) }},
		{name: "future-counts-as-now", content: func(src string) []byte {
			return good(func(s *stateFile) { s.Source, s.FetchedAt = src, t0.Add(24*time.Hour*365) })
		}, wantKeys: 2, wantAt: t0},
		{name: "secret-refused", content: func(src string) []byte {
			return good(func(s *stateFile) {
				s.Source = src
				s.JWKS = json.RawMessage(`{"keys":[{"kty":"oct","kid":"h","k":"` + secret + `"}]}`)
			})
		}},
		{name: "over-max-keys-refused-whole", opts: Options{MaxKeys: 1}, content: func(src string) []byte { return good(func(s *stateFile) { s.Source = src }) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ks := newKeyServer(t, nil)
				ks.set(func(ks *keyServer) { ks.status = http.StatusServiceUnavailable })
				dir := t.TempDir()
				o := tt.opts
				o.Issuer, o.URL, o.StateDir = iss, ks.URL(), dir
				if err := os.WriteFile(filepath.Join(dir, filepath.Base(statePath(dir, iss, ""))), tt.content(redact.String(ks.URL())), 0o600); err != nil {
					t.Fatal(err)
				}
				clk := newBubbleClock()
				f, _ := startFetcher(t, clk, o)
				set := f.Keys().Load()
				if tt.wantKeys == 0 {
					if set != nil && set.Len() > 0 {
						t.Fatalf("published %d keys from the state file, want none", set.Len())
					}
					return
				}
				if set == nil || set.Len() != tt.wantKeys || !set.FetchedAt.Equal(tt.wantAt) {
					t.Fatalf("published set %v, want %d keys fetched at %v", set, tt.wantKeys, tt.wantAt)
				}
				if !set.UsableUntil.Equal(tt.wantAt.Add(f.opts.StaleFor)) {
					t.Errorf("UsableUntil = %v, want %v + StaleFor", set.UsableUntil, tt.wantAt)
				}
			})
		})
	}
}
