package integration

// Regression tests of the security review's findings (issue "A secure
// surface"), each through the real binary, with controls that show the
// legitimate request still works. JWKSVERIFY_E2E_BINARY=<main's build> shows
// each failing on the code before the fix.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/internal/testkeys"
)

// algNone is a forged token: alg none, sub admin.
const algNone = "eyJhbGciOiJub25lIn0.eyJzdWIiOiJhZG1pbiJ9."

// get sends a GET to url with headers and returns the status, headers and
// body.
func get(t *testing.T, c *http.Client, url string, headers map[string]string) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, body
}

// post sends body to url with headers and returns the status and body.
func post(t *testing.T, c *http.Client, url, body string, headers map[string]string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, out
}

// TestSurfaceNginxQueryToken: the query token verified is the one nginx
// forwards. Before, a token in X-Forwarded-Uri (a header the client sends
// and nginx passes to the auth subrequest) was verified while the upstream
// got the URL's; and a ';' hid a second access_token.
func TestSurfaceNginxQueryToken(t *testing.T) {
	px := startNginxWith(t, false, "", "token_sources: [{query: access_token}]\n")
	valid := px.issuer.Token(nil)
	tests := []struct {
		name       string
		uri        string
		headers    map[string]string
		wantStatus int
	}{
		{name: "valid-in-url", uri: "/orders/7?access_token=" + valid, wantStatus: 200},
		{name: "forged-in-url-valid-in-x-forwarded-uri", uri: "/orders/7?access_token=" + algNone,
			headers: map[string]string{"X-Forwarded-Uri": "/?access_token=" + valid}, wantStatus: 401},
		{name: "valid-only-in-x-forwarded-uri", uri: "/orders/7",
			headers: map[string]string{"X-Forwarded-Uri": "/?access_token=" + valid}, wantStatus: 401},
		{name: "semicolon-hides-forged", uri: "/orders/7?access_token=" + valid + "&access_token=" + algNone + ";", wantStatus: 401},
		{name: "escaped-name-forged", uri: "/orders/7?access_token=" + valid + "&access%5Ftoken=" + algNone, wantStatus: 401},
	}
	c := httpClient()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := px.upstream.Hits()
			status, _, body := get(t, c, px.URL+tc.uri, tc.headers)
			if status != tc.wantStatus {
				t.Fatalf("status = %d, want %d (body %q)", status, tc.wantStatus, body)
			}
			hits := px.upstream.Hits() - before
			if tc.wantStatus == 200 {
				var got echoed
				if err := json.Unmarshal(body, &got); err != nil || hits != 1 || !strings.Contains(got.URI, valid) {
					t.Fatalf("upstream got %q (hits %d), want the URI with the verified token", got.URI, hits)
				}
			} else if hits != 0 {
				t.Fatalf("upstream got %d requests, want 0", hits)
			}
		})
	}
}

// TestSurfaceCookieCountBeforeEmptiness: "t=; t=FORGED" is two cookies
// named t: malformed, even though the first is empty and a later source
// (Authorization) holds a valid token. Before, the empty first cookie made
// the cookie source look absent.
func TestSurfaceCookieCountBeforeEmptiness(t *testing.T) {
	is := newTestIssuer(t)
	jv := startJWKSVerify(t, "listen: 127.0.0.1:0\nshutdown_timeout: 1s\n"+
		"token_sources: [{cookie: t}, {header: Authorization, prefix: \"Bearer \"}]\nissuers:\n"+is.IssuerConfig())
	valid := is.Token(nil)
	tests := []struct {
		name       string
		headers    map[string]string
		wantStatus int
	}{
		{"cookie", map[string]string{"Cookie": "t=" + valid}, 200},
		{"authorization", map[string]string{"Authorization": "Bearer " + valid}, 200},
		{"empty-then-forged-cookie", map[string]string{"Cookie": "t=; t=" + algNone, "Authorization": "Bearer " + valid}, 401},
		{"forged-then-valid-cookie", map[string]string{"Cookie": "t=" + algNone + "; t=" + valid}, 401},
	}
	c := httpClient()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			status, h, body := get(t, c, "http://"+jv.HTTP+"/v1/authz", tc.headers)
			if status != tc.wantStatus {
				t.Fatalf("status = %d, want %d (body %q)", status, tc.wantStatus, body)
			}
			if status == 401 && !strings.Contains(h.Get("WWW-Authenticate"), "malformed") {
				t.Errorf("WWW-Authenticate = %q, want malformed", h.Get("WWW-Authenticate"))
			}
		})
	}
}

