package signals_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/jwksverify/jwksverify/cache"
	"github.com/jwksverify/jwksverify/internal/testkeys"
	"github.com/jwksverify/jwksverify/revoke"
	"github.com/jwksverify/jwksverify/signals"
	"github.com/jwksverify/jwksverify/verify"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestLogoutEffect(t *testing.T) {
	tests := []struct {
		name   string
		mode   signals.RevokeMode
		hdr    map[string]any
		over   map[string]any
		want   revoke.Entry
		issuer string
	}{
		{name: "session-sid", mode: signals.RevokeSession, hdr: map[string]any{"typ": "logout+jwt"},
			want: revoke.Entry{Kind: revoke.KindSID, Value: "session-1"}},
		{name: "typ-absent", mode: signals.RevokeSession, hdr: map[string]any{"typ": nil},
			want: revoke.Entry{Kind: revoke.KindSID, Value: "session-1"}},
		{name: "typ-jwt-as-hydra-sends", mode: signals.RevokeSession, hdr: map[string]any{"typ": "JWT"},
			want: revoke.Entry{Kind: revoke.KindSID, Value: "session-1"}},
		{name: "typ-application-logout-jwt", mode: signals.RevokeSession, hdr: map[string]any{"typ": "application/logout+JWT"},
			want: revoke.Entry{Kind: revoke.KindSID, Value: "session-1"}},
		{name: "session-without-sid-falls-back-to-sub", mode: signals.RevokeSession, over: map[string]any{"sid": nil},
			want: revoke.Entry{Kind: revoke.KindSub, Value: "alice", IssuedBefore: epoch.Add(-time.Second)}},
		{name: "zero-mode-is-session", mode: "",
			want: revoke.Entry{Kind: revoke.KindSID, Value: "session-1"}},
		{name: "subject-mode", mode: signals.RevokeSubject,
			want: revoke.Entry{Kind: revoke.KindSub, Value: "alice", IssuedBefore: epoch.Add(-time.Second)}},
		{name: "subject-mode-sid-only", mode: signals.RevokeSubject, over: map[string]any{"sub": nil},
			want: revoke.Entry{Kind: revoke.KindSID, Value: "session-1"}},
		{name: "no-exp", mode: signals.RevokeSession, over: map[string]any{"exp": nil},
			want: revoke.Entry{Kind: revoke.KindSID, Value: "session-1"}},
		{name: "aud-array", mode: signals.RevokeSession, over: map[string]any{"aud": []string{"other", clientID}},
			want: revoke.Entry{Kind: revoke.KindSID, Value: "session-1"}},
		{name: "iat-ahead-within-leeway", mode: signals.RevokeSession, over: map[string]any{"iat": epoch.Add(20 * time.Second).Unix()},
			want: revoke.Entry{Kind: revoke.KindSID, Value: "session-1"}},
		{name: "nbf-ahead-within-leeway", mode: signals.RevokeSession, over: map[string]any{"nbf": epoch.Add(20 * time.Second).Unix()},
			want: revoke.Entry{Kind: revoke.KindSID, Value: "session-1"}},
		{name: "exp-passed-within-leeway", mode: signals.RevokeSession, over: map[string]any{"exp": epoch.Add(-verify.DefaultLeeway + time.Second).Unix()},
			want: revoke.Entry{Kind: revoke.KindSID, Value: "session-1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, tt.mode)
			got, err := e.r.Logout(context.Background(), mintA(tt.hdr, logoutClaims(tt.over)), epoch)
			if err != nil {
				t.Fatalf("Logout() = %v, want nil", err)
			}
			want := tt.want
			want.Issuer, want.Source = issuerA, revoke.SourceBackchannelLogout
			stored := e.store.stored()
			if len(got) != 1 || len(stored) != 1 {
				t.Fatalf("Logout() returned %d entries and stored %d, want 1 and 1", len(got), len(stored))
			}
			s := stored[0]
			s.ID, s.CreatedAt, s.ExpiresAt = "", time.Time{}, time.Time{}
			if s != want {
				t.Errorf("stored %+v, want %+v", s, want)
			}
			if got[0].ID == "" {
				t.Error("the returned entry has no ID: it is not the entry as stored")
			}
			if n := e.metrics.get(issuerA + "|backchannel-logout|applied"); n != 1 {
				t.Errorf("applied count = %d, want 1", n)
			}
		})
	}
}

