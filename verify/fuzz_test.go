package verify_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/internal/testkeys"
	"github.com/jwksverify/jwksverify/verify"
)

// FuzzVerify feeds arbitrary tokens to a verifier (with its token cache on):
// it never panics, every error carries a class of exactly one family, a
// valid result's claims are a JSON object, and a second verify (a cache hit
// or not) agrees with the first, as does Explain.
func FuzzVerify(f *testing.F) {
	for _, alg := range testkeys.Algorithms {
		f.Add(mint(alg, kidFor(alg), nil))
	}
	f.Add(mint("ES256", "", nil))
	f.Add(signRaw(f, "HS256", `{"alg":"none"}`, `{"iss":"`+issA+`"}`))
	f.Add(signRaw(f, "HS256", `{"alg":"HS256","kid":"k-HS256","crit":["b64"]}`, `{"iss":"`+issA+`"}`))
	f.Add(signRaw(f, "HS256", `{"alg":"HS256","kid":"k-HS256"}`, `{"iss":"`+issA+`","aud":"`+aud+`","exp":1e400,"x":[[[{}]]]}`))
	f.Add(signRaw(f, "HS256", `{"alg":"HS256","kid":"k-HS256"}`, `{"iss":"`+issA+`","iss":"`+issB+`"}`))
	f.Add("e30.e30.")
	f.Add("..")
	f.Add("")
	v := newVerifier(f, verify.Options{
		Issuers:    []verify.Issuer{{Issuer: issA, Keys: allKeys(f), Audiences: []string{aud}, AllowHMAC: true, ExtractClaims: []string{"sub", "scp"}}},
		TokenCache: verify.TokenCacheOptions{MaxEntries: 64},
	})
	f.Fuzz(func(t *testing.T, token string) {
		ctx := context.Background()
		res, err := v.Verify(ctx, token)
		check(t, res, err)
		res2, err2 := v.Verify(ctx, token)
		check(t, res2, err2)
		if verify.Class(err) != verify.Class(err2) {
			t.Fatalf("Verify() twice = %v, then %v", err, err2)
		}
		_, res3, err3 := v.Explain(ctx, token)
		if verify.Class(err) != verify.Class(err3) || (res == nil) != (res3 == nil) {
			t.Fatalf("Explain() = %v, Verify() = %v", err3, err)
		}
	})
}

func check(t *testing.T, res *verify.Result, err error) {
	t.Helper()
	if err != nil {
		rejected, unavailable := errors.Is(err, verify.ErrRejected), errors.Is(err, verify.ErrUnavailable)
		if verify.Class(err) == "" || rejected == unavailable || res != nil {
			t.Fatalf("Verify() = %v, %v: want a classed error of one family and no result", res, err)
		}
		return
	}
	if !json.Valid(res.Claims) || !bytes.HasPrefix(bytes.TrimLeft(res.Claims, " \t\r\n"), []byte("{")) {
		t.Fatalf("Verify() Claims = %q, want a JSON object", res.Claims)
	}
	if res.Issuer != issA || res.ExpiresAt.Before(t0.Add(-time.Minute)) {
		t.Fatalf("Verify() = %+v, want iss %s and a live exp", res, issA)
	}
	for k, val := range res.Extracted {
		if strings.ContainsAny(val, "\r\n\x00") || len(val) > verify.MaxExtractedLen {
			t.Fatalf("Extracted[%q] = %q: control characters or too long", k, val)
		}
	}
}

// FuzzVerifyJSON signs arbitrary header and claims JSON (HS256) so that the
// fuzzer reaches the parser behind the signature, and checks the decoded
// registered claims against encoding/json.
func FuzzVerifyJSON(f *testing.F) {
	f.Add(`{"alg":"HS256","kid":"k-HS256"}`, `{"iss":"`+issA+`","aud":["x","`+aud+`"],"exp":1.9e9,"sub":"a\u00e9"}`)
	f.Add(`{"alg":"HS256"}`, `{"iss":"`+issA+`","aud":"`+aud+`","exp":1900000000,"scp":["a","b"],"sub":7}`)
	f.Add(`{"alg":"HS256","typ":"JWT","crit":[]}`, `{}`)
	f.Add(`{"alg":"HS256","kid":"k-HS256","kid":"x"}`, `[]`)
	v := newVerifier(f, verify.Options{
		Issuers: []verify.Issuer{{Issuer: issA, Keys: allKeys(f), Audiences: []string{aud}, AllowHMAC: true, ExtractClaims: []string{"sub", "scp"}}},
	})
	f.Fuzz(func(t *testing.T, header, payload string) {
		res, err := v.Verify(context.Background(), signRaw(t, "HS256", header, payload))
		check(t, res, err)
		if err != nil {
			return
		}
		// Claim names are case-sensitive (RFC 7519 §4): decode into a map,
		// not a struct, whose fields encoding/json matches case-insensitively
		// ("suB" would count as "sub").
		var std map[string]json.RawMessage
		if err := json.Unmarshal(res.Claims, &std); err != nil {
			t.Fatalf("encoding/json rejects claims the verifier accepted: %v", err)
		}
		var iss, sub string
		_ = json.Unmarshal(std["iss"], &iss)
		_ = json.Unmarshal(std["sub"], &sub)
		if iss != res.Issuer || sub != res.Subject {
			t.Fatalf("Verify() iss %q sub %q, encoding/json says %q %q", res.Issuer, res.Subject, iss, sub)
		}
	})
}