// TestSurfaceShortHMACKeys: an HMAC secret shorter than its hash never
// verifies, from jwks_file or `verify --jwks FILE`, and is listed as
// skipped. Before, a 1-byte key verified HS256 and a 32-byte key HS512.
func TestSurfaceShortHMACKeys(t *testing.T) {
	dir := t.TempDir()
	short, key32, key64 := []byte{0x42}, bytes.Repeat([]byte{7}, 32), bytes.Repeat([]byte{9}, 64)
	jwksFile := filepath.Join(dir, "hmac.jwks.json")
	doc := testkeys.JWKS(
		testkeys.JWK{Key: short, Kid: "short", Alg: "HS256"},
		testkeys.JWK{Key: key32, Kid: "hs512-32", Alg: "HS512"},
		testkeys.JWK{Key: key32, Kid: "ok256", Alg: "HS256"},
		testkeys.JWK{Key: key64, Kid: "ok512", Alg: "HS512"},
	)
	if err := os.WriteFile(jwksFile, doc, 0o600); err != nil {
		t.Fatal(err)
	}
	const iss = "internal-hmac"
	jv := startJWKSVerify(t, fmt.Sprintf("listen: 127.0.0.1:0\nshutdown_timeout: 1s\nissuers:\n  - issuer: %s\n    jwks_file: %s\n    algorithms: [HS256, HS512]\n", iss, jwksFile))
	claims := map[string]any{"iss": iss, "sub": "svc", "exp": time.Now().Add(time.Hour).Unix()}
	tests := []struct {
		name, alg, kid string
		key            []byte
		wantValid      bool
	}{
		{"1-byte-hs256", "HS256", "short", short, false},
		{"32-byte-hs512", "HS512", "hs512-32", key32, false},
		{"32-byte-hs256", "HS256", "ok256", key32, true},
		{"64-byte-hs512", "HS512", "ok512", key64, true},
	}
	c := httpClient()
	bin := jwksverifyBinary(t)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tok := testkeys.Mint(tc.alg, tc.key, map[string]any{"kid": tc.kid}, claims)
			status, body := post(t, c, "http://"+jv.HTTP+"/v1/verify", `{"token":"`+tok+`"}`, nil)
			var v struct{ Valid bool }
			if status != 200 || json.Unmarshal(body, &v) != nil || v.Valid != tc.wantValid {
				t.Fatalf("/v1/verify = %d %s, want valid %v", status, body, tc.wantValid)
			}
			cmd := exec.Command(bin, "verify", "--jwks", jwksFile, tok)
			out, err := cmd.CombinedOutput()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if (code == 0) != tc.wantValid {
				t.Fatalf("verify --jwks FILE: exit %d, want valid %v\n%s", code, tc.wantValid, out)
			}
		})
	}
	t.Run("listed-as-skipped", func(t *testing.T) {
		status, _, body := get(t, c, "http://"+jv.HTTP+"/v1/issuers", nil)
		if status != 200 {
			t.Fatalf("/v1/issuers = %d", status)
		}
		var doc struct {
			Issuers []struct {
				Keys    []struct{ Kid string }
				Skipped []struct{ Kid, Reason string }
			}
		}
		if err := json.Unmarshal(body, &doc); err != nil || len(doc.Issuers) != 1 {
			t.Fatalf("/v1/issuers: %v\n%s", err, body)
		}
		skipped := map[string]bool{}
		for _, s := range doc.Issuers[0].Skipped {
			skipped[s.Kid] = true
		}
		for _, k := range doc.Issuers[0].Keys {
			if k.Kid == "short" || k.Kid == "hs512-32" {
				t.Errorf("key %q is in the set, want it skipped", k.Kid)
			}
		}
		if !skipped["short"] || !skipped["hs512-32"] {
			t.Errorf("skipped = %v, want short and hs512-32", skipped)
		}
	})
	t.Run("keys-hides-oct-thumbprints", func(t *testing.T) {
		out, err := exec.Command(bin, "keys", "--jwks", jwksFile, "--json").Output()
		if err != nil {
			t.Fatalf("keys --json: %v\n%s", err, out)
		}
		if bytes.Contains(out, []byte(`"thumbprint"`)) {
			t.Errorf("keys --json prints an oct key's thumbprint:\n%s", out)
		}
	})
}

