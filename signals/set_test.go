package signals_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/internal/testkeys"
	"github.com/jwksverify/jwksverify/revoke"
	"github.com/jwksverify/jwksverify/signals"
)

// Subject identifiers (RFC 9493) of the tests.
var (
	issSubA    = map[string]any{"format": "iss_sub", "iss": issuerA, "sub": "alice"}
	opaqueBob  = map[string]any{"format": "opaque", "id": "bob"}
	complexSes = map[string]any{"format": "complex", "user": issSubA, "session": map[string]any{"format": "opaque", "id": "session-9"}}
)

func TestSETEvents(t *testing.T) {
	ts := epoch.Add(-time.Hour)
	iat := epoch.Add(-time.Second)
	sub := func(v string, before time.Time) revoke.Entry {
		return revoke.Entry{Kind: revoke.KindSub, Value: v, IssuedBefore: before}
	}
	sid := func(v string) revoke.Entry { return revoke.Entry{Kind: revoke.KindSID, Value: v} }
	withTS := map[string]any{"event_timestamp": ts.Unix()}
	tests := []struct {
		name    string
		events  map[string]any
		over    map[string]any
		want    []revoke.Entry
		results []string
	}{
		{name: "session-revoked-complex-session", events: map[string]any{signals.EventSessionRevoked: withTS},
			over: map[string]any{"sub_id": complexSes}, want: []revoke.Entry{sid("session-9")}, results: []string{"applied"}},
		{name: "session-revoked-iss-sub", events: map[string]any{signals.EventSessionRevoked: withTS},
			over: map[string]any{"sub_id": issSubA}, want: []revoke.Entry{sub("alice", ts)}, results: []string{"applied"}},
		{name: "session-revoked-without-timestamp-uses-iat", events: map[string]any{signals.EventSessionRevoked: map[string]any{}},
			over: map[string]any{"sub_id": opaqueBob}, want: []revoke.Entry{sub("bob", iat)}, results: []string{"applied"}},
		{name: "session-revoked-subject-in-event", events: map[string]any{signals.EventSessionRevoked: map[string]any{
			"subject": complexSes, "event_timestamp": ts.Unix()}}, want: []revoke.Entry{sid("session-9")}, results: []string{"applied"}},
		{name: "credential-change-complex-user", events: map[string]any{signals.EventCredentialChange: withTS},
			over: map[string]any{"sub_id": complexSes}, want: []revoke.Entry{sub("alice", ts)}, results: []string{"applied"}},
		{name: "credential-change-opaque", events: map[string]any{signals.EventCredentialChange: withTS},
			over: map[string]any{"sub_id": opaqueBob}, want: []revoke.Entry{sub("bob", ts)}, results: []string{"applied"}},
		{name: "account-disabled", events: map[string]any{signals.EventAccountDisabled: map[string]any{"reason": "hijacking"}},
			over: map[string]any{"sub_id": issSubA}, want: []revoke.Entry{sub("alice", iat)}, results: []string{"applied"}},
		{name: "account-purged", events: map[string]any{signals.EventAccountPurged: withTS},
			over: map[string]any{"sub_id": issSubA}, want: []revoke.Entry{sub("alice", ts)}, results: []string{"applied"}},
		{name: "sessions-revoked", events: map[string]any{signals.EventSessionsRevoked: map[string]any{"subject": opaqueBob}},
			want: []revoke.Entry{sub("bob", iat)}, results: []string{"applied"}},
		{name: "credential-compromise", events: map[string]any{signals.EventCredentialCompromise: map[string]any{
			"credential_type": "password", "event_timestamp": ts.Unix()}},
			over: map[string]any{"sub_id": issSubA}, want: []revoke.Entry{sub("alice", ts)}, results: []string{"applied"}},
		{name: "fractional-timestamp", events: map[string]any{signals.EventCredentialChange: map[string]any{"event_timestamp": 1893553445.5}},
			over: map[string]any{"sub_id": opaqueBob}, want: []revoke.Entry{sub("bob", time.Unix(1893553445, 5e8).UTC())}, results: []string{"applied"}},
		{name: "verification-changes-nothing", events: map[string]any{signals.EventVerification: map[string]any{"state": "abc"}},
			results: []string{"ignored"}},
		{name: "other-event-acknowledged", events: map[string]any{"https://schemas.openid.net/secevent/caep/event-type/device-compliance-change": withTS},
			over: map[string]any{"sub_id": issSubA}, results: []string{"unsupported"}},
		{name: "email-subject-acknowledged", events: map[string]any{signals.EventCredentialChange: withTS},
			over: map[string]any{"sub_id": map[string]any{"format": "email", "email": "alice@example.com"}}, results: []string{"unsupported"}},
		{name: "iss-sub-of-another-issuer", events: map[string]any{signals.EventAccountDisabled: withTS},
			over: map[string]any{"sub_id": map[string]any{"format": "iss_sub", "iss": issuerB, "sub": "alice"}}, results: []string{"unsupported"}},
		{name: "credential-change-session-only", events: map[string]any{signals.EventCredentialChange: withTS},
			over:    map[string]any{"sub_id": map[string]any{"format": "complex", "session": map[string]any{"format": "opaque", "id": "s"}}},
			results: []string{"unsupported"}},
		{name: "session-revoked-session-of-another-format", events: map[string]any{signals.EventSessionRevoked: withTS},
			over: map[string]any{"sub_id": map[string]any{"format": "complex", "user": issSubA,
				"session": map[string]any{"format": "email", "email": "s@example.com", "id": "session-9"}}},
			want: []revoke.Entry{sub("alice", ts)}, results: []string{"applied"}},
		{name: "two-events", events: map[string]any{signals.EventAccountDisabled: withTS, signals.EventSessionRevoked: withTS},
			over: map[string]any{"sub_id": complexSes}, want: []revoke.Entry{sid("session-9"), sub("alice", ts)}, results: []string{"applied", "applied"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, signals.RevokeSession)
			got, outcomes, err := e.r.Receive(context.Background(), issuerA, mintSET(setClaims(tt.events, tt.over)), revoke.SourceSSFPush, epoch)
			if err != nil {
				t.Fatalf("Receive() = %v, want nil", err)
			}
			stored := e.store.stored()
			if len(got) != len(tt.want) || len(stored) != len(tt.want) {
				t.Fatalf("Receive() returned %d entries, stored %d, want %d", len(got), len(stored), len(tt.want))
			}
			for i, w := range tt.want {
				w.Issuer, w.Source = issuerA, revoke.SourceSSFPush
				s := stored[i]
				s.ID, s.CreatedAt, s.ExpiresAt = "", time.Time{}, time.Time{}
				if s != w {
					t.Errorf("entry %d = %+v, want %+v", i, s, w)
				}
			}
			if len(outcomes) != len(tt.results) {
				t.Fatalf("outcomes %+v, want results %v", outcomes, tt.results)
			}
			for i, o := range outcomes {
				if o.Result != tt.results[i] {
					t.Errorf("outcome %d = %+v, want result %s", i, o, tt.results[i])
				}
				if n := e.metrics.get(issuerA + "|" + o.Event + "|" + o.Result); n == 0 {
					t.Errorf("no count for %s %s", o.Event, o.Result)
				}
			}
		})
	}
}

