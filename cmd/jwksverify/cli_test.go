package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/cache"
	"github.com/jwksverify/jwksverify/internal/testkeys"
)

func TestExitCodes(t *testing.T) {
	dir := t.TempDir()
	jwksFile := writeFile(t, dir, "jwks.json", testJWKS())
	now := time.Now()
	valid := mintRS256(claimsAt("https://idp.test/", "api", now))
	expired := mintRS256(claimsAt("https://idp.test/", "api", now.Add(-3*time.Hour)))
	tests := []struct {
		name     string
		args     []string
		want     int
		wantOut  string // substring of stdout
		wantErrs string // substring of stderr
	}{
		{name: "no-args", args: nil, want: 2, wantErrs: "Usage"},
		{name: "unknown-command", args: []string{"frobnicate"}, want: 2, wantErrs: `unknown command "frobnicate"`},
		{name: "help", args: []string{"help"}, want: 0, wantOut: "Commands:"},
		{name: "help-verify", args: []string{"help", "verify"}, want: 0, wantOut: "--explain"},
		{name: "version", args: []string{"version"}, want: 0, wantOut: "go1."},
		{name: "verify-no-token", args: []string{"verify", "--jwks", jwksFile}, want: 2, wantErrs: "exactly one TOKEN"},
		{name: "verify-no-source", args: []string{"verify", valid}, want: 2, wantErrs: "exactly one of --config"},
		{name: "verify-two-sources", args: []string{"verify", "--jwks", jwksFile, "--pem", jwksFile, valid}, want: 2},
		{name: "verify-alg-none", args: []string{"verify", "--jwks", jwksFile, "--alg", "none", valid}, want: 2, wantErrs: "never accepted"},
		{name: "verify-bad-flag", args: []string{"verify", "--frob", valid}, want: 2},
		{name: "verify-valid", args: []string{"verify", "--jwks", jwksFile, valid}, want: 0, wantOut: `"valid":true`},
		{name: "verify-flags-after-token", args: []string{"verify", valid, "--jwks", jwksFile, "--audience", "api"}, want: 0, wantOut: `"valid":true`},
		{name: "verify-expired", args: []string{"verify", "--jwks", jwksFile, expired}, want: 1, wantOut: `"error":"expired"`},
		{name: "verify-missing-jwks-file", args: []string{"verify", "--jwks", dir + "/nope.json", valid}, want: 2},
		{name: "verify-keys-unavailable-exits-3", args: []string{"verify", "--jwks", "http://127.0.0.1:1/jwks", valid}, want: 3, wantOut: `"error":"keys_unavailable"`},
		{name: "serve-no-config", args: []string{"serve"}, want: 2, wantErrs: "--config"},
		{name: "serve-demo-and-config", args: []string{"serve", "--demo", "--config", jwksFile}, want: 2},
		{name: "keys-no-source", args: []string{"keys"}, want: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runBin(t, nil, "", tt.args...)
			if r.code != tt.want {
				t.Fatalf("jwksverify %v: exit %d, want %d\nstdout: %s\nstderr: %s", tt.args, r.code, tt.want, r.stdout, r.stderr)
			}
			if !strings.Contains(r.stdout, tt.wantOut) {
				t.Errorf("stdout = %q, want it to contain %q", r.stdout, tt.wantOut)
			}
			if !strings.Contains(r.stderr, tt.wantErrs) {
				t.Errorf("stderr = %q, want it to contain %q", r.stderr, tt.wantErrs)
			}
			if strings.Contains(r.stdout+r.stderr, valid) || strings.Contains(r.stdout+r.stderr, expired) {
				t.Errorf("the output echoes the token")
			}
		})
	}
}

