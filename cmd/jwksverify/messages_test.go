package main

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/internal/testkeys"
)

// twoIssuers are two issuers of jwks.json: one with an audience, so that
// a token of the other iss is unknown_issuer (not wrong_issuer).
const twoIssuers = `
issuers:
  - issuer: https://idp.test/
    jwks_file: jwks.json
    audiences: [api://orders]
  - issuer: https://other.test/
    jwks_file: jwks.json
`

// TestVerifyMessages: every message of `jwksverify verify` that used to
// withhold the fix, run through the binary. A hint names configuration, so
// it goes to standard error (the operator's), never into the JSON result.
func TestVerifyMessages(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	jwksFile := writeFile(t, dir, "jwks.json", testJWKS())
	srv := idpServer(t, testJWKS())
	valid := mintRS256(claimsAt("https://idp.test/", "api", now))
	slashless := mintRS256(claimsAt("https://idp.test", "api", now))
	cfg := writeFile(t, dir, "cfg.yaml", []byte(twoIssuers))
	tests := []struct {
		name       string
		args       []string
		want       int
		wantClass  string // the JSON result's error ("" for no result line)
		wantStderr []string
		wantStdout []string
		notStdout  []string
	}{
		{name: "bearer-prefix-is-removed-with-a-note", args: []string{"--jwks", jwksFile, "Bearer " + valid}, want: 0,
			wantStderr: []string{`removed the "Bearer " prefix`}},
		{name: "lower-case-bearer-prefix", args: []string{"--jwks", jwksFile, "bearer  " + valid}, want: 0,
			wantStderr: []string{`removed the "Bearer " prefix`}},
		{name: "only-one-bearer-prefix-is-removed", args: []string{"--jwks", jwksFile, "Bearer Bearer " + valid}, want: 1, wantClass: "malformed",
			wantStderr: []string{`removed the "Bearer " prefix`}},
		{name: "empty-token-argument", args: []string{"--jwks", jwksFile, ""}, want: 2,
			wantStderr: []string{"the TOKEN argument is empty"}},
		{name: "wrong-audience-names-the-typed-audience", args: []string{"--jwks", jwksFile, "--audience", "api://typed", valid}, want: 1, wantClass: "wrong_audience",
			wantStderr: []string{`hint: accepted audiences: ["api://typed"]`}, notStdout: []string{"api://typed"}},
		{name: "explain-row-carries-the-hint", args: []string{"--jwks", jwksFile, "--explain", "--audience", "api://typed", valid}, want: 1, wantClass: "wrong_audience",
			wantStdout: []string{`hint: accepted audiences: ["api://typed"]`}},
		{name: "wrong-audience-names-the-configured-audiences", args: []string{"--config", cfg, mintRS256(claimsAt("https://idp.test/", "api://other", now))}, want: 1, wantClass: "wrong_audience",
			wantStderr: []string{`configured audiences of "https://idp.test/": ["api://orders"]`}, notStdout: []string{"api://orders"}},
		{name: "trailing-slash-iss-near-miss", args: []string{"--config", cfg, slashless}, want: 1, wantClass: "unknown_issuer",
			wantStderr: []string{`iss "https://idp.test" nearly matches the configured issuer "https://idp.test/"`}, notStdout: []string{"nearly"}},
		{name: "sole-issuer-near-miss", args: []string{"--jwks", jwksFile, "--issuer", "https://idp.test/", slashless}, want: 1, wantClass: "wrong_issuer",
			wantStderr: []string{`nearly matches the configured issuer "https://idp.test/"`}},
		{name: "no-hint-for-another-issuer", args: []string{"--config", cfg, mintRS256(claimsAt("https://evil.test/", "api", now))}, want: 1, wantClass: "unknown_issuer",
			notStdout: []string{"nearly"}},
		{name: "discovery-implies-issuer", args: []string{"--discovery", srv.URL, mintRS256(claimsAt("https://evil.test/", "api", now))}, want: 1, wantClass: "wrong_issuer"},
		{name: "discovery-explain-checks-the-issuer", args: []string{"--discovery", srv.URL, "--explain", mintRS256(claimsAt(srv.URL, "api", now))}, want: 0,
			wantStdout: []string{"issuer"}, notStdout: []string{"SkipIssuerCheck"}},
		{name: "discovery-trailing-slash-token-without", args: []string{"--discovery", srv.URL + "/", mintRS256(claimsAt(srv.URL, "api", now))}, want: 1, wantClass: "wrong_issuer",
			wantStderr: []string{"nearly matches the configured issuer"}},
		{name: "discovery-document-names-another-issuer", args: []string{"--discovery", srv.URL + "/", mintRS256(claimsAt(srv.URL+"/", "api", now))}, want: 2,
			wantStderr: []string{"discovery issuer mismatch", "exactly as the discovery document writes it"}},
		{name: "discovery-404-is-not-an-outage", args: []string{"--discovery", srv.URL + "/nope", mintRS256(claimsAt(srv.URL+"/nope", "api", now))}, want: 2,
			wantStderr: []string{"404", "without /.well-known/openid-configuration"}},
		{name: "discovery-unreachable-is-an-outage", args: []string{"--discovery", "http://127.0.0.1:1", mintRS256(claimsAt("http://127.0.0.1:1", "api", now))}, want: 3, wantClass: "keys_unavailable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runBin(t, nil, "", append([]string{"verify"}, tt.args...)...)
			if r.code != tt.want {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", r.code, tt.want, r.stdout, r.stderr)
			}
			if tt.wantClass != "" {
				if got := decodeJSONLine(t, r.stdout); got["error"] != tt.wantClass {
					t.Errorf("error = %v, want %s", got["error"], tt.wantClass)
				}
			}
			for _, s := range tt.wantStderr {
				if !strings.Contains(r.stderr, s) {
					t.Errorf("stderr = %q, want it to contain %q", r.stderr, s)
				}
			}
			for _, s := range tt.wantStdout {
				if !strings.Contains(r.stdout, s) {
					t.Errorf("stdout = %q, want it to contain %q", r.stdout, s)
				}
			}
			for _, s := range tt.notStdout {
				if strings.Contains(r.stdout, s) {
					t.Errorf("stdout = %q holds %q: the JSON result is the caller's answer", r.stdout, s)
				}
			}
		})
	}
}

