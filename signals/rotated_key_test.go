package signals_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/internal/testkeys"
	"github.com/jwksverify/jwksverify/jwks"
	"github.com/jwksverify/jwksverify/revoke"
	"github.com/jwksverify/jwksverify/signals"
	"github.com/jwksverify/jwksverify/verify"
)

// TestSignalOfAKeyNotYetFetched: an IdP rotates its key and signs a logout
// token or a SET with the new one while the unknown-kid refresh budget is
// spent (a junk token's kid spent it). The kid was never looked for in a
// fresh copy of the set, so the signal is answered unavailable (503, the
// sender tries again; a poller leaves it for the next poll), not
// invalid_key (400: the sender never sends it again, and the session's
// tokens would pass until they expire). A kid looked for in a fresh copy
// and absent is still invalid_key.
func TestSignalOfAKeyNotYetFetched(t *testing.T) {
	var doc atomic.Pointer[[]byte]
	publish := func(keys ...testkeys.JWK) {
		b := testkeys.JWKS(keys...)
		doc.Store(&b)
	}
	oldKey := testkeys.JWK{Key: testkeys.Private(testkeys.RSA2048A), Kid: "rsa-a"}
	newKey := testkeys.JWK{Key: testkeys.Private(testkeys.RSA2048B), Kid: "rsa-new"}
	publish(oldKey)
	idp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(*doc.Load())
	}))
	t.Cleanup(idp.Close)
	f, err := jwks.New(jwks.Options{Issuer: issuerA, URL: idp.URL, UnknownKidInterval: time.Second, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	if err := f.Ready(t.Context()); err != nil {
		t.Fatal(err)
	}
	v, err := verify.New(verify.Options{Issuers: []verify.Issuer{{Issuer: issuerA, Keys: f.Keys(), Refresher: f, Audiences: []string{"api://orders"}}}})
	if err != nil {
		t.Fatal(err)
	}
	r, store := receiverOver(t, v)
	now := time.Now()
	at := map[string]any{"iat": now.Add(-time.Second).Unix(), "exp": now.Add(2 * time.Minute).Unix()}
	withNew := func(hdr map[string]any, claims map[string]any) string {
		h := map[string]any{"kid": "rsa-new"}
		for k, v := range hdr {
			h[k] = v
		}
		return testkeys.Mint("RS256", newKey.Key, h, claims)
	}

	// A logout token naming a kid never published is refused: the set
	// was fetched for it, and the kid is not there. That fetch spends the
	// unknown-kid budget (any junk token's kid would), before the IdP
	// publishes its new key.
	junk := testkeys.Mint("RS256", oldKey.Key, map[string]any{"kid": "never-published"}, logoutClaims(apply(at, map[string]any{"jti": "logout-junk"})))
	if _, err := r.Logout(context.Background(), junk, now); !errors.Is(err, signals.ErrInvalid) {
		t.Fatalf("Logout() of a kid absent from a fresh set = %v, want a refusal", err)
	}
	publish(oldKey, newKey)

	logout := withNew(nil, logoutClaims(at))
	set := withNew(map[string]any{"typ": "secevent+jwt"}, setClaims(map[string]any{signals.EventCredentialChange: map[string]any{}},
		map[string]any{"sub_id": issSubA, "iat": at["iat"]}))
	t.Run("logout", func(t *testing.T) {
		_, err := r.Logout(context.Background(), logout, now)
		if !errors.Is(err, signals.ErrUnavailable) || errors.Is(err, signals.ErrInvalid) {
			t.Fatalf("Logout() = %v, want ErrUnavailable (not a refusal)", err)
		}
	})
	t.Run("set", func(t *testing.T) {
		_, _, err := r.Receive(context.Background(), issuerA, set, revoke.SourceSSFPush, now)
		if !errors.Is(err, signals.ErrUnavailable) || signals.Code(err) != "" {
			t.Fatalf("Receive() = %v (code %q), want ErrUnavailable", err, signals.Code(err))
		}
	})
	if n := len(store.stored()); n != 0 {
		t.Fatalf("stored %d entries before the key was fetched, want 0", n)
	}

	// Once the budget is back, the sender's retry of the very same tokens
	// fetches the key and is taken: their jtis were not spent.
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := r.Logout(context.Background(), logout, time.Now())
		if err == nil {
			break
		}
		if !errors.Is(err, signals.ErrUnavailable) || time.Now().After(deadline) {
			t.Fatalf("retried Logout() = %v, want nil once the unknown-kid interval passed", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if _, _, err := r.Receive(context.Background(), issuerA, set, revoke.SourceSSFPush, time.Now()); err != nil {
		t.Fatalf("retried Receive() = %v, want nil", err)
	}
	if n := len(store.stored()); n != 2 {
		t.Fatalf("stored %d entries after the retries, want 2", n)
	}
}
