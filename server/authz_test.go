package server

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/jwksverify/jwksverify/cache"
	"github.com/jwksverify/jwksverify/request"
	"github.com/jwksverify/jwksverify/verify"
)

func authzRequest(method, target, token string) *http.Request {
	r := httptest.NewRequest(method, target, nil)
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	return r
}

func TestAuthz(t *testing.T) {
	e := newEnv(t, envConfig{})
	toks := tokens()
	tests := []struct {
		name       string
		req        *http.Request
		wantStatus int
		wantWWW    string
	}{
		{name: "valid", req: authzRequest(http.MethodGet, "/v1/authz", toks["valid"]), wantStatus: http.StatusOK},
		{name: "valid-envoy-path", req: authzRequest(http.MethodPost, "/v1/authz/orders/42?x=1", toks["valid"]), wantStatus: http.StatusOK},
		{name: "valid-odd-path", req: authzRequest(http.MethodDelete, "/v1/authz//a/../b", toks["valid"]), wantStatus: http.StatusOK},
		{name: "expired", req: authzRequest(http.MethodGet, "/v1/authz", toks["expired"]), wantStatus: http.StatusUnauthorized, wantWWW: `Bearer error="invalid_token", error_description="expired"`},
		{name: "wrong-audience", req: authzRequest(http.MethodGet, "/v1/authz", toks["wrong-audience"]), wantStatus: http.StatusUnauthorized, wantWWW: `Bearer error="invalid_token", error_description="wrong_audience"`},
		{name: "bad-signature", req: authzRequest(http.MethodGet, "/v1/authz", toks["bad-signature"]), wantStatus: http.StatusUnauthorized, wantWWW: `Bearer error="invalid_token", error_description="bad_signature"`},
		{name: "unknown-kid", req: authzRequest(http.MethodGet, "/v1/authz", toks["unknown-kid"]), wantStatus: http.StatusUnauthorized, wantWWW: `Bearer error="invalid_token", error_description="unknown_kid"`},
		{name: "keys-unavailable", req: authzRequest(http.MethodGet, "/v1/authz", toks["keys-unavailable"]), wantStatus: http.StatusServiceUnavailable},
		{name: "no-token", req: authzRequest(http.MethodGet, "/v1/authz", ""), wantStatus: http.StatusUnauthorized, wantWWW: `Bearer realm="jwksverify"`},
		{name: "basic-credentials", req: func() *http.Request {
			r := authzRequest(http.MethodGet, "/v1/authz", "")
			r.SetBasicAuth("u", "p")
			return r
		}(), wantStatus: http.StatusUnauthorized, wantWWW: `Bearer realm="jwksverify"`},
		{name: "two-authorization-headers", req: func() *http.Request {
			r := authzRequest(http.MethodGet, "/v1/authz", toks["valid"])
			r.Header.Add("Authorization", "Bearer "+toks["expired"])
			return r
		}(), wantStatus: http.StatusUnauthorized, wantWWW: `Bearer error="invalid_token", error_description="malformed"`},
		{name: "lowercase-scheme", req: func() *http.Request {
			r := httptest.NewRequest(http.MethodGet, "/v1/authz", nil)
			r.Header.Set("Authorization", "bearer "+toks["valid"])
			return r
		}(), wantStatus: http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := do(e.handler, tt.req)
			if w.Code != tt.wantStatus {
				t.Fatalf("status = %d, want %d (body %s)", w.Code, tt.wantStatus, w.Body)
			}
			if got := w.Header().Get("WWW-Authenticate"); got != tt.wantWWW {
				t.Errorf("WWW-Authenticate = %q, want %q", got, tt.wantWWW)
			}
			if tt.wantStatus == http.StatusOK {
				if w.Body.Len() != 0 {
					t.Errorf("allow body = %q, want empty", w.Body)
				}
				if got := w.Header().Get("X-Auth-Subject"); got != "alice" {
					t.Errorf("X-Auth-Subject = %q, want alice", got)
				}
				if got := w.Header().Get("X-Auth-Scope"); got != "orders:read orders:write" {
					t.Errorf("X-Auth-Scope = %q, want the scope", got)
				}
				if got := w.Header().Get("x-envoy-auth-headers-to-remove"); got != "authorization" {
					t.Errorf("x-envoy-auth-headers-to-remove = %q, want authorization", got)
				}
			}
			for _, tok := range toks {
				if strings.Contains(w.Body.String(), tok) {
					t.Errorf("response echoes a token")
				}
			}
			checkGolden(t, "authz-"+tt.name, w)
		})
	}
}