func TestVerifyNow(t *testing.T) {
	dir := t.TempDir()
	jwksFile := writeFile(t, dir, "jwks.json", testJWKS())
	issued := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)
	old := mintRS256(claimsAt("https://idp.test/", "api", issued))
	tests := []struct {
		name      string
		now       string
		want      int
		wantClass string
	}{
		{name: "today-is-expired", now: "", want: 1, wantClass: "expired"},
		{name: "rfc3339-inside", now: "2020-01-02T03:34:05Z", want: 0},
		{name: "unix-inside", now: "1577934245", want: 0},
		{name: "before-nbf", now: "2020-01-02T02:00:00Z", want: 1, wantClass: "not_yet_valid"},
		{name: "after-exp-beyond-leeway", now: "2020-01-02T04:05:00Z", want: 1, wantClass: "expired"},
		{name: "unparsable", now: "yesterday", want: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := []string{"verify", "--jwks", jwksFile}
			if tt.now != "" {
				args = append(args, "--now", tt.now)
			}
			r := runBin(t, nil, "", append(args, old)...)
			if r.code != tt.want {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", r.code, tt.want, r.stdout, r.stderr)
			}
			if tt.want == 2 {
				return
			}
			got := decodeJSONLine(t, r.stdout)
			if tt.want == 0 && got["valid"] != true {
				t.Errorf("valid = %v, want true", got["valid"])
			}
			if tt.want == 1 && got["error"] != tt.wantClass {
				t.Errorf("error = %v, want %s", got["error"], tt.wantClass)
			}
		})
	}
}

func TestVerifyExplain(t *testing.T) {
	dir := t.TempDir()
	jwksFile := writeFile(t, dir, "jwks.json", testJWKS())
	now := time.Now()
	forged := testkeys.Mint("RS256", testkeys.Private(testkeys.RSA2048B), map[string]any{"kid": "rsa-a"},
		claimsAt("https://idp.test/", "api", now))
	tests := []struct {
		name      string
		token     string
		extra     []string
		wantCheck string // the failing check
		wantClass string
	}{
		{name: "expired", token: mintRS256(claimsAt("https://idp.test/", "api", now.Add(-2*time.Hour))), wantCheck: "exp", wantClass: "expired"},
		{name: "forged", token: forged, wantCheck: "signature", wantClass: "bad_signature"},
		{name: "wrong-audience", token: mintRS256(claimsAt("https://idp.test/", "api", now)), extra: []string{"--audience", "other"}, wantCheck: "aud", wantClass: "wrong_audience"},
		{name: "wrong-issuer", token: mintRS256(claimsAt("https://idp.test/", "api", now)), extra: []string{"--issuer", "https://other.test/"}, wantCheck: "issuer", wantClass: "wrong_issuer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"verify", "--explain", "--jwks", jwksFile}, tt.extra...)
			r := runBin(t, nil, "", append(args, tt.token)...)
			if r.code != 1 {
				t.Fatalf("exit %d, want 1\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
			}
			var failed []string
			for _, line := range strings.Split(r.stdout, "\n") {
				f := strings.Fields(line)
				if len(f) >= 3 && f[2] == "FAIL" {
					failed = append(failed, f[1])
				}
			}
			if len(failed) != 1 || failed[0] != tt.wantCheck {
				t.Errorf("failing checks = %v, want [%s]\n%s", failed, tt.wantCheck, r.stdout)
			}
			if !strings.Contains(r.stdout, "CHECK") {
				t.Errorf("no table header in\n%s", r.stdout)
			}
			if got := decodeJSONLine(t, r.stdout); got["error"] != tt.wantClass {
				t.Errorf("error = %v, want %s", got["error"], tt.wantClass)
			}
		})
	}
}

// lockedBuffer is a bytes.Buffer safe for concurrent writes: serve writes
// its stderr from the command and from the logger's goroutines (a
// fetcher's), which os.Stderr takes but a bare buffer does not.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// runApp runs the CLI in-process, with env as its environment.
func runApp(t *testing.T, env map[string]string, stdin string, args ...string) result {
	t.Helper()
	var out, errb lockedBuffer
	a := &app{
		stdout: &out, stderr: &errb, stdin: strings.NewReader(stdin),
		lookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok },
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	code := a.run(ctx, args)
	return result{stdout: out.String(), stderr: errb.String(), code: code}
}

