package verify_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/cache"
	"github.com/jwksverify/jwksverify/internal/testkeys"
	"github.com/jwksverify/jwksverify/verify"
)

// idAlgs are the algorithms an ID token's hashes are tested under: SHA-256,
// SHA-384 and SHA-512 sizes, RSA PKCS#1 v1.5 and PSS, ECDSA, and EdDSA
// (SHA-512).
var idAlgs = []string{"RS256", "RS384", "RS512", "PS256", "ES256", "ES384", "ES512", "EdDSA"}

const (
	clientID = "web-app"
	idNonce  = "n-0S6_WzA2Mj"
	idAT     = "SlAV32hkKG.access-token"
	idCode   = "Qcb0Orv1zh30vL1MPRsbm-diHiMwcLyZvn1arpZv-Jxf_11jnpEX3Tgfvk"
)

// idIssuer is issuerA accepting ID tokens for clientID (and "other-app").
func idIssuer(keys *cache.Keys, mode verify.AZPMode) verify.Issuer {
	is := issuerA(keys)
	is.IDToken = verify.IDTokenPolicy{ClientIDs: []string{clientID, "other-app"}, AZP: mode}
	return is
}

// idClaims are an ID token's claims for alg at t0: aud clientID, a nonce,
// at_hash and c_hash of idAT and idCode, auth_time a minute before t0, acr;
// extra merged in as claims() does.
func idClaims(alg string, extra map[string]any) map[string]any {
	at, _ := verify.HalfHash(alg, idAT)
	ch, _ := verify.HalfHash(alg, idCode)
	c := map[string]any{
		"aud": clientID, "nonce": idNonce, "at_hash": at, "c_hash": ch,
		"auth_time": t0.Add(-time.Minute).Unix(), "acr": "urn:acr:silver",
	}
	for k, v := range extra {
		c[k] = v
	}
	return claims(c)
}

func mintID(alg string, header, extra map[string]any) string {
	h := map[string]any{"kid": kidFor(alg)}
	for k, v := range header {
		h[k] = v
	}
	return testkeys.Mint(alg, testkeys.SigningKey(alg), h, idClaims(alg, extra))
}

// allInputs are the inputs every idClaims token satisfies.
func allInputs() verify.IDTokenChecks {
	return verify.IDTokenChecks{Nonce: idNonce, AccessToken: idAT, Code: idCode, MaxAge: 5 * time.Minute, HasMaxAge: true,
		ACRValues: []string{"urn:acr:bronze", "urn:acr:silver"}}
}