// TestServeMessages: the running service counts a request without a token
// as missing_token (not malformed) with the challenge of RFC 6750 §3.1, and
// logs, never answers, the configured audiences and a near-miss issuer.
func TestServeMessages(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "jwks.json", testJWKS())
	cfg := writeFile(t, dir, "cfg.yaml", []byte("listen: 127.0.0.1:0\nshutdown_timeout: 1s\n"+twoIssuers))
	p := startBin(t, nil, nil, "serve", "--config", cfg)
	addr, _ := p.waitLog(t, "listening")["http"].(string)
	base := "http://" + addr
	waitReadyz(t, base)
	now := time.Now()

	t.Run("missing-token", func(t *testing.T) {
		resp, err := http.Get(base + "/v1/authz")
		if err != nil {
			t.Fatal(err)
		}
		body := readAll(t, resp)
		if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") != `Bearer realm="jwksverify"` {
			t.Errorf("GET /v1/authz = %d %q, want 401 Bearer realm=\"jwksverify\"", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
		}
		if !strings.Contains(body, `"error":"missing_token"`) {
			t.Errorf("body = %q, want error missing_token", body)
		}
		line := p.waitLog(t, "token rejected")
		if line["class"] != "missing_token" {
			t.Errorf("log class = %v, want missing_token", line["class"])
		}
		mresp, err := http.Get(base + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		metrics := readAll(t, mresp)
		if !strings.Contains(metrics, `jwksverify_verify_total{class="missing_token",issuer="unknown"} 1`) {
			t.Errorf("/metrics does not count the request as missing_token")
		}
		if strings.Contains(metrics, `jwksverify_verify_total{class="malformed",issuer="unknown"} 1`) {
			t.Errorf("/metrics counts a request without a token as malformed")
		}
	})
	tests := []struct {
		name, token, class, hint, secret string
	}{
		{"wrong-audience", mintRS256(claimsAt("https://idp.test/", "api://other", now)), "wrong_audience",
			`configured audiences of "https://idp.test/": ["api://orders"]`, "api://orders"},
		{"trailing-slash-iss", mintRS256(claimsAt("https://idp.test", "api://orders", now)), "unknown_issuer",
			`iss "https://idp.test" nearly matches the configured issuer "https://idp.test/"`, "https://idp.test/"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := http.Post(base+"/v1/verify", "application/json", strings.NewReader(tokenBody(tt.token)))
			if err != nil {
				t.Fatal(err)
			}
			body := readAll(t, resp)
			if !strings.Contains(body, `"error":"`+tt.class+`"`) {
				t.Errorf("body = %q, want error %s", body, tt.class)
			}
			if strings.Contains(body, tt.secret) {
				t.Errorf("body = %q names the configuration (%s)", body, tt.secret)
			}
			line := p.waitLog(t, "token rejected")
			if hint, _ := line["hint"].(string); !strings.Contains(hint, tt.hint) {
				t.Errorf("log hint = %q, want it to contain %q", hint, tt.hint)
			}
		})
	}
}

// TestKeysMessages: `jwksverify keys` exits 2 for a source no retry mends
// and 3 for an outage, and counts in words that fit the number.
func TestKeysMessages(t *testing.T) {
	dir := t.TempDir()
	one := writeFile(t, dir, "one.json", testkeys.JWKS(testkeys.JWK{Key: testkeys.Private(testkeys.EC256A), Kid: "ec-a", Alg: "ES256", Use: "sig"}))
	srv := idpServer(t, testJWKS())
	tests := []struct {
		name       string
		args       []string
		want       int
		wantStdout string
		wantStderr string
	}{
		{"one-key", []string{"--jwks", one}, 0, ": 1 key, 1 usable, 0 skipped", ""},
		{"two-keys", []string{"--discovery", srv.URL}, 0, ": 2 keys, 2 usable, 0 skipped", ""},
		{"discovery-names-another-issuer", []string{"--discovery", srv.URL + "/"}, 2, "", "exactly as the discovery document writes it"},
		{"discovery-404", []string{"--discovery", srv.URL + "/nope"}, 2, "", "404"},
		{"discovery-unreachable", []string{"--discovery", "http://127.0.0.1:1"}, 3, "", "connect"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runBin(t, nil, "", append([]string{"keys"}, tt.args...)...)
			if r.code != tt.want || !strings.Contains(r.stdout, tt.wantStdout) || !strings.Contains(r.stderr, tt.wantStderr) {
				t.Errorf("keys %v: exit %d, want %d\nstdout: %s (want %q)\nstderr: %s (want %q)", tt.args, r.code, tt.want, r.stdout, tt.wantStdout, r.stderr, tt.wantStderr)
			}
		})
	}
}