// idpServer is a loopback OIDC issuer serving discovery and a JWKS.
func idpServer(t *testing.T, jwks []byte) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]string{"issuer": srv.URL, "jwks_uri": srv.URL + "/jwks"})
	})
	mux.HandleFunc("/jwks", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(jwks)
	})
	t.Cleanup(srv.Close)
	return srv
}

// TestVerifyConfigReadsOnlyTheTokensIssuer checks that verify --config does
// not wait for the keys of issuers the token cannot route to.
func TestVerifyConfigReadsOnlyTheTokensIssuer(t *testing.T) {
	release := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(hang.Close)
	t.Cleanup(func() { close(release) })
	dir := t.TempDir()
	writeFile(t, dir, "jwks.json", testJWKS())
	cfg := writeFile(t, dir, "cfg.yaml", []byte(`
issuers:
  - issuer: `+hang.URL+`
    discovery: true
    refresh: {fetch_timeout: 1m}
  - issuer: https://local.test/
    jwks_file: jwks.json
`))
	start := time.Now()
	r := runApp(t, nil, "", "verify", "--config", cfg, mintRS256(claimsAt("https://local.test/", "api", time.Now())))
	if r.code != 0 {
		t.Fatalf("exit %d, want 0\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("verify took %s: it waited for an issuer the token does not name", took)
	}
}

func pemFile(t *testing.T, dir, name, typ string, der []byte) string {
	t.Helper()
	return writeFile(t, dir, name, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}))
}