// TestVerifyIDTokenRules holds each rule of an ID token, under each
// algorithm, positive and negative.
func TestVerifyIDTokenRules(t *testing.T) {
	with := func(f func(*verify.IDTokenChecks)) verify.IDTokenChecks { in := allInputs(); f(&in); return in }
	tests := []struct {
		name    string
		mode    verify.AZPMode
		header  map[string]any
		extra   map[string]any
		in      verify.IDTokenChecks
		wantErr error
	}{
		{name: "all-inputs-match", in: allInputs()},
		{name: "no-inputs", in: verify.IDTokenChecks{}},
		{name: "typ-jwt", header: map[string]any{"typ": "JWT"}, in: allInputs()},
		{name: "wrong-nonce", in: with(func(in *verify.IDTokenChecks) { in.Nonce = idNonce + "x" }), wantErr: verify.ErrWrongNonce},
		{name: "nonce-prefix", in: with(func(in *verify.IDTokenChecks) { in.Nonce = idNonce[:4] }), wantErr: verify.ErrWrongNonce},
		{name: "nonce-absent", extra: map[string]any{"nonce": nil}, in: allInputs(), wantErr: verify.ErrMissingClaim},
		{name: "nonce-not-string", extra: map[string]any{"nonce": 7}, in: allInputs(), wantErr: verify.ErrWrongNonce},
		{name: "nonce-absent-not-asked", extra: map[string]any{"nonce": nil}, in: with(func(in *verify.IDTokenChecks) { in.Nonce = "" })},
		{name: "wrong-access-token", in: with(func(in *verify.IDTokenChecks) { in.AccessToken += "x" }), wantErr: verify.ErrWrongHash},
		{name: "at-hash-absent", extra: map[string]any{"at_hash": nil}, in: allInputs(), wantErr: verify.ErrMissingClaim},
		{name: "at-hash-full-hash", extra: map[string]any{"at_hash": "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}, in: allInputs(), wantErr: verify.ErrWrongHash},
		{name: "at-hash-absent-not-asked", extra: map[string]any{"at_hash": nil}, in: with(func(in *verify.IDTokenChecks) { in.AccessToken = "" })},
		{name: "wrong-code", in: with(func(in *verify.IDTokenChecks) { in.Code = "other" }), wantErr: verify.ErrWrongHash},
		{name: "c-hash-absent", extra: map[string]any{"c_hash": nil}, in: allInputs(), wantErr: verify.ErrMissingClaim},
		{name: "c-hash-not-string", extra: map[string]any{"c_hash": true}, in: allInputs(), wantErr: verify.ErrWrongHash},
		{name: "auth-time-too-old", extra: map[string]any{"auth_time": t0.Add(-6 * time.Minute).Unix()}, in: allInputs(), wantErr: verify.ErrAuthTooOld},
		{name: "auth-time-within-leeway", extra: map[string]any{"auth_time": t0.Add(-5*time.Minute - 20*time.Second).Unix()}, in: allInputs()},
		{name: "max-age-zero", extra: map[string]any{"auth_time": t0.Add(-10 * time.Second).Unix()}, in: with(func(in *verify.IDTokenChecks) { in.MaxAge = 0 })},
		{name: "max-age-zero-old", in: with(func(in *verify.IDTokenChecks) { in.MaxAge = 0 }), wantErr: verify.ErrAuthTooOld},
		{name: "auth-time-absent", extra: map[string]any{"auth_time": nil}, in: allInputs(), wantErr: verify.ErrMissingClaim},
		{name: "auth-time-not-a-number", extra: map[string]any{"auth_time": "yesterday"}, in: allInputs(), wantErr: verify.ErrMalformed},
		{name: "auth-time-absent-not-asked", extra: map[string]any{"auth_time": nil}, in: with(func(in *verify.IDTokenChecks) { in.HasMaxAge = false })},
		{name: "wrong-acr", in: with(func(in *verify.IDTokenChecks) { in.ACRValues = []string{"urn:acr:gold"} }), wantErr: verify.ErrWrongACR},
		{name: "acr-absent", extra: map[string]any{"acr": nil}, in: allInputs(), wantErr: verify.ErrMissingClaim},
		{name: "iat-absent", extra: map[string]any{"iat": nil}, in: allInputs(), wantErr: verify.ErrMissingClaim},
		{name: "sub-absent", extra: map[string]any{"sub": nil}, in: allInputs(), wantErr: verify.ErrMissingClaim},
		{name: "sub-empty", extra: map[string]any{"sub": ""}, in: allInputs(), wantErr: verify.ErrMissingClaim},
		{name: "exp-absent", extra: map[string]any{"exp": nil}, in: allInputs(), wantErr: verify.ErrMissingClaim},
		{name: "iat-ahead", extra: map[string]any{"iat": t0.Add(time.Minute).Unix()}, in: allInputs(), wantErr: verify.ErrNotYetValid},
		{name: "iat-ahead-within-leeway", extra: map[string]any{"iat": t0.Add(20 * time.Second).Unix()}, in: allInputs()},
		{name: "aud-api-not-client", extra: map[string]any{"aud": aud}, in: allInputs(), wantErr: verify.ErrWrongAudience},
		{name: "aud-absent", extra: map[string]any{"aud": nil}, in: allInputs(), wantErr: verify.ErrMissingClaim},
		{name: "azp-multi-aud-absent", extra: map[string]any{"aud": []string{clientID, "x"}}, in: allInputs(), wantErr: verify.ErrWrongAZP},
		{name: "azp-multi-aud-present", extra: map[string]any{"aud": []string{clientID, "x"}, "azp": clientID}, in: allInputs()},
		{name: "azp-not-client", extra: map[string]any{"azp": "android-app"}, in: allInputs(), wantErr: verify.ErrWrongAZP},
		{name: "azp-off-not-client", mode: verify.AZPOff, extra: map[string]any{"azp": "android-app", "aud": []string{clientID, "x"}}, in: allInputs()},
		{name: "azp-always-absent", mode: verify.AZPAlways, in: allInputs(), wantErr: verify.ErrWrongAZP},
		{name: "azp-always-present", mode: verify.AZPAlways, extra: map[string]any{"azp": "other-app"}, in: allInputs()},
		{name: "typ-at-jwt", header: map[string]any{"typ": "at+jwt"}, in: allInputs(), wantErr: verify.ErrWrongType},
		{name: "typ-application-at-jwt", header: map[string]any{"typ": "Application/AT+JWT"}, in: allInputs(), wantErr: verify.ErrWrongType},
		{name: "typ-logout", header: map[string]any{"typ": "logout+jwt"}, in: allInputs(), wantErr: verify.ErrWrongType},
		{name: "events-claim", extra: map[string]any{"events": map[string]any{"http://schemas.openid.net/event/backchannel-logout": map[string]any{}}}, in: allInputs(), wantErr: verify.ErrWrongType},
		{name: "expired", extra: map[string]any{"exp": t0.Add(-time.Hour).Unix()}, in: allInputs(), wantErr: verify.ErrExpired},
	}
	for _, alg := range idAlgs {
		for _, tt := range tests {
			t.Run(alg+"/"+tt.name, func(t *testing.T) {
				keys := allKeys(t)
				v := newVerifier(t, verify.Options{Issuers: []verify.Issuer{idIssuer(keys, tt.mode)}})
				tok := mintID(alg, tt.header, tt.extra)
				res, err := v.VerifyIDTokenAt(context.Background(), tok, t0, tt.in)
				if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
					t.Fatalf("VerifyIDTokenAt() = %v, want %v", err, tt.wantErr)
				}
				if err != nil {
					var e *verify.Error
					if !errors.As(err, &e) || e.Issuer != issA || e.Class != verify.Class(tt.wantErr) {
						t.Fatalf("VerifyIDTokenAt() error = %#v, want a *verify.Error of %s for %s", err, verify.Class(tt.wantErr), issA)
					}
					if strings.Contains(err.Error(), idNonce) || strings.Contains(err.Error(), idAT) {
						t.Fatalf("VerifyIDTokenAt() error %q echoes an input", err)
					}
					return
				}
				if res.Subject != "alice" {
					t.Fatalf("VerifyIDTokenAt().Subject = %q, want alice", res.Subject)
				}
			})
		}
	}
}

// TestIDTokenIssuerWithoutIDToken: an issuer without id_token refuses ID
// tokens as wrong_type, and its Type does not apply to them.
func TestIDTokenIssuerSettings(t *testing.T) {
	keys := allKeys(t)
	plain := issuerA(keys)
	typed := idIssuer(keys, "")
	typed.Type = "at+jwt"
	tests := []struct {
		name    string
		is      verify.Issuer
		wantErr error
	}{
		{"no-id-token", plain, verify.ErrWrongType},
		{"type-applies-to-access-tokens-only", typed, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := newVerifier(t, verify.Options{Issuers: []verify.Issuer{tt.is}})
			_, err := v.VerifyIDTokenAt(context.Background(), mintID("ES256", nil, nil), t0, allInputs())
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Fatalf("VerifyIDTokenAt() = %v, want %v", err, tt.wantErr)
			}
		})
	}
}