func TestLogoutRules(t *testing.T) {
	rsaB := testkeys.Private(testkeys.RSA2048B)
	tests := []struct {
		name  string
		token func(t *testing.T) string
	}{
		{"bad-signature", func(*testing.T) string {
			return testkeys.Mint("RS256", rsaB, map[string]any{"kid": "rsa-a"}, logoutClaims(nil))
		}},
		{"unknown-kid", func(*testing.T) string { return mintA(map[string]any{"kid": "nope"}, logoutClaims(nil)) }},
		{"alg-hs256-not-allowed", func(*testing.T) string {
			return testkeys.Mint("HS256", testkeys.Secret(), map[string]any{"kid": "rsa-a"}, logoutClaims(nil))
		}},
		{"alg-none", func(t *testing.T) string {
			tok := mintA(nil, logoutClaims(nil))
			parts := strings.Split(tok, ".")
			return "eyJhbGciOiJub25lIn0." + parts[1] + "."
		}},
		{"not-a-jws", func(*testing.T) string { return "opaque-logout-token" }},
		{"unknown-issuer", func(*testing.T) string {
			return mintA(nil, logoutClaims(map[string]any{"iss": "https://evil.example.net/"}))
		}},
		{"issuer-without-backchannel-logout", func(*testing.T) string {
			return testkeys.Mint("RS256", rsaB, map[string]any{"kid": "rsa-b"}, logoutClaims(map[string]any{"iss": issuerB}))
		}},
		{"iss-absent", func(*testing.T) string { return mintA(nil, logoutClaims(map[string]any{"iss": nil})) }},
		{"aud-wrong", func(*testing.T) string { return mintA(nil, logoutClaims(map[string]any{"aud": "api://orders"})) }},
		{"aud-absent", func(*testing.T) string { return mintA(nil, logoutClaims(map[string]any{"aud": nil})) }},
		{"iat-absent", func(*testing.T) string { return mintA(nil, logoutClaims(map[string]any{"iat": nil})) }},
		{"iat-ahead", func(*testing.T) string {
			return mintA(nil, logoutClaims(map[string]any{"iat": epoch.Add(time.Minute).Unix()}))
		}},
		{"exp-passed", func(*testing.T) string {
			return mintA(nil, logoutClaims(map[string]any{"exp": epoch.Add(-time.Minute).Unix()}))
		}},
		{"exp-passed-by-the-leeway", func(*testing.T) string {
			return mintA(nil, logoutClaims(map[string]any{"exp": epoch.Add(-verify.DefaultLeeway).Unix()}))
		}},
		{"nbf-ahead", func(*testing.T) string {
			return mintA(nil, logoutClaims(map[string]any{"nbf": epoch.Add(time.Minute).Unix()}))
		}},
		{"jti-absent", func(*testing.T) string { return mintA(nil, logoutClaims(map[string]any{"jti": nil})) }},
		{"events-absent", func(*testing.T) string { return mintA(nil, logoutClaims(map[string]any{"events": nil})) }},
		{"events-not-object", func(*testing.T) string {
			return mintA(nil, logoutClaims(map[string]any{"events": []string{signals.BackchannelLogoutEvent}}))
		}},
		{"events-without-logout-member", func(*testing.T) string {
			return mintA(nil, logoutClaims(map[string]any{"events": map[string]any{signals.EventSessionRevoked: map[string]any{}}}))
		}},
		{"logout-member-not-object", func(*testing.T) string {
			return mintA(nil, logoutClaims(map[string]any{"events": map[string]any{signals.BackchannelLogoutEvent: "yes"}}))
		}},
		{"events-member-case-differs", func(*testing.T) string {
			return mintA(nil, logoutClaims(map[string]any{"events": nil, "Events": map[string]any{signals.BackchannelLogoutEvent: map[string]any{}}}))
		}},
		{"neither-sub-nor-sid", func(*testing.T) string {
			return mintA(nil, logoutClaims(map[string]any{"sub": nil, "sid": nil}))
		}},
		{"sid-not-string", func(*testing.T) string { return mintA(nil, logoutClaims(map[string]any{"sid": 7})) }},
		{"sub-empty", func(*testing.T) string { return mintA(nil, logoutClaims(map[string]any{"sub": ""})) }},
		{"sid-empty", func(*testing.T) string { return mintA(nil, logoutClaims(map[string]any{"sid": ""})) }},
		{"nonce-present", func(*testing.T) string { return mintA(nil, logoutClaims(map[string]any{"nonce": "n-0S6"})) }},
		{"typ-at-jwt", func(*testing.T) string { return mintA(map[string]any{"typ": "at+jwt"}, logoutClaims(nil)) }},
		{"typ-dpop-jwt", func(*testing.T) string { return mintA(map[string]any{"typ": "dpop+jwt"}, logoutClaims(nil)) }},
		{"typ-secevent-jwt", func(*testing.T) string {
			return mintA(map[string]any{"typ": "secevent+jwt"}, logoutClaims(nil))
		}},
		{"typ-empty", func(*testing.T) string { return mintA(map[string]any{"typ": ""}, logoutClaims(nil)) }},
		{"crit-header", func(*testing.T) string {
			return mintA(map[string]any{"crit": []string{"exp"}}, logoutClaims(nil))
		}},
		{"duplicate-member-in-events", func(t *testing.T) string {
			return signRaw(t, `{"alg":"RS256","kid":"rsa-a"}`,
				`{"iss":"`+issuerA+`","aud":"`+clientID+`","iat":`+itoa(epoch.Unix())+`,"jti":"dup","sid":"s",`+
					`"events":{"`+signals.BackchannelLogoutEvent+`":{},"`+signals.BackchannelLogoutEvent+`":"x"}}`)
		}},
		{"duplicate-sid", func(t *testing.T) string {
			return signRaw(t, `{"alg":"RS256","kid":"rsa-a"}`,
				`{"iss":"`+issuerA+`","aud":"`+clientID+`","iat":`+itoa(epoch.Unix())+`,"jti":"dup","sid":"s","sid":"t",`+
					`"events":{"`+signals.BackchannelLogoutEvent+`":{}}}`)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, signals.RevokeSession)
			got, err := e.r.Logout(context.Background(), tt.token(t), epoch)
			if !errors.Is(err, signals.ErrInvalid) || errors.Is(err, signals.ErrUnavailable) {
				t.Fatalf("Logout() = %v, want a refusal (ErrInvalid)", err)
			}
			if len(got) != 0 || len(e.store.stored()) != 0 {
				t.Errorf("Logout() returned %v and stored %v, want nothing revoked", got, e.store.stored())
			}
			if strings.Contains(err.Error(), "eyJ") {
				t.Errorf("the refusal %q echoes the token", err)
			}
		})
	}
}