func TestVerifySources(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	jwksFile := writeFile(t, dir, "jwks.json", testJWKS())
	srv := idpServer(t, testJWKS())
	secretFile := writeFile(t, dir, "secret", testkeys.Secret())
	shortSecret := writeFile(t, dir, "short", []byte("too-short-secret"))
	octJWKS := writeFile(t, dir, "oct.json", testkeys.JWKS(testkeys.JWK{Key: testkeys.Secret(), Kid: "hs", Alg: "HS256"}))

	spki, err := x509.MarshalPKIXPublicKey(testkeys.Public(testkeys.RSA2048A))
	if err != nil {
		t.Fatal(err)
	}
	pubPEM := pemFile(t, dir, "pub.pem", "PUBLIC KEY", spki)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test"}, NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour)}
	certDER, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, testkeys.Public(testkeys.EC256A), testkeys.Private(testkeys.EC256A))
	if err != nil {
		t.Fatal(err)
	}
	certPEM := pemFile(t, dir, "cert.pem", "CERTIFICATE", certDER)
	privDER, err := x509.MarshalPKCS8PrivateKey(testkeys.Private(testkeys.EC256A))
	if err != nil {
		t.Fatal(err)
	}
	privPEM := pemFile(t, dir, "priv.pem", "PRIVATE KEY", privDER)

	iss := srv.URL
	rs := mintRS256(claimsAt(iss, "api", now))
	es := testkeys.Mint("ES256", testkeys.Private(testkeys.EC256A), map[string]any{"kid": "some-kid"}, claimsAt(iss, "api", now))
	hs := testkeys.Mint("HS256", testkeys.Secret(), map[string]any{"kid": "hs"}, claimsAt("internal", "api", now))
	hsNoKid := testkeys.Mint("HS256", testkeys.Secret(), nil, claimsAt("internal", "api", now))

	cfg := writeFile(t, dir, "cfg.yaml", []byte(`
issuers:
  - issuer: `+iss+`
    jwks_url: `+iss+`/jwks
    audiences: [api]
  - issuer: internal
    secret_file: secret
    secret_kid: hs
`))

	tests := []struct {
		name      string
		args      []string
		stdin     string
		want      int
		wantClass string
	}{
		{name: "jwks-file", args: []string{"--jwks", jwksFile, rs}, want: 0},
		{name: "jwks-url", args: []string{"--jwks", iss + "/jwks", "--issuer", iss, "--audience", "api", rs}, want: 0},
		{name: "discovery", args: []string{"--discovery", iss, "--issuer", iss, rs}, want: 0},
		{name: "discovery-unreachable", args: []string{"--discovery", "http://127.0.0.1:1", "--issuer", iss, rs}, want: 3, wantClass: "keys_unavailable"},
		{name: "jwks-url-refuses-hmac", args: []string{"--jwks", iss + "/jwks", hs}, want: 1, wantClass: "alg_not_allowed"},
		{name: "jwks-file-with-oct", args: []string{"--jwks", octJWKS, hs}, want: 0},
		{name: "secret-file-with-kid", args: []string{"--secret-file", secretFile, hs}, want: 0},
		{name: "secret-file-without-kid", args: []string{"--secret-file", secretFile, hsNoKid}, want: 0},
		{name: "secret-file-refuses-rsa", args: []string{"--secret-file", secretFile, rs}, want: 1, wantClass: "alg_not_allowed"},
		{name: "secret-file-too-short", args: []string{"--secret-file", shortSecret, hs}, want: 2},
		{name: "pem-public-key", args: []string{"--pem", pubPEM, rs}, want: 0},
		{name: "pem-certificate", args: []string{"--pem", certPEM, es}, want: 0},
		{name: "pem-wrong-key", args: []string{"--pem", pubPEM, es}, want: 1, wantClass: "alg_not_allowed"},
		{name: "pem-private-key-refused", args: []string{"--pem", privPEM, es}, want: 2},
		{name: "stdin", args: []string{"--jwks", jwksFile, "-"}, stdin: "  " + rs + "\n", want: 0},
		{name: "stdin-empty", args: []string{"--jwks", jwksFile, "-"}, stdin: "\n", want: 2},
		{name: "stdin-too-large", args: []string{"--jwks", jwksFile, "-"}, stdin: strings.Repeat("a", 40000), want: 1, wantClass: "token_too_large"},
		{name: "alg-allowlist", args: []string{"--jwks", jwksFile, "--alg", "ES256", rs}, want: 1, wantClass: "alg_not_allowed"},
		{name: "config-remote-issuer", args: []string{"--config", cfg, rs}, want: 0},
		{name: "config-secret-issuer", args: []string{"--config", cfg, hs}, want: 0},
		{name: "config-audience-override", args: []string{"--config", cfg, "--audience", "other", rs}, want: 1, wantClass: "wrong_audience"},
		{name: "config-unknown-issuer", args: []string{"--config", cfg, mintRS256(claimsAt("https://nobody.test/", "api", now))}, want: 1, wantClass: "unknown_issuer"},
		{name: "config-issuer-not-configured", args: []string{"--config", cfg, "--issuer", "nobody", rs}, want: 2},
		{name: "malformed", args: []string{"--jwks", jwksFile, "not.a.jwt"}, want: 1, wantClass: "malformed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runApp(t, nil, tt.stdin, append([]string{"verify"}, tt.args...)...)
			if r.code != tt.want {
				t.Fatalf("verify %v: exit %d, want %d\nstdout: %s\nstderr: %s", tt.args[:len(tt.args)-1], r.code, tt.want, r.stdout, r.stderr)
			}
			if tt.want == 2 {
				if r.stdout != "" || r.stderr == "" {
					t.Errorf("usage error: stdout %q, stderr %q; want the message on stderr only", r.stdout, r.stderr)
				}
				return
			}
			got := decodeJSONLine(t, r.stdout)
			if tt.want == 0 {
				if got["valid"] != true || got["claims"] == nil || got["header"] == nil {
					t.Errorf("result = %v, want valid with header and claims", got)
				}
				return
			}
			if got["valid"] != false || got["error"] != tt.wantClass {
				t.Errorf("result = %v, want valid:false error:%s", got, tt.wantClass)
			}
		})
	}
}