func TestSETRules(t *testing.T) {
	events := map[string]any{signals.EventCredentialChange: map[string]any{}}
	good := func(over map[string]any) map[string]any {
		return apply(setClaims(events, map[string]any{"sub_id": issSubA}), over)
	}
	rsaB := testkeys.Private(testkeys.RSA2048B)
	tests := []struct {
		name   string
		issuer string // the sender (the push bearer's)
		token  func(t *testing.T) string
		code   string
	}{
		{"typ-absent", issuerA, func(*testing.T) string { return mintA(map[string]any{"typ": nil}, good(nil)) }, "invalid_request"},
		{"typ-jwt", issuerA, func(*testing.T) string { return mintA(map[string]any{"typ": "JWT"}, good(nil)) }, "invalid_request"},
		// Not secevent+jwt ignoring ASCII case: ſ (U+017F) is no s.
		{"typ-secevent-long-s", issuerA, func(*testing.T) string { return mintA(map[string]any{"typ": "\u017fecevent+jwt"}, good(nil)) }, "invalid_request"},
		{"typ-logout", issuerA, func(*testing.T) string { return mintA(map[string]any{"typ": "logout+jwt"}, good(nil)) }, "invalid_request"},
		{"bad-signature", issuerA, func(*testing.T) string {
			return testkeys.Mint("RS256", rsaB, map[string]any{"kid": "rsa-a", "typ": "secevent+jwt"}, good(nil))
		}, "invalid_key"},
		{"unknown-kid", issuerA, func(*testing.T) string {
			return mintA(map[string]any{"typ": "secevent+jwt", "kid": "nope"}, good(nil))
		}, "invalid_key"},
		{"key-of-another-issuer", issuerA, func(*testing.T) string {
			return testkeys.Mint("RS256", rsaB, map[string]any{"kid": "rsa-b", "typ": "secevent+jwt"}, good(nil))
		}, "invalid_key"},
		{"iss-of-another-issuer", issuerA, func(*testing.T) string {
			return testkeys.Mint("RS256", rsaB, map[string]any{"kid": "rsa-b", "typ": "secevent+jwt"}, good(map[string]any{"iss": issuerB}))
		}, "invalid_issuer"},
		{"iss-of-an-issuer-without-keys", issuerA, func(*testing.T) string { return mintSET(good(map[string]any{"iss": issuerDown})) }, "invalid_issuer"},
		{"iss-unknown", issuerA, func(*testing.T) string { return mintSET(good(map[string]any{"iss": "https://evil.example.net/"})) }, "invalid_issuer"},
		{"sender-takes-no-sets", issuerDown, func(*testing.T) string { return mintSET(good(nil)) }, "invalid_issuer"},
		{"sender-takes-no-sets-its-own-iss", issuerDown, func(*testing.T) string {
			return mintSET(good(map[string]any{"iss": issuerDown}))
		}, "invalid_issuer"},
		{"aud-wrong", issuerA, func(*testing.T) string { return mintSET(good(map[string]any{"aud": clientID})) }, "invalid_audience"},
		{"aud-absent", issuerA, func(*testing.T) string { return mintSET(good(map[string]any{"aud": nil})) }, "invalid_audience"},
		{"iat-absent", issuerA, func(*testing.T) string { return mintSET(good(map[string]any{"iat": nil})) }, "invalid_request"},
		{"iat-ahead", issuerA, func(*testing.T) string {
			return mintSET(good(map[string]any{"iat": epoch.Add(time.Hour).Unix()}))
		}, "invalid_request"},
		{"exp-passed", issuerA, func(*testing.T) string {
			return mintSET(good(map[string]any{"exp": epoch.Add(-time.Hour).Unix()}))
		}, "invalid_request"},
		{"jti-absent", issuerA, func(*testing.T) string { return mintSET(good(map[string]any{"jti": nil})) }, "invalid_request"},
		{"events-absent", issuerA, func(*testing.T) string { return mintSET(good(map[string]any{"events": nil})) }, "invalid_request"},
		{"events-empty", issuerA, func(*testing.T) string { return mintSET(good(map[string]any{"events": map[string]any{}})) }, "invalid_request"},
		{"events-not-object", issuerA, func(*testing.T) string { return mintSET(good(map[string]any{"events": "x"})) }, "invalid_request"},
		{"event-not-object", issuerA, func(*testing.T) string {
			return mintSET(good(map[string]any{"events": map[string]any{signals.EventCredentialChange: true}}))
		}, "invalid_request"},
		{"no-subject", issuerA, func(*testing.T) string { return mintSET(good(map[string]any{"sub_id": nil})) }, "invalid_request"},
		{"sub-id-not-object", issuerA, func(*testing.T) string {
			return mintSET(good(map[string]any{"sub_id": "alice",
				"events": map[string]any{signals.EventCredentialChange: map[string]any{"subject": opaqueBob}}}))
		}, "invalid_request"},
		{"subject-without-format", issuerA, func(*testing.T) string {
			return mintSET(good(map[string]any{"sub_id": map[string]any{"id": "x"}}))
		}, "invalid_request"},
		{"opaque-without-id", issuerA, func(*testing.T) string {
			return mintSET(good(map[string]any{"sub_id": map[string]any{"format": "opaque"}}))
		}, "invalid_request"},
		{"opaque-with-empty-id", issuerA, func(*testing.T) string {
			return mintSET(good(map[string]any{"sub_id": map[string]any{"format": "opaque", "id": ""}}))
		}, "invalid_request"},
		{"iss-sub-without-sub", issuerA, func(*testing.T) string {
			return mintSET(good(map[string]any{"sub_id": map[string]any{"format": "iss_sub", "iss": issuerA}}))
		}, "invalid_request"},
		{"timestamp-not-number", issuerA, func(*testing.T) string {
			return mintSET(good(map[string]any{"events": map[string]any{signals.EventCredentialChange: map[string]any{"event_timestamp": "yesterday"}}}))
		}, "invalid_request"},
		{"timestamp-quoted-number", issuerA, func(*testing.T) string {
			return mintSET(good(map[string]any{"events": map[string]any{signals.EventCredentialChange: map[string]any{"event_timestamp": "1893553445"}}}))
		}, "invalid_request"},
		{"timestamp-negative", issuerA, func(*testing.T) string {
			return mintSET(good(map[string]any{"events": map[string]any{signals.EventCredentialChange: map[string]any{"event_timestamp": -1}}}))
		}, "invalid_request"},
		{"timestamp-year-10000", issuerA, func(*testing.T) string {
			return mintSET(good(map[string]any{"events": map[string]any{signals.EventCredentialChange: map[string]any{"event_timestamp": 253402300800}}}))
		}, "invalid_request"},
		{"session-format-null", issuerA, func(*testing.T) string {
			return mintSET(good(map[string]any{"sub_id": map[string]any{"format": "complex", "user": issSubA,
				"session": map[string]any{"format": nil, "id": "session-9"}}}))
		}, "invalid_request"},
		{"duplicate-event", issuerA, func(t *testing.T) string {
			return signRaw(t, `{"alg":"RS256","kid":"rsa-a","typ":"secevent+jwt"}`,
				`{"iss":"`+issuerA+`","aud":"`+ssfAud+`","iat":`+itoa(epoch.Unix())+`,"jti":"d","sub_id":{"format":"opaque","id":"a","id":"b"},`+
					`"events":{"`+signals.EventCredentialChange+`":{}}}`)
		}, "invalid_request"},
		{"not-a-jws", issuerA, func(*testing.T) string { return "not.a-jws" }, "invalid_request"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, signals.RevokeSession)
			got, _, err := e.r.Receive(context.Background(), tt.issuer, tt.token(t), revoke.SourceSSFPush, epoch)
			if !errors.Is(err, signals.ErrInvalid) || signals.Code(err) != tt.code {
				t.Fatalf("Receive() = %v (code %q), want a refusal %s", err, signals.Code(err), tt.code)
			}
			if len(got) != 0 || len(e.store.stored()) != 0 {
				t.Errorf("stored %v, want nothing", e.store.stored())
			}
		})
	}
}