// TestSurfaceClaimValuesSentEmpty: a claim value that would need changing
// to become a header value is sent empty, never altered into one that
// reads as another (before: "ad\u0000min" and "admin\t" became "admin",
// ["eng admin"] became "eng admin").
func TestSurfaceClaimValuesSentEmpty(t *testing.T) {
	is := newTestIssuer(t)
	jv := startJWKSVerify(t, "listen: 127.0.0.1:0\nshutdown_timeout: 1s\nissuers:\n"+is.IssuerConfig())
	tests := []struct {
		name             string
		sub, scope       any
		wantSub, wantScp string
	}{
		{"normal", "admin", []string{"eng", "admin"}, "admin", "eng admin"},
		{"nul", "ad\u0000min", "a", "", "a"},
		{"tab", "admin\t", "a", "", "a"},
		{"surrounding-spaces", "  admin ", "a", "", "a"},
		{"del", "ad\u007fmin", "a", "", "a"},
		{"element-with-separator", "bob", []string{"eng admin"}, "bob", ""},
		{"element-with-unicode-space", "bob", []string{"eng\u00a0admin"}, "bob", ""},
		{"element-with-latin1-space-byte", "bob", []string{"users", "eng\u00e0admin"}, "bob", ""},
		{"over-1KiB", strings.Repeat("a", 1025), "a", "", "a"},
		{"exactly-1KiB", strings.Repeat("a", 1024), "a", strings.Repeat("a", 1024), "a"},
	}
	c := httpClient()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tok := is.Token(map[string]any{"sub": tc.sub, "scope": tc.scope})
			status, h, body := get(t, c, "http://"+jv.HTTP+"/v1/authz", map[string]string{"Authorization": "Bearer " + tok})
			if status != 200 {
				t.Fatalf("status = %d (%s)", status, body)
			}
			if got := h.Values("X-Auth-Subject"); len(got) != 1 || got[0] != tc.wantSub {
				t.Errorf("X-Auth-Subject = %q, want [%q]", got, tc.wantSub)
			}
			if got := h.Values("X-Auth-Scope"); len(got) != 1 || got[0] != tc.wantScp {
				t.Errorf("X-Auth-Scope = %q, want [%q]", got, tc.wantScp)
			}
		})
	}
}

// TestSurfaceBatchBoundWhileDecoding: a batch over batch.max_tokens is
// refused once the decoder reaches the bound, before the rest of the body
// is even sent. Before, the whole body (up to max_body_bytes) was decoded
// first: the request below, whose body never ends, was never answered.
func TestSurfaceBatchBoundWhileDecoding(t *testing.T) {
	is := newTestIssuer(t)
	jv := startJWKSVerify(t, "listen: 127.0.0.1:0\nshutdown_timeout: 1s\nlimits: {max_body_bytes: 16777216}\nbatch: {max_tokens: 100}\nissuers:\n"+is.IssuerConfig())
	c := httpClient()

	t.Run("control-at-the-bound", func(t *testing.T) {
		items := strings.TrimSuffix(strings.Repeat(`"`+is.Token(nil)+`",`, 100), ",")
		status, body := post(t, c, "http://"+jv.HTTP+"/v1/verify/batch", `{"tokens":[`+items+`]}`, nil)
		if status != 200 || strings.Count(string(body), `"valid":true`) != 100 {
			t.Fatalf("batch of 100 = %d, want 200 with 100 valid results", status)
		}
	})
	t.Run("over-the-bound-answered-mid-body", func(t *testing.T) {
		pr, pw := io.Pipe()
		defer pw.CloseWithError(io.ErrUnexpectedEOF)
		go func() {
			_, _ = pw.Write([]byte(`{"tokens":[` + strings.Repeat(`"a",`, 101)))
			// ... and the rest never comes (the writer is closed at the end).
		}()
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+jv.HTTP+"/v1/verify/batch", pr)
		if err != nil {
			t.Fatal(err)
		}
		req.ContentLength = 16 << 20
		resp, err := c.Do(req)
		if err != nil {
			t.Fatalf("POST: %v (no answer before the body ended)", err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "at most 100") {
			t.Fatalf("status = %d %s, want 400 'at most 100'", resp.StatusCode, body)
		}
	})
}

// TestSurfaceMessagesNameNoConfig: what a caller reads of a rejection names
// neither the configured issuer nor its audiences (before: "aud [...] has
// none of [api://orders]", "iss ... is not https://idp.e2e.example/").
func TestSurfaceMessagesNameNoConfig(t *testing.T) {
	is := newTestIssuer(t)
	jv := startJWKSVerify(t, "listen: 127.0.0.1:0\nshutdown_timeout: 1s\nissuers:\n"+is.IssuerConfig())
	c := httpClient()
	for _, tc := range []struct {
		name, class string
		over        map[string]any
	}{
		{"wrong-audience", "wrong_audience", map[string]any{"aud": "api://other"}},
		{"wrong-issuer", "wrong_issuer", map[string]any{"iss": "https://other.example/"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body := post(t, c, "http://"+jv.HTTP+"/v1/verify", `{"token":"`+is.Token(tc.over)+`"}`, nil)
			if status != 200 || !strings.Contains(string(body), `"error":"`+tc.class+`"`) {
				t.Fatalf("/v1/verify = %d %s, want %s", status, body, tc.class)
			}
			for _, secret := range []string{is.Issuer, is.Audience} {
				if strings.Contains(string(body), secret) {
					t.Errorf("the answer names the configured %q: %s", secret, body)
				}
			}
		})
	}
}