func TestKeys(t *testing.T) {
	dir := t.TempDir()
	weak := writeFile(t, dir, "weak.json", testkeys.JWKS(
		testkeys.JWK{Key: testkeys.Public(testkeys.RSA1024), Kid: "weak", Alg: "RS256"},
		testkeys.JWK{Key: testkeys.Public(testkeys.RSA2048A), Kid: "dup", Alg: "RS256"},
		testkeys.JWK{Key: testkeys.Public(testkeys.RSA2048B), Kid: "dup", Alg: "RS256"},
		testkeys.JWK{Key: testkeys.Public(testkeys.EC256A), Kid: "no-alg"},
	))
	encOnly := writeFile(t, dir, "enc.json", testkeys.JWKS(
		testkeys.JWK{Key: testkeys.Public(testkeys.RSA2048A), Kid: "enc", Alg: "RSA-OAEP", Use: "enc"},
	))
	srv := idpServer(t, testJWKS())

	tests := []struct {
		name     string
		args     []string
		want     int
		wantText []string // substrings of stdout
	}{
		{name: "keycloak-flags-enc-key", args: []string{"--jwks", "../../testdata/idp-jwks/keycloak.jwks.json"}, want: 0,
			wantText: []string{"nB0vgzwAcgJmjXwQZSzBMNkhoCaH4fvSwx5GC8Jq93c", "Q2O_f0Z7hVL1WUxKQbChyWK_FzQK-qRZh4Kg9mxxt_I", "enc", "1 usable"}},
		{name: "entra-no-alg", args: []string{"--jwks", "../../testdata/idp-jwks/entra-common.jwks.json"}, want: 0, wantText: []string{"no alg"}},
		{name: "google", args: []string{"--jwks", "../../testdata/idp-jwks/google.jwks.json"}, want: 0, wantText: []string{"RS256", "sig"}},
		{name: "weak-and-duplicate", args: []string{"--jwks", weak}, want: 0, wantText: []string{"weak", "duplicate kid", "no alg", "2048"}},
		{name: "enc-only-is-unusable", args: []string{"--jwks", encOnly}, want: 1, wantText: []string{"0 usable"}},
		{name: "url", args: []string{"--jwks", srv.URL + "/jwks"}, want: 0, wantText: []string{"rsa-a", "ec-a", "2 usable"}},
		{name: "discovery", args: []string{"--discovery", srv.URL}, want: 0, wantText: []string{"rsa-a", "EC/P-256"}},
		{name: "unreachable-exits-3", args: []string{"--jwks", "http://127.0.0.1:1/jwks"}, want: 3},
		{name: "both-sources", args: []string{"--jwks", encOnly, "--discovery", srv.URL}, want: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runApp(t, nil, "", append([]string{"keys"}, tt.args...)...)
			if r.code != tt.want {
				t.Fatalf("keys %v: exit %d, want %d\nstdout: %s\nstderr: %s", tt.args, r.code, tt.want, r.stdout, r.stderr)
			}
			for _, w := range tt.wantText {
				if !strings.Contains(r.stdout, w) {
					t.Errorf("output lacks %q:\n%s", w, r.stdout)
				}
			}
		})
	}
}