// TestTokenKinds: a token of another kind is refused as an access token
// and as an ID token, whatever the issuer's type.
func TestTokenKinds(t *testing.T) {
	events := map[string]any{"events": map[string]any{"http://schemas.openid.net/event/backchannel-logout": map[string]any{}}}
	tests := []struct {
		name             string
		header           map[string]any
		extra            map[string]any
		access, idToken  error
		issuerTypeAccess string
	}{
		{name: "plain", access: nil, idToken: nil},
		{name: "logout-token", header: map[string]any{"typ": "logout+jwt"}, extra: events, access: verify.ErrWrongType, idToken: verify.ErrWrongType},
		{name: "events-without-typ", extra: events, access: verify.ErrWrongType, idToken: verify.ErrWrongType},
		{name: "logout-typ", header: map[string]any{"typ": "application/Logout+JWT"}, access: verify.ErrWrongType, idToken: verify.ErrWrongType},
		{name: "set", header: map[string]any{"typ": "secevent+jwt"}, access: verify.ErrWrongType, idToken: verify.ErrWrongType},
		{name: "dpop-proof", header: map[string]any{"typ": "dpop+jwt"}, access: verify.ErrWrongType, idToken: verify.ErrWrongType},
		{name: "introspection-answer", header: map[string]any{"typ": "token-introspection+jwt"}, access: verify.ErrWrongType, idToken: verify.ErrWrongType},
		{name: "at-jwt", header: map[string]any{"typ": "at+jwt"}, access: nil, idToken: verify.ErrWrongType},
		{name: "issuer-type-says-logout", header: map[string]any{"typ": "logout+jwt"}, issuerTypeAccess: "logout+jwt", access: verify.ErrWrongType, idToken: verify.ErrWrongType},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := idIssuer(allKeys(t), "")
			is.Audiences = []string{clientID}
			is.Type = tt.issuerTypeAccess
			v := newVerifier(t, verify.Options{Issuers: []verify.Issuer{is}, TokenCache: verify.TokenCacheOptions{MaxEntries: 16}})
			tok := mintID("RS256", tt.header, tt.extra)
			for range 2 { // the second is a cache hit where the first was accepted
				if _, err := v.VerifyAt(context.Background(), tok, t0); !errors.Is(err, tt.access) || (tt.access == nil) != (err == nil) {
					t.Fatalf("VerifyAt() = %v, want %v", err, tt.access)
				}
				if _, err := v.VerifyIDTokenAt(context.Background(), tok, t0, allInputs()); !errors.Is(err, tt.idToken) || (tt.idToken == nil) != (err == nil) {
					t.Fatalf("VerifyIDTokenAt() = %v, want %v", err, tt.idToken)
				}
			}
		})
	}
}