func itoa(n int64) string { return strings.TrimSpace(mustJSON(n)) }

func TestLogoutOnce(t *testing.T) {
	e := newEnv(t, signals.RevokeSession)
	tok := mintA(nil, logoutClaims(nil))
	if _, err := e.r.Logout(context.Background(), tok, epoch); err != nil {
		t.Fatalf("first Logout() = %v", err)
	}
	_, err := e.r.Logout(context.Background(), tok, epoch.Add(time.Second))
	if !errors.Is(err, signals.ErrReplayed) || signals.Code(err) != "invalid_request" {
		t.Fatalf("second Logout() = %v, want ErrReplayed (invalid_request)", err)
	}
	if n := len(e.store.stored()); n != 1 {
		t.Errorf("stored %d entries, want 1: a replay revokes nothing more", n)
	}
	// The same jti from another issuer is another token; the same jti of a
	// DPoP proof would be another key too (the domains differ).
	if n := e.metrics.get(issuerA + "|backchannel-logout|replayed"); n != 1 {
		t.Errorf("replayed count = %d, want 1", n)
	}
}

func TestLogoutUnavailable(t *testing.T) {
	t.Run("store-down-releases-the-jti", func(t *testing.T) {
		e := newEnv(t, signals.RevokeSession)
		tok := mintA(nil, logoutClaims(nil))
		e.store.setFail(true)
		if _, err := e.r.Logout(context.Background(), tok, epoch); !errors.Is(err, signals.ErrUnavailable) || errors.Is(err, signals.ErrInvalid) {
			t.Fatalf("Logout() with the store down = %v, want ErrUnavailable", err)
		}
		e.store.setFail(false)
		// The IdP's retry of the same token is taken: nothing was stored.
		if _, err := e.r.Logout(context.Background(), tok, epoch.Add(time.Second)); err != nil {
			t.Fatalf("retry Logout() = %v, want nil", err)
		}
		if n := len(e.store.stored()); n != 1 {
			t.Errorf("stored %d, want 1", n)
		}
	})
	t.Run("keys-unavailable", func(t *testing.T) {
		e := newEnv(t, signals.RevokeSession)
		tok := mintA(nil, logoutClaims(map[string]any{"iss": issuerDown}))
		if _, err := e.r.Logout(context.Background(), tok, epoch); !errors.Is(err, signals.ErrUnavailable) {
			t.Fatalf("Logout() = %v, want ErrUnavailable", err)
		}
	})
	t.Run("replay-store-down", func(t *testing.T) {
		e := newEnv(t, signals.RevokeSession)
		r, err := signals.New(signals.Options{Verifier: e.v, Replay: failingReplay{}, Store: e.store, Logger: slog.New(slog.NewJSONHandler(e.logs, nil)),
			Issuers: []signals.Issuer{{Issuer: issuerA, Logout: &signals.Logout{Audiences: []string{clientID}}}}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.Logout(context.Background(), mintA(nil, logoutClaims(nil)), epoch); !errors.Is(err, signals.ErrUnavailable) {
			t.Fatalf("Logout() = %v, want ErrUnavailable", err)
		}
		if n := len(e.store.stored()); n != 0 {
			t.Errorf("stored %d, want 0", n)
		}
	})
}

func TestNewRefuses(t *testing.T) {
	e := newEnv(t, signals.RevokeSession)
	good := signals.Options{Verifier: e.v, Replay: e.replay, Store: e.store,
		Issuers: []signals.Issuer{{Issuer: issuerA, Logout: &signals.Logout{Audiences: []string{clientID}}}}}
	tests := []struct {
		name  string
		edit  func(o *signals.Options)
		field string
	}{
		{"no-verifier", func(o *signals.Options) { o.Verifier = nil }, "Verifier"},
		{"no-replay", func(o *signals.Options) { o.Replay = nil }, "Replay"},
		{"no-store", func(o *signals.Options) { o.Store = nil }, "Store"},
		{"no-issuers", func(o *signals.Options) { o.Issuers = nil }, "Issuers"},
		{"unconfigured-issuer", func(o *signals.Options) { o.Issuers[0].Issuer = "https://nope/" }, "Issuers[0].Issuer"},
		{"neither", func(o *signals.Options) { o.Issuers[0].Logout = nil }, "Issuers[0]"},
		{"no-logout-audiences", func(o *signals.Options) { o.Issuers[0].Logout.Audiences = nil }, "Issuers[0].Logout.Audiences"},
		{"empty-audience", func(o *signals.Options) { o.Issuers[0].Logout.Audiences = []string{""} }, "Issuers[0].Logout.Audiences"},
		{"bad-mode", func(o *signals.Options) { o.Issuers[0].Logout.Revoke = "everything" }, "Issuers[0].Logout.Revoke"},
		{"short-bearer", func(o *signals.Options) {
			o.Issuers[0].SSF = &signals.SSF{Audiences: []string{ssfAud}, PushBearer: "short"}
		}, "Issuers[0].SSF.PushBearer"},
		{"shared-bearer", func(o *signals.Options) {
			o.Issuers[0].SSF = &signals.SSF{Audiences: []string{ssfAud}, PushBearer: bearerA}
			o.Issuers = append(o.Issuers, signals.Issuer{Issuer: issuerB, SSF: &signals.SSF{Audiences: []string{ssfAud}, PushBearer: bearerA}})
		}, "Issuers[1].SSF.PushBearer"},
		{"repeated-issuer", func(o *signals.Options) { o.Issuers = append(o.Issuers, o.Issuers[0]) }, "Issuers[1].Issuer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := good
			o.Issuers = []signals.Issuer{{Issuer: issuerA, Logout: &signals.Logout{Audiences: []string{clientID}}}}
			tt.edit(&o)
			_, err := signals.New(o)
			var oe *signals.OptionError
			if !errors.As(err, &oe) || !errors.Is(err, signals.ErrInvalidOptions) || oe.Field != tt.field {
				t.Fatalf("New() = %v, want an OptionError of %s", err, tt.field)
			}
		})
	}
	if _, err := signals.New(good); err != nil {
		t.Fatalf("New(good) = %v", err)
	}
}

// A logout token is taken once: its jti is remembered for the TTL, and a
// token older than that (which a replay eventually is) is refused by its
// age, so no replay finds its jti forgotten (a lifted entry stored again).
func TestLogoutNeverTakenAfterItsJTIIsForgotten(t *testing.T) {
	keys := &cache.Keys{}
	keys.Store(cache.NewSet([]*cache.Key{key(t, testkeys.RSA2048A, "rsa-a")}, nil, epoch, epoch.Add(72*time.Hour)))
	v, err := verify.New(verify.Options{Issuers: []verify.Issuer{{Issuer: issuerA, Keys: keys}}, Now: func() time.Time { return epoch }})
	if err != nil {
		t.Fatal(err)
	}
	ttl := signals.DefaultJTITTL
	tests := []struct {
		name   string
		iat    time.Time
		replay time.Time
		want   error
	}{
		{"within-the-ttl", epoch, epoch.Add(time.Hour), signals.ErrReplayed},
		{"after-the-ttl", epoch, epoch.Add(ttl + time.Minute), signals.ErrInvalid},
		{"at-the-ttl", epoch, epoch.Add(ttl), signals.ErrInvalid},
		// iat ahead of now within the leeway: the jti is remembered
		// until iat + the TTL, past the TTL from the first use.
		{"iat-ahead", epoch.Add(20 * time.Second), epoch.Add(ttl + 10*time.Second), signals.ErrReplayed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, store := receiverOver(t, v)
			tok := mintA(nil, logoutClaims(map[string]any{"exp": nil, "iat": tt.iat.Unix()}))
			if _, err := r.Logout(context.Background(), tok, epoch); err != nil {
				t.Fatalf("first Logout() = %v", err)
			}
			_, err := r.Logout(context.Background(), tok, tt.replay)
			if !errors.Is(err, tt.want) || errors.Is(err, signals.ErrUnavailable) {
				t.Errorf("the same token %s after its first use: Logout() = %v, want %v", tt.replay.Sub(epoch), err, tt.want)
			}
			if n := len(store.stored()); n != 1 {
				t.Errorf("stored %d entries, want 1: a replay revokes nothing more", n)
			}
		})
	}
	t.Run("first-use-too-old", func(t *testing.T) {
		r, store := receiverOver(t, v)
		tok := mintA(nil, logoutClaims(map[string]any{"exp": nil, "iat": epoch.Add(-ttl).Unix()}))
		_, err := r.Logout(context.Background(), tok, epoch)
		if !errors.Is(err, signals.ErrInvalid) || signals.Code(err) != "invalid_request" {
			t.Errorf("Logout() of a token issued %s ago = %v, want invalid_request", ttl, err)
		}
		if n := len(store.stored()); n != 0 {
			t.Errorf("stored %d entries, want none", n)
		}
	})
}
