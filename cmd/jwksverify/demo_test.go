package main

import (
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/cache"
	"github.com/jwksverify/jwksverify/jwks"
	"github.com/jwksverify/jwksverify/verify"
)

// TestDemoToken mints through the demo issuer's /token what the tour needs
// and verifies each with the demo's own policy: valid, expired, not yet
// valid, wrong audience, other scopes, ES256; bad parameters are refused.
func TestDemoToken(t *testing.T) {
	d, err := startDemoIssuer(slog.New(slog.DiscardHandler), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	set, err := jwks.Fetch(t.Context(), jwks.Options{Issuer: d.url, Discovery: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	keys := &cache.Keys{}
	keys.Store(set)
	v, err := verify.New(verify.Options{Issuers: []verify.Issuer{{Issuer: d.url, Keys: keys, Audiences: []string{demoAudience}, Algorithms: []string{"RS256", "ES256"}}}})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		query      string
		wantStatus int
		wantErr    error // of the verifier, nil: valid
		wantClaim  [2]string
	}{
		{name: "default", query: "", wantStatus: 200, wantClaim: [2]string{"scope", demoScope}},
		{name: "expired", query: "exp=-60", wantStatus: 200, wantErr: verify.ErrExpired},
		{name: "not-yet-valid", query: "nbf=600", wantStatus: 200, wantErr: verify.ErrNotYetValid},
		{name: "wrong-audience", query: "aud=someone-else", wantStatus: 200, wantErr: verify.ErrWrongAudience},
		{name: "scope", query: "scope=orders:read+orders:write", wantStatus: 200, wantClaim: [2]string{"scope", "orders:read orders:write"}},
		{name: "es256-sub", query: "alg=es256&sub=alice", wantStatus: 200, wantClaim: [2]string{"sub", "alice"}},
		{name: "bad-alg", query: "alg=HS256", wantStatus: 400},
		{name: "alg-none", query: "alg=none", wantStatus: 400},
		{name: "exp-not-a-number", query: "exp=soon", wantStatus: 400},
		{name: "exp-out-of-bounds", query: "exp=99999999999", wantStatus: 400},
		{name: "aud-too-long", query: "aud=" + strings.Repeat("a", demoMaxParam+1), wantStatus: 400},
		{name: "scope-control-char", query: "scope=" + url.QueryEscape("a\nb"), wantStatus: 400},
		{name: "sub-non-ascii", query: "sub=" + url.QueryEscape("é"), wantStatus: 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := http.Get(d.url + "/token?format=jwt&" + tt.query)
			if err != nil {
				t.Fatal(err)
			}
			body := readAll(t, resp)
			if resp.StatusCode != tt.wantStatus {
				t.Fatalf("GET /token?%s = %d %q, want %d", tt.query, resp.StatusCode, body, tt.wantStatus)
			}
			if tt.wantStatus != 200 {
				return
			}
			res, err := v.Verify(t.Context(), body) // exactly as served: no trailing newline
			if (tt.wantErr == nil) != (err == nil) || (tt.wantErr != nil && !errors.Is(err, tt.wantErr)) {
				t.Fatalf("Verify() = %v, want %v", err, tt.wantErr)
			}
			if tt.wantClaim[0] != "" && !strings.Contains(string(res.Claims), `"`+tt.wantClaim[0]+`":"`+tt.wantClaim[1]+`"`) {
				t.Errorf("claims %s, want %s=%q", res.Claims, tt.wantClaim[0], tt.wantClaim[1])
			}
		})
	}
}

func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// FuzzDemoRequest: whatever the form, parseDemoRequest either refuses it or
// returns bounded printable values, a known alg and offsets within bounds.
func FuzzDemoRequest(f *testing.F) {
	for _, s := range []string{"", "exp=-60", "aud=x&scope=a+b&alg=ES256", "nbf=9999999999", "sub=%00", "alg=none", "exp=1e3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, q string) {
		form, err := url.ParseQuery(q)
		if err != nil {
			return
		}
		req, err := parseDemoRequest(form)
		if err != nil {
			return
		}
		for _, v := range []string{req.sub, req.aud, req.scope} {
			if v == "" || len(v) > demoMaxParam {
				t.Fatalf("accepted %q", v)
			}
			for _, c := range []byte(v) {
				if c < 0x20 || c > 0x7e {
					t.Fatalf("accepted a non-printable byte in %q", v)
				}
			}
		}
		if _, ok := demoAlgs[req.alg]; !ok {
			t.Fatalf("accepted alg %q", req.alg)
		}
		if req.exp.Abs() > demoMaxOffset*time.Second || req.nbf.Abs() > demoMaxOffset*time.Second {
			t.Fatalf("accepted offsets %v, %v", req.exp, req.nbf)
		}
	})
}