// TestIDTokenCacheKinds: the token cache never answers one kind with the
// other's verdict, nor one set of ID-token inputs with another's.
func TestIDTokenCacheKinds(t *testing.T) {
	ctx := context.Background()
	is := idIssuer(allKeys(t), "")
	v := newVerifier(t, verify.Options{Issuers: []verify.Issuer{is}, TokenCache: verify.TokenCacheOptions{MaxEntries: 16}})
	tok := mintID("ES256", map[string]any{"typ": "JWT"}, nil) // aud is the client, not the API

	t.Run("access-then-id", func(t *testing.T) {
		if _, err := v.VerifyAt(ctx, tok, t0); !errors.Is(err, verify.ErrWrongAudience) {
			t.Fatalf("VerifyAt() = %v, want wrong_audience", err)
		}
		if _, err := v.VerifyIDTokenAt(ctx, tok, t0, allInputs()); err != nil {
			t.Fatalf("VerifyIDTokenAt() = %v, want nil", err)
		}
	})
	t.Run("id-hit-with-other-inputs", func(t *testing.T) {
		before := v.CacheStats().Hits
		in := allInputs()
		in.Nonce = "replayed"
		if _, err := v.VerifyIDTokenAt(ctx, tok, t0, in); !errors.Is(err, verify.ErrWrongNonce) {
			t.Fatalf("VerifyIDTokenAt(other nonce) = %v, want wrong_nonce", err)
		}
		if _, err := v.VerifyIDTokenAt(ctx, tok, t0, allInputs()); err != nil {
			t.Fatalf("VerifyIDTokenAt() = %v, want nil", err)
		}
		if v.CacheStats().Hits != before+2 {
			t.Fatalf("hits = %d, want %d: the ID-token verdict is cached, its inputs checked on every hit", v.CacheStats().Hits, before+2)
		}
	})
	t.Run("id-cached-then-access", func(t *testing.T) {
		if _, err := v.VerifyAt(ctx, tok, t0); !errors.Is(err, verify.ErrWrongAudience) {
			t.Fatalf("VerifyAt() after an ID-token verdict = %v, want wrong_audience", err)
		}
	})
	t.Run("access-cached-then-id", func(t *testing.T) {
		both := idIssuer(allKeys(t), "")
		both.Audiences = []string{clientID}
		v := newVerifier(t, verify.Options{Issuers: []verify.Issuer{both}, TokenCache: verify.TokenCacheOptions{MaxEntries: 16}})
		at := mintID("ES256", map[string]any{"typ": "at+jwt"}, nil)
		if _, err := v.VerifyAt(ctx, at, t0); err != nil {
			t.Fatalf("VerifyAt() = %v, want nil", err)
		}
		if _, err := v.VerifyIDTokenAt(ctx, at, t0, allInputs()); !errors.Is(err, verify.ErrWrongType) {
			t.Fatalf("VerifyIDTokenAt(cached access token) = %v, want wrong_type", err)
		}
	})
}