func TestKeysJSON(t *testing.T) {
	r := runBin(t, nil, "", "keys", "--json", "--jwks", "../../testdata/idp-jwks/keycloak.jwks.json")
	if r.code != 0 {
		t.Fatalf("exit %d, want 0: %s", r.code, r.stderr)
	}
	var rep keysReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, r.stdout)
	}
	if rep.Usable != 1 {
		t.Errorf("usable = %d, want 1", rep.Usable)
	}
	const encKid = "Q2O_f0Z7hVL1WUxKQbChyWK_FzQK-qRZh4Kg9mxxt_I"
	flagged := false
	for _, s := range rep.Skipped {
		flagged = flagged || (s.Kid == encKid && strings.Contains(s.Reason, "enc"))
	}
	for _, k := range rep.Keys {
		if k.Kid == encKid {
			flagged = flagged || !k.Usable
		}
		if k.Kid == "nB0vgzwAcgJmjXwQZSzBMNkhoCaH4fvSwx5GC8Jq93c" && (!k.Usable || k.Thumbprint == "" || k.Size != 2048) {
			t.Errorf("signing key = %+v, want usable, 2048 bits, with a thumbprint", k)
		}
	}
	if !flagged {
		t.Errorf("the Keycloak enc key %s is not flagged:\n%s", encKid, r.stdout)
	}
}

func TestVersion(t *testing.T) {
	r := runApp(t, nil, "", "version")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "jwksverify ") || !strings.Contains(r.stdout, "go1.") {
		t.Errorf("version = %d %q, want 0 and \"jwksverify <version> go1.x\"", r.code, r.stdout)
	}
}

// TestVerifyConfigNeedsNoServerSecrets: `verify --config` checks a token
// against the production config without the introspection clients' secrets,
// which only `serve` uses.
func TestVerifyConfigNeedsNoServerSecrets(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "jwks.json", testJWKS())
	cfg := writeFile(t, dir, "cfg.yaml", []byte(`
issuers:
  - issuer: https://local.test/
    jwks_file: jwks.json
introspection:
  clients: [{id: gateway, secret_env: JWKSVERIFY_TEST_UNSET_SECRET}]
`))
	r := runApp(t, nil, "", "verify", "--config", cfg, mintRS256(claimsAt("https://local.test/", "api", time.Now())))
	if r.code != 0 {
		t.Fatalf("verify --config exit %d, want 0\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	r = runApp(t, nil, "", "serve", "--config", cfg)
	if r.code != 2 || !strings.Contains(r.stderr, "JWKSVERIFY_TEST_UNSET_SECRET is not set") {
		t.Errorf("serve --config exit %d, stderr %q; want 2 naming the unset secret", r.code, r.stderr)
	}
}

// TestVerifyExplainDPoP checks that --dpop shows each DPoP check after the
// token's, and that a proof failing one is rejected with its class.
func TestVerifyExplainDPoP(t *testing.T) {
	dir := t.TempDir()
	jwksFile := writeFile(t, dir, "jwks.json", testJWKS())
	now := time.Now()
	k, err := cache.NewKey(testkeys.Public(testkeys.EC256B), cache.KeyMeta{})
	if err != nil {
		t.Fatal(err)
	}
	c := claimsAt("https://idp.test/", "api", now)
	c["cnf"] = map[string]any{"jkt": k.Thumbprint}
	token := mintRS256(c)
	sum := sha256.Sum256([]byte(token))
	proof := func(htm string) string {
		return testkeys.Mint("ES256", testkeys.Private(testkeys.EC256B),
			map[string]any{"typ": "dpop+jwt", "jwk": testkeys.JWKJSON(testkeys.JWK{Key: testkeys.Public(testkeys.EC256B)})},
			map[string]any{"jti": "cli-1", "htm": htm, "htu": "https://api.test/x", "iat": now.Unix(),
				"ath": base64.RawURLEncoding.EncodeToString(sum[:])})
	}
	tests := []struct {
		name      string
		proof     string
		wantCode  int
		wantFail  string
		wantClass string
	}{
		{"valid", proof("GET"), 0, "", ""},
		{"wrong-htm", proof("POST"), 1, "dpop-htm", "invalid_dpop_proof"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runBin(t, nil, "", "verify", "--explain", "--jwks", jwksFile, "--dpop", tt.proof, "--htm", "GET", "--htu", "https://api.test/x?y=1", token)
			if r.code != tt.wantCode {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", r.code, tt.wantCode, r.stdout, r.stderr)
			}
			if !strings.Contains(r.stdout, "dpop-jti") && tt.wantFail == "" {
				t.Errorf("no dpop-jti check in\n%s", r.stdout)
			}
			failed := ""
			for _, line := range strings.Split(r.stdout, "\n") {
				if f := strings.Fields(line); len(f) >= 3 && f[2] == "FAIL" {
					failed = f[1]
				}
			}
			if failed != tt.wantFail {
				t.Errorf("failing check %q, want %q in\n%s", failed, tt.wantFail, r.stdout)
			}
			if got := decodeJSONLine(t, r.stdout); tt.wantClass != "" && got["error"] != tt.wantClass {
				t.Errorf("error = %v, want %s", got["error"], tt.wantClass)
			}
		})
	}
}