func TestSETOnce(t *testing.T) {
	e := newEnv(t, signals.RevokeSession)
	tok := mintSET(setClaims(map[string]any{signals.EventAccountDisabled: map[string]any{}}, map[string]any{"sub_id": issSubA}))
	if _, _, err := e.r.Receive(context.Background(), issuerA, tok, revoke.SourceSSFPush, epoch); err != nil {
		t.Fatalf("first Receive() = %v", err)
	}
	_, _, err := e.r.Receive(context.Background(), issuerA, tok, revoke.SourceSSFPoll, epoch)
	if !errors.Is(err, signals.ErrReplayed) {
		t.Fatalf("second Receive() = %v, want ErrReplayed", err)
	}
	// A logout token with the same jti is a jti of the same issuer: one
	// key space for both kinds (a jti names one token of the issuer).
	if n := len(e.store.stored()); n != 1 {
		t.Errorf("stored %d, want 1", n)
	}
}

func TestPushIssuer(t *testing.T) {
	e := newEnv(t, signals.RevokeSession)
	for _, tt := range []struct {
		bearer, want string
		ok           bool
	}{{bearerA, issuerA, true}, {bearerB, issuerB, true}, {"", "", false}, {bearerA + "x", "", false}, {bearerA[:len(bearerA)-1], "", false}} {
		got, ok := e.r.PushIssuer(tt.bearer)
		if got != tt.want || ok != tt.ok {
			t.Errorf("PushIssuer(%q) = %q, %v, want %q, %v", tt.bearer, got, ok, tt.want, tt.ok)
		}
	}
}
