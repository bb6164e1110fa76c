package jwks

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/jwksverify/jwksverify/internal/testkeys"
	"github.com/jwksverify/jwksverify/internal/testlog"
	"github.com/jwksverify/jwksverify/verify"
)

// TestRetireStopsAtOnce: a fetcher a reload replaced (Retire) asks its IdP
// nothing more and logs nothing more — no retry of the outage it was in,
// no "jwks issuer recovered" when the IdP comes back (its successor says
// that) — while the keys it published last still verify for the requests
// that hold it, and an unknown kid gets no refresh: unknown_kid wrapping
// verify.ErrKidNotRefreshed (try later), never a key and never a kid
// judged absent.
func TestRetireStopsAtOnce(t *testing.T) {
	const iss = "https://idp.retire.test/"
	tests := []struct {
		name string
		// inFlight retires the fetcher while an unknown-kid refresh waits
		// on a hanging IdP.
		inFlight bool
	}{
		{name: "between-attempts"},
		{name: "flight-in-progress", inFlight: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ks := newKeyServer(t, testkeys.JWKS(keyA))
				clk := newBubbleClock()
				buf := new(testlog.Buffer)
				f, d := startFetcher(t, clk, Options{Issuer: iss, URL: ks.URL(), MinInterval: 10 * time.Second,
					DefaultTTL: 30 * time.Second, StaleFor: 24 * time.Hour, FetchTimeout: time.Minute, UnknownKidWait: time.Minute,
					Logger: slog.New(slog.NewJSONHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug}))})
				ks.set(func(ks *keyServer) { ks.status = http.StatusServiceUnavailable })
				clk.step(t, d) // stale: the outage a reload meets
				_ = d

				var joined chan error
				if tt.inFlight {
					block := make(chan struct{})
					defer close(block)
					ks.set(func(ks *keyServer) { ks.block = block })
					joined = make(chan error, 1)
					go func() { joined <- f.RefreshUnknownKid(context.Background(), "pending") }()
					synctest.Wait() // its flight hangs on the IdP
				}
				hits, lines := ks.jwksHits.Load(), len(testlog.Lines(t, buf))
				f.Retire()
				if tt.inFlight {
					if err := <-joined; err == nil {
						t.Errorf("the refresh cut short by Retire: nil, want its error")
					}
					ks.set(func(ks *keyServer) { ks.block = nil })
				}

				ks.set(func(ks *keyServer) { ks.status = 0 }) // the IdP is back
				time.Sleep(time.Hour)                         // many refresh intervals
				synctest.Wait()
				if got := ks.jwksHits.Load(); got != hits {
					t.Errorf("after Retire the IdP was asked %d more times, want 0", got-hits)
				}

				// The last published keys still verify, in the Keyfunc and the
				// verifier it backs.
				claims := map[string]any{"iss": iss, "exp": time.Now().Add(time.Hour).Unix()}
				good := testkeys.Mint("RS256", testkeys.Private(testkeys.RSA2048A), map[string]any{"kid": "a"}, claims)
				if _, err := jwt.Parse(good, f.Keyfunc().KeyfuncCtx(context.Background()), jwt.WithValidMethods([]string{"RS256"})); err != nil {
					t.Errorf("Keyfunc(known kid) after Retire = %v, want the last published key", err)
				}
				v, err := verify.New(verify.Options{Issuers: []verify.Issuer{{Issuer: iss, Keys: f.Keys(), Refresher: f, Algorithms: []string{"RS256"}}}})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := v.Verify(context.Background(), good); err != nil {
					t.Errorf("Verify(known kid) after Retire = %v, want valid", err)
				}

				// An unknown kid: no fetch, "not refreshed".
				other := testkeys.Mint("RS256", testkeys.Private(testkeys.RSA2048A), map[string]any{"kid": "rotated"}, claims)
				if err := f.RefreshUnknownKid(context.Background(), "rotated"); !errors.Is(err, ErrRetired) || errors.Is(err, verify.ErrKidAbsent) {
					t.Errorf("RefreshUnknownKid after Retire = %v, want %v (not %v)", err, ErrRetired, verify.ErrKidAbsent)
				}
				_, err = jwt.Parse(other, f.Keyfunc().KeyfuncCtx(context.Background()), jwt.WithValidMethods([]string{"RS256"}))
				if !errors.Is(err, verify.ErrUnknownKid) || !errors.Is(err, verify.ErrKidNotRefreshed) {
					t.Errorf("Keyfunc(unknown kid) after Retire = %v, want unknown_kid wrapping ErrKidNotRefreshed", err)
				}
				_, err = v.Verify(context.Background(), other)
				if !errors.Is(err, verify.ErrUnknownKid) || !errors.Is(err, verify.ErrKidNotRefreshed) {
					t.Errorf("Verify(unknown kid) after Retire = %v, want unknown_kid wrapping ErrKidNotRefreshed", err)
				}
				synctest.Wait()
				if got := ks.jwksHits.Load(); got != hits {
					t.Errorf("an unknown kid after Retire asked the IdP %d times, want 0", got-hits)
				}

				if after := testlog.Lines(t, buf)[lines:]; len(after) > 0 {
					t.Errorf("%d lines logged after Retire, the first %v", len(after), after[0])
				}
				if err := f.Close(); err != nil {
					t.Errorf("Close after Retire = %v", err)
				}
			})
		})
	}
}