// TestVerifyDPoPHonoursSenderConstraint: with --config, verify applies the
// issuer's sender_constraint as /v1/verify does: a DPoP-bound token needs
// its proof, an issuer whose dpop is required refuses an unbound token,
// and one whose dpop is off accepts a bound token as a bearer token without
// looking at --dpop.
func TestVerifyDPoPHonoursSenderConstraint(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "jwks.json", testJWKS())
	now := time.Now()
	k, err := cache.NewKey(testkeys.Public(testkeys.EC256B), cache.KeyMeta{})
	if err != nil {
		t.Fatal(err)
	}
	unbound := mintRS256(claimsAt("https://idp.test/", "api", now))
	c := claimsAt("https://idp.test/", "api", now)
	c["cnf"] = map[string]any{"jkt": k.Thumbprint}
	bound := mintRS256(c)
	proof := func(tok, htm string) string {
		sum := sha256.Sum256([]byte(tok))
		return testkeys.Mint("ES256", testkeys.Private(testkeys.EC256B),
			map[string]any{"typ": "dpop+jwt", "jwk": testkeys.JWKJSON(testkeys.JWK{Key: testkeys.Public(testkeys.EC256B)})},
			map[string]any{"jti": "cli-" + htm, "htm": htm, "htu": "https://api.test/x", "iat": now.Unix(),
				"ath": base64.RawURLEncoding.EncodeToString(sum[:])})
	}
	configFor := func(mode string) string {
		return writeFile(t, dir, mode+".yaml", []byte("issuers:\n  - issuer: https://idp.test/\n    jwks_file: jwks.json\n"+
			"    sender_constraint: {dpop: "+mode+"}\n"))
	}
	tests := []struct {
		name, mode, token, proof string
		wantCode                 int
		wantClass                string
	}{
		{"required-bound-with-proof", "required", bound, proof(bound, "GET"), 0, ""},
		{"required-bound-wrong-htm", "required", bound, proof(bound, "POST"), 1, "invalid_dpop_proof"},
		{"required-bound-without-proof", "required", bound, "", 1, "binding_mismatch"},
		{"required-unbound", "required", unbound, "", 1, "binding_mismatch"},
		{"optional-unbound", "optional", unbound, "", 0, ""},
		{"optional-bound-without-proof", "optional", bound, "", 1, "binding_mismatch"},
		{"off-bound-wrong-htm-not-checked", "off", bound, proof(bound, "POST"), 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := []string{"verify", "--config", configFor(tt.mode)}
			if tt.proof != "" {
				args = append(args, "--dpop", tt.proof, "--htm", "GET", "--htu", "https://api.test/x")
			}
			r := runApp(t, nil, "", append(args, tt.token)...)
			if r.code != tt.wantCode {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", r.code, tt.wantCode, r.stdout, r.stderr)
			}
			if got := decodeJSONLine(t, r.stdout); tt.wantClass != "" && got["error"] != tt.wantClass {
				t.Errorf("error = %v, want %s", got["error"], tt.wantClass)
			}
		})
	}
}