func TestAuthzAbsentClaimOverwritesForgedHeader(t *testing.T) {
	e := newEnv(t, envConfig{})
	w := do(e.handler, authzRequest(http.MethodGet, "/v1/authz", mint(claims(map[string]any{"scope": nil}))))
	if w.Code != http.StatusOK {
		t.Fatalf("status = %d, want 200", w.Code)
	}
	if v, ok := w.Header()["X-Auth-Scope"]; !ok || len(v) != 1 || v[0] != "" {
		t.Errorf("X-Auth-Scope = %q (present %v), want present and empty", v, ok)
	}
}

func TestAuthzTokenSources(t *testing.T) {
	toks := tokens()
	valid := toks["valid"]
	sources := []TokenSource{
		{Header: "X-Token"},
		{Cookie: "session"},
		{Query: "access_token"},
		{Header: "Authorization", Prefix: "Bearer "},
	}
	e := newEnv(t, envConfig{sources: sources, proxy: request.Envoy})
	tests := []struct {
		name       string
		setup      func(r *http.Request)
		target     string
		wantStatus int
		wantWWW    string
	}{
		{name: "header-without-prefix", setup: func(r *http.Request) { r.Header.Set("X-Token", valid) }, wantStatus: http.StatusOK},
		{name: "cookie", setup: func(r *http.Request) { r.AddCookie(&http.Cookie{Name: "session", Value: valid}) }, wantStatus: http.StatusOK},
		{name: "two-cookies", setup: func(r *http.Request) {
			r.AddCookie(&http.Cookie{Name: "session", Value: valid})
			r.AddCookie(&http.Cookie{Name: "session", Value: "other"})
		}, wantStatus: http.StatusUnauthorized, wantWWW: `Bearer error="invalid_token", error_description="malformed"`},
		{name: "query", target: "/v1/authz/x?access_token=" + valid, wantStatus: http.StatusOK},
		{name: "query-twice", target: "/v1/authz/x?access_token=" + valid + "&access_token=" + valid, wantStatus: http.StatusUnauthorized, wantWWW: `Bearer error="invalid_token", error_description="malformed"`},
		// Envoy's preset reads the forwarded request itself: another
		// preset's header is a client's, never read.
		{name: "forwarded-uri-ignored", setup: func(r *http.Request) { r.Header.Set("X-Forwarded-Uri", "/app?a=1&access_token="+valid) }, wantStatus: http.StatusUnauthorized, wantWWW: `Bearer realm="jwksverify"`},
		{name: "original-uri-ignored", setup: func(r *http.Request) { r.Header.Set("X-Original-URI", "/app?access_token="+valid) }, wantStatus: http.StatusUnauthorized, wantWWW: `Bearer realm="jwksverify"`},
		{name: "authorization-last", setup: func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+valid) }, wantStatus: http.StatusOK},
		// RFC 6750 §2: one method per request; the upstream could read either.
		{name: "two-sources-malformed", setup: func(r *http.Request) {
			r.Header.Set("X-Token", toks["expired"])
			r.Header.Set("Authorization", "Bearer "+valid)
		}, wantStatus: http.StatusUnauthorized, wantWWW: `Bearer error="invalid_token", error_description="malformed"`},
		{name: "none", wantStatus: http.StatusUnauthorized, wantWWW: `Bearer realm="jwksverify"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			target := tt.target
			if target == "" {
				target = "/v1/authz"
			}
			r := httptest.NewRequest(http.MethodGet, target, nil)
			if tt.setup != nil {
				tt.setup(r)
			}
			w := do(e.handler, r)
			if w.Code != tt.wantStatus {
				t.Fatalf("status = %d, want %d (body %s)", w.Code, tt.wantStatus, w.Body)
			}
			if got := w.Header().Get("WWW-Authenticate"); got != tt.wantWWW {
				t.Errorf("WWW-Authenticate = %q, want %q", got, tt.wantWWW)
			}
		})
	}
}

// TestAuthzHeaderInjection checks that a claim with CR/LF never produces a
// header line of its own, in the recorder and on the wire.
func TestAuthzHeaderInjection(t *testing.T) {
	e := newEnv(t, envConfig{})
	tok := mint(claims(map[string]any{"sub": "alice\r\nX-Injected: 1", "scope": "a\nb\rc\x00d"}))

	w := do(e.handler, authzRequest(http.MethodGet, "/v1/authz", tok))
	if w.Code != http.StatusOK {
		t.Fatalf("status = %d, want 200", w.Code)
	}
	for k, vs := range w.Header() {
		for _, v := range vs {
			if strings.ContainsAny(k+v, "\r\n") {
				t.Errorf("header %q: %q holds CR/LF", k, v)
			}
		}
	}
	if _, ok := w.Header()["X-Injected"]; ok {
		t.Errorf("a claim injected the header X-Injected")
	}

	ts := httptest.NewServer(e.handler)
	defer ts.Close()
	req, _ := http.NewRequest(http.MethodGet, ts.URL+"/v1/authz", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("wire status = %d, want 200", resp.StatusCode)
	}
	if resp.Header.Get("X-Injected") != "" {
		t.Errorf("a claim injected the header X-Injected on the wire")
	}
	if got := resp.Header.Get("X-Auth-Subject"); strings.ContainsAny(got, "\r\n") {
		t.Errorf("X-Auth-Subject = %q holds CR/LF", got)
	}
}

// TestAuthzWireFormat reads the raw response of an allow over a real
// connection: exactly 200 and an empty body.
func TestAuthzWireFormat(t *testing.T) {
	e := newEnv(t, envConfig{})
	ts := httptest.NewServer(e.handler)
	defer ts.Close()
	conn, err := net.Dial("tcp", ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_, _ = io.WriteString(conn, "GET /v1/authz/app HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "+tokens()["valid"]+"\r\nConnection: close\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || len(body) != 0 || resp.ContentLength != 0 {
		t.Errorf("allow = %d, body %q, length %d; want 200, empty, 0", resp.StatusCode, body, resp.ContentLength)
	}
}

func TestDecideUnclassifiedErrorFailsClosed(t *testing.T) {
	e := newEnv(t, envConfig{})
	tests := []struct {
		name       string
		err        error
		wantStatus int
		wantClass  string
	}{
		{"unclassified", errors.New("surprise"), http.StatusServiceUnavailable, "keys_unavailable"},
		{"family-without-class", fmt.Errorf("%w: odd", verify.ErrRejected), http.StatusServiceUnavailable, "keys_unavailable"},
		{"unavailable-family", fmt.Errorf("%w: odd", verify.ErrUnavailable), http.StatusServiceUnavailable, "keys_unavailable"},
		{"expired-sentinel", verify.ErrExpired, http.StatusUnauthorized, "expired"},
		{"typed-expired", &verify.Error{Class: "expired", Issuer: issuerA, Kid: "k", Err: verify.ErrExpired}, http.StatusUnauthorized, "expired"},
		{"wrapped-typed", fmt.Errorf("outer: %w", &verify.Error{Class: "bad_signature", Err: verify.ErrBadSignature}), http.StatusUnauthorized, "bad_signature"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := e.srv.Decide(context.Background(), &Call{Endpoint: EndpointGRPC, ReadErr: tt.err})
			if d.Allowed() || d.Status != tt.wantStatus || d.Class != tt.wantClass {
				t.Errorf("reject(%v) = %d %q, want %d %q", tt.err, d.Status, d.Class, tt.wantStatus, tt.wantClass)
			}
			if (d.Challenge != "") != (tt.wantStatus == http.StatusUnauthorized) || len(d.Body) == 0 {
				t.Errorf("reject(%v): Challenge %q, Body %q; want a challenge exactly for a 401, and a body", tt.err, d.Challenge, d.Body)
			}
		})
	}
}

func TestLeaksToken(t *testing.T) {
	tok := mint(claims(nil))
	h, rest, _ := strings.Cut(tok, ".")
	_, sig, _ := strings.Cut(rest, ".")
	tests := []struct {
		name string
		msg  string
		want bool
	}{
		{name: "whole-token", msg: "bad: " + tok, want: true},
		{name: "header-segment", msg: "bad header " + h, want: true},
		{name: "signature-segment", msg: "sig " + sig, want: true},
		{name: "clean", msg: "expired: token expired 1h ago", want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := leaksToken(tt.msg, tok); got != tt.want {
				t.Errorf("leaksToken() = %v, want %v", got, tt.want)
			}
		})
	}
	if got := safeMessage(errors.New("x "+tok), "malformed", tok); got != "malformed" {
		t.Errorf("safeMessage() = %q, want the class", got)
	}
}

// TestIssuerLabelIsTheVerifiers checks that every decision is recorded
// under the configured issuer the verifier named (Result.ConfiguredIssuer,
// verify.Error.Issuer), and under "unknown" when it named none: never a raw
// iss, and for a template, the template.
func TestIssuerLabelIsTheVerifiers(t *testing.T) {
	const tmpl = "https://login.example.com/{tenantid}/v2.0"
	keys := &cache.Keys{}
	keys.Store(keySet(t, epoch))
	clock := newClock()
	v, err := verify.New(verify.Options{
		Issuers: []verify.Issuer{{Issuer: issuerA, Keys: keys}, {Issuer: tmpl, Keys: keys}},
		Now:     clock.Now,
	})
	if err != nil {
		t.Fatal(err)
	}
	m := &recordedMetrics{}
	srv, err := New(Options{Verifier: v, Metrics: m, Logger: slog.New(slog.DiscardHandler), Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, iss, tid, wantLabel, wantClass string
	}{
		{"exact", issuerA, "", issuerA, ClassValid},
		{"template", "https://login.example.com/1234-abcd/v2.0", "1234-abcd", tmpl, ClassValid},
		{"template-tid-mismatch", "https://login.example.com/1234-abcd/v2.0", "other", tmpl, "wrong_issuer"},
		{"template-two-segments", "https://login.example.com/a/b/v2.0", "a/b", UnknownIssuer, "unknown_issuer"},
		{"template-empty-tenant", "https://login.example.com//v2.0", "", UnknownIssuer, "unknown_issuer"},
		{"long-raw-iss", "https://attacker.example/" + strings.Repeat("x", 100), "", UnknownIssuer, "unknown_issuer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := claims(map[string]any{"iss": tt.iss, "aud": nil})
			if tt.tid != "" {
				c["tid"] = tt.tid
			}
			before := m.count(EndpointAuthz, tt.wantLabel, tt.wantClass)
			d := srv.Decide(context.Background(), &Call{Endpoint: EndpointAuthz, Token: mint(c)})
			if d.Issuer != tt.wantLabel || d.Class != strings.TrimPrefix(tt.wantClass, ClassValid) {
				t.Errorf("Decide() issuer %q class %q, want %q %q", d.Issuer, d.Class, tt.wantLabel, tt.wantClass)
			}
			if got := m.count(EndpointAuthz, tt.wantLabel, tt.wantClass) - before; got != 1 {
				t.Errorf("recorded %d decisions under (%s, %s), want 1", got, tt.wantLabel, tt.wantClass)
			}
		})
	}
	if n := m.total(); n != len(tests) {
		t.Errorf("recorded %d decisions, want %d: one each", n, len(tests))
	}
}

// TestAuthzClaimHeadersFollowVerifierRouting: of two {tenantid} templates
// that both fit a token's iss, the verifier picks the one whose tenant is the
// token's tid, and the claim headers (and metric label) are that issuer's —
// not those of the first template the iss fits.
func TestAuthzClaimHeadersFollowVerifierRouting(t *testing.T) {
	const wide, narrow = "https://login.example.com/{tenantid}/v2.0", "https://login.example.com/t-{tenantid}/v2.0"
	keys := &cache.Keys{}
	keys.Store(keySet(t, epoch))
	clock := newClock()
	v, err := verify.New(verify.Options{
		Issuers: []verify.Issuer{{Issuer: wide, Keys: keys, ExtractClaims: []string{"sub"}}, {Issuer: narrow, Keys: keys, ExtractClaims: []string{"sub"}}},
		Now:     clock.Now,
	})
	if err != nil {
		t.Fatalf("verify.New() = %v", err)
	}
	srv, err := New(Options{
		Verifier: v,
		ClaimsToHeaders: map[string]map[string]string{
			wide:   {"sub": "X-Wide-Subject"},
			narrow: {"sub": "X-Narrow-Subject"},
		},
		Logger: slog.New(slog.DiscardHandler),
		Now:    clock.Now,
	})
	if err != nil {
		t.Fatalf("New() = %v", err)
	}
	tests := []struct {
		name, tid, wantHeader, otherHeader string
	}{
		{"narrow", "abc", "X-Narrow-Subject", "X-Wide-Subject"},
		{"wide", "t-abc", "X-Wide-Subject", "X-Narrow-Subject"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tok := mint(claims(map[string]any{"iss": "https://login.example.com/t-abc/v2.0", "tid": tt.tid, "aud": nil}))
			r := httptest.NewRequest(http.MethodGet, "/v1/authz", nil)
			r.Header.Set("Authorization", "Bearer "+tok)
			w := do(srv.Handler(), r)
			if w.Code != http.StatusOK {
				t.Fatalf("status = %d, want 200 (body %s)", w.Code, w.Body)
			}
			if got := w.Header().Get(tt.wantHeader); got != "alice" {
				t.Errorf("%s = %q, want alice", tt.wantHeader, got)
			}
			if got := w.Header().Get(tt.otherHeader); got != "" {
				t.Errorf("%s = %q, want none (the other issuer's header)", tt.otherHeader, got)
			}
		})
	}
}

// TestClaimValueControlBytes holds claimValue to a header value's rules:
// a lone CR, a lone LF, NUL and DEL make the header empty; HTAB and
// bytes above 0x7F (obs-text) are kept.
func TestClaimValueControlBytes(t *testing.T) {
	for _, tt := range []struct {
		v, want string
	}{
		{"alice", "alice"},
		{"a\rb", ""},
		{"a\nb", ""},
		{"a\r\nb", ""},
		{"a\x00b", ""},
		{"a\x7fb", ""},
		{"a\tb c", "a\tb c"},
		{"caf\xc3\xa9", "caf\xc3\xa9"},
	} {
		t.Run(fmt.Sprintf("%q", tt.v), func(t *testing.T) {
			d := Decision{Result: &verify.Result{Extracted: map[string]string{"sub": tt.v}}}
			if got := d.claimValue("sub"); got != tt.want {
				t.Errorf("claimValue(%q) = %q, want %q", tt.v, got, tt.want)
			}
		})
	}
}
