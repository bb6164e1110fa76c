package introspect_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/cache"
	"github.com/jwksverify/jwksverify/introspect"
	"github.com/jwksverify/jwksverify/verify"
)

// TestCacheBytesCountWhatAnAnswerHolds: MaxBytes bounds the heap the cache
// holds. A cached active answer keeps, beside its claims, the Result the
// verifier builds from them on first use (its memo: a copy of the claims
// that the subject, jti and audiences are cut from, the audience list, the
// extracted values); the cache's byte count (Stats().Bytes) must be within
// reach of the heap its entries hold, for a typical answer and for an
// answer that fills MaxAnswerBytes with audiences.
func TestCacheBytesCountWhatAnAnswerHolds(t *testing.T) {
	const iss = "https://as.example.com/"
	manyAud := make([]string, 4000)
	for i := range manyAud {
		manyAud[i] = fmt.Sprintf(`"a%d"`, i)
	}
	for _, tc := range []struct {
		name   string
		n      int
		answer func(tok string) string
	}{
		{"typical", 2000, func(tok string) string {
			return fmt.Sprintf(`{"active":true,"iss":%q,"sub":"user-%s","aud":"api","client_id":"web-frontend","scope":"openid profile email orders:read orders:write","jti":"%032s","exp":%d,"iat":%d}`,
				iss, tok, tok, t0.Add(time.Hour).Unix(), t0.Unix())
		}},
		{"many-audiences", 100, func(tok string) string {
			return fmt.Sprintf(`{"active":true,"iss":%q,"sub":"user-%s","aud":[%s],"exp":%d}`,
				iss, tok, strings.Join(manyAud, ","), t0.Add(time.Hour).Unix())
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_ = r.ParseForm()
				io.WriteString(w, tc.answer(r.PostForm.Get("token")))
			}))
			t.Cleanup(srv.Close)
			c := newClient(t, introspect.Options{Issuer: iss, URL: srv.URL, MaxEntries: tc.n + 1, MaxBytes: 1 << 40, MaxTTL: time.Hour})
			v, err := verify.New(verify.Options{
				Issuers: []verify.Issuer{{Issuer: iss, Keys: &cache.Keys{}, Introspector: c}},
				Now:     func() time.Time { return t0 },
			})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			toks := make([]string, tc.n)
			for i := range toks {
				toks[i] = fmt.Sprintf("opaque%08d", i)
			}
			if _, err := v.VerifyAt(ctx, "opaque-warm", t0); err != nil {
				t.Fatal(err)
			}
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			before0 := c.Stats().Bytes
			for _, tok := range toks {
				if _, err := v.VerifyAt(ctx, tok, t0); err != nil {
					t.Fatal(err)
				}
			}
			runtime.GC()
			runtime.ReadMemStats(&after)
			s := c.Stats()
			runtime.KeepAlive(v)
			runtime.KeepAlive(toks)
			if s.Entries != tc.n+1 {
				t.Fatalf("Entries = %d, want %d", s.Entries, tc.n+1)
			}
			measured := float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / float64(tc.n)
			counted := float64(s.Bytes-before0) / float64(tc.n)
			t.Logf("heap per cached answer %.0f bytes; counted %.0f bytes", measured, counted)
			if counted < 0.7*measured {
				t.Errorf("a cached answer holds %.0f bytes of heap, the cache counts %.0f against MaxBytes (%.0f%%)", measured, counted, 100*counted/measured)
			}
		})
	}
}