// TestExplainIDToken lists the ID token's own steps.
func TestExplainIDToken(t *testing.T) {
	v := newVerifier(t, verify.Options{Issuers: []verify.Issuer{idIssuer(allKeys(t), "")}})
	steps, _, err := v.ExplainIDTokenAt(context.Background(), mintID("EdDSA", nil, nil), t0, allInputs())
	if err != nil {
		t.Fatalf("ExplainIDTokenAt() = %v", err)
	}
	var got []string
	for _, s := range steps {
		got = append(got, s.Check)
		if strings.Contains(s.Detail, idNonce) || strings.Contains(s.Detail, idAT) || strings.Contains(s.Detail, idCode) {
			t.Errorf("step %s detail %q echoes an input", s.Check, s.Detail)
		}
	}
	want := "size structure header crit issuer alg key signature kind exp nbf aud typ claims iat azp nonce at_hash c_hash auth_time acr"
	if strings.Join(got, " ") != want {
		t.Fatalf("steps = %s, want %s", strings.Join(got, " "), want)
	}
	in := allInputs()
	in.Nonce = "other"
	steps, _, err = v.ExplainIDTokenAt(context.Background(), mintID("EdDSA", nil, nil), t0, in)
	if last := steps[len(steps)-1]; !errors.Is(err, verify.ErrWrongNonce) || last.Check != "nonce" || last.OK {
		t.Fatalf("ExplainIDTokenAt(wrong nonce) = %v, last step %+v; want wrong_nonce at nonce", err, last)
	}
}

// TestHalfHash: the OIDC Core examples (A.3, A.4), and EdDSA's SHA-512.
func TestHalfHash(t *testing.T) {
	tests := []struct{ alg, value, want, hash string }{
		// OIDC Core 1.0 A.3 (id_token token): at_hash of this access token.
		{"RS256", "jHkWEdUXMU1BwAsC4vtUsZwnNvTIxEl0z9K3vx5KF0Y", "77QmUPtjPfzWtF2AnpK9RQ", "SHA-256"},
		// OIDC Core 1.0 A.4 (code id_token): c_hash of this code.
		{"RS256", "Qcb0Orv1zh30vL1MPRsbm-diHiMwcLyZvn1arpZv-Jxf_11jnpEX3Tgfvk", "LDktKdoQak3Pk0cnXxCltA", "SHA-256"},
		{"HS384", "x", "", "SHA-384"},
		{"ES512", "x", "", "SHA-512"},
		{"EdDSA", "x", "", "SHA-512"},
		{"none", "x", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.alg+"-"+tt.value[:1], func(t *testing.T) {
			got, hash := verify.HalfHash(tt.alg, tt.value)
			if hash != tt.hash || (tt.want != "" && got != tt.want) {
				t.Fatalf("HalfHash(%s) = %q, %s; want %q, %s", tt.alg, got, hash, tt.want, tt.hash)
			}
			if n := map[string]int{"SHA-256": 22, "SHA-384": 32, "SHA-512": 43}[hash]; len(got) != n {
				t.Fatalf("HalfHash(%s) has %d characters, want %d", tt.alg, len(got), n)
			}
		})
	}
}

// TestIDTokenOptions: New refuses an unknown azp mode and an empty client ID.
func TestIDTokenOptions(t *testing.T) {
	for _, tt := range []struct {
		name string
		p    verify.IDTokenPolicy
	}{
		{"unknown-azp-mode", verify.IDTokenPolicy{ClientIDs: []string{"a"}, AZP: "sometimes"}},
		{"empty-client-id", verify.IDTokenPolicy{ClientIDs: []string{""}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			is := issuerA(allKeys(t))
			is.IDToken = tt.p
			if _, err := verify.New(verify.Options{Issuers: []verify.Issuer{is}}); err == nil {
				t.Fatalf("New(%+v) = nil, want an error", tt.p)
			}
		})
	}
}

// FuzzVerifyIDToken signs arbitrary ID-token claims (HS256) and checks the
// ID-token rules against encoding/json and crypto/sha256: an accepted token
// has aud holding a client ID, sub, exp and iat, iat not ahead; a given
// nonce equal to its nonce; a given access token whose SHA-256 left half is
// its at_hash; auth_time within max_age plus leeway; acr among the values;
// azp, when present, a client ID. A second call (a cache hit) agrees, as
// does ExplainIDTokenAt, and a logout token is never accepted.
func FuzzVerifyIDToken(f *testing.F) {
	at, _ := verify.HalfHash("HS256", idAT)
	f.Add(`{"alg":"HS256","kid":"k-HS256"}`, fmt.Sprintf(`{"iss":%q,"sub":"a","aud":%q,"exp":1.9e9,"iat":%d,"nonce":%q,"at_hash":%q,"auth_time":%d,"acr":"urn:acr:silver"}`,
		issA, clientID, t0.Unix(), idNonce, at, t0.Unix()-60), idNonce, idAT, int64(300), "urn:acr:silver")
	f.Add(`{"alg":"HS256","typ":"logout+jwt"}`, fmt.Sprintf(`{"iss":%q,"sub":"a","aud":[%q,"x"],"azp":"other-app","exp":1.9e9,"iat":%d,"events":{}}`, issA, clientID, t0.Unix()), "", "", int64(-1), "")
	f.Add(`{"alg":"HS256","typ":"at+JWT"}`, fmt.Sprintf(`{"iss":%q,"sub":"a","aud":%q,"exp":1.9e9,"iat":%d,"nonce":"\u0041"}`, issA, clientID, t0.Unix()), "A", "", int64(0), "")
	v := newVerifier(f, verify.Options{
		Issuers:    []verify.Issuer{idIssuer(allKeys(f), "")},
		TokenCache: verify.TokenCacheOptions{MaxEntries: 64},
	})
	f.Fuzz(func(t *testing.T, header, payload, nonce, accessToken string, maxAge int64, acr string) {
		in := verify.IDTokenChecks{Nonce: nonce, AccessToken: accessToken}
		if maxAge >= 0 && maxAge < 1<<31 {
			in.MaxAge, in.HasMaxAge = time.Duration(maxAge)*time.Second, true
		}
		if acr != "" {
			in.ACRValues = []string{acr}
		}
		tok := signRaw(t, "HS256", header, payload)
		ctx := context.Background()
		res, err := v.VerifyIDTokenAt(ctx, tok, t0, in)
		check(t, res, err)
		res2, err2 := v.VerifyIDTokenAt(ctx, tok, t0, in)
		_, res3, err3 := v.ExplainIDTokenAt(ctx, tok, t0, in)
		if verify.Class(err) != verify.Class(err2) || verify.Class(err) != verify.Class(err3) || (res == nil) != (res2 == nil) || (res == nil) != (res3 == nil) {
			t.Fatalf("VerifyIDTokenAt() = %v, again %v, ExplainIDTokenAt() = %v", err, err2, err3)
		}
		if err != nil {
			return
		}
		var c map[string]json.RawMessage
		if err := json.Unmarshal(res.Claims, &c); err != nil {
			t.Fatalf("encoding/json rejects accepted claims: %v", err)
		}
		str := func(name string) (string, bool) {
			var s string
			raw, ok := c[name]
			return s, ok && json.Unmarshal(raw, &s) == nil
		}
		num := func(name string) (float64, bool) {
			var n float64
			raw, ok := c[name]
			return n, ok && json.Unmarshal(raw, &n) == nil
		}
		if _, ev := c["events"]; ev {
			t.Fatal("accepted a token with an events claim")
		}
		if !slices.Contains(res.Audience, clientID) && !slices.Contains(res.Audience, "other-app") {
			t.Fatalf("accepted aud %v without a client ID", res.Audience)
		}
		for _, n := range []string{"sub", "exp", "iat"} {
			if _, ok := c[n]; !ok {
				t.Fatalf("accepted an ID token without %s", n)
			}
		}
		if iat, _ := num("iat"); iat > float64(t0.Add(verify.DefaultLeeway).Unix())+1 {
			t.Fatalf("accepted iat %v ahead of now", iat)
		}
		if azp, ok := c["azp"]; ok {
			s, _ := str("azp")
			if s != clientID && s != "other-app" {
				t.Fatalf("accepted azp %s", azp)
			}
		}
		if nonce != "" {
			if s, ok := str("nonce"); !ok || s != nonce {
				t.Fatalf("accepted nonce %s for %q", c["nonce"], nonce)
			}
		}
		if accessToken != "" {
			sum := sha256.Sum256([]byte(accessToken))
			if s, ok := str("at_hash"); !ok || s != base64.RawURLEncoding.EncodeToString(sum[:16]) {
				t.Fatalf("accepted at_hash %s for the access token", c["at_hash"])
			}
		}
		if in.HasMaxAge {
			if a, ok := num("auth_time"); !ok || float64(t0.Unix())-a > (in.MaxAge+verify.DefaultLeeway).Seconds()+1 {
				t.Fatalf("accepted auth_time %s for max_age %v", c["auth_time"], in.MaxAge)
			}
		}
		if acr != "" {
			if s, ok := str("acr"); !ok || s != acr {
				t.Fatalf("accepted acr %s for %q", c["acr"], acr)
			}
		}
	})
}

// TestIDTokenWrongAudienceHint: the hint of an ID token's wrong_audience
// names the client IDs, not the access tokens' audiences.
func TestIDTokenWrongAudienceHint(t *testing.T) {
	v := newVerifier(t, verify.Options{Issuers: []verify.Issuer{idIssuer(allKeys(t), "")}})
	_, err := v.VerifyIDTokenAt(context.Background(), mintID("RS256", nil, map[string]any{"aud": "api://orders"}), t0, verify.IDTokenChecks{})
	var e *verify.Error
	if !errors.As(err, &e) {
		t.Fatalf("VerifyIDTokenAt() = %v, want a *verify.Error", err)
	}
	if e.Class != "wrong_audience" || !strings.Contains(e.Hint, clientID) || strings.Contains(e.Hint, aud) {
		t.Fatalf("VerifyIDTokenAt() = %v (hint %q), want wrong_audience with a hint naming the client IDs", err, e.Hint)
	}
}
