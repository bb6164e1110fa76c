package integration

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// hydra is a real Ory Hydra v2.3.0 on loopback (in-memory DSN), with a
// counting reverse proxy in front of its admin port for introspection.
type hydra struct {
	proc          *process
	public, admin string // base URLs
	issuer        string // as its discovery document says
	introspect    string // the counting proxy's introspection URL
	calls         atomic.Int64
}

// startHydra runs `hydra serve all --dev` (plain HTTP on loopback), with
// env added to its environment (Hydra reads its configuration keys from
// it: OAUTH2_ALLOWED_TOP_LEVEL_CLAIMS=sid). The binary comes from .ci/run
// (go install of github.com/ory/hydra/v2 v2.3.0).
func startHydra(t *testing.T, env ...string) *hydra {
	t.Helper()
	bin := requireTool(t, "hydra", "(none: .ci/run installs it with the Go toolchain from .ci/hydra)")
	pub, adm := freePort(t), freePort(t)
	h := &hydra{public: fmt.Sprintf("http://127.0.0.1:%d", pub), admin: fmt.Sprintf("http://127.0.0.1:%d", adm)}
	cmd := exec.Command(bin, "serve", "all", "--dev")
	cmd.Env = append(os.Environ(),
		"DSN=memory",
		"URLS_SELF_ISSUER="+h.public+"/",
		fmt.Sprintf("SERVE_PUBLIC_PORT=%d", pub), "SERVE_PUBLIC_HOST=127.0.0.1",
		fmt.Sprintf("SERVE_ADMIN_PORT=%d", adm), "SERVE_ADMIN_HOST=127.0.0.1",
		"LOG_LEVEL=warn", "SQA_OPT_OUT=true",
		"SECRETS_SYSTEM=integration-test-system-secret-0123456789",
	)
	cmd.Env = append(cmd.Env, env...)
	h.proc = startProcess(t, "hydra", cmd)
	waitTCP(t, h.proc, fmt.Sprintf("127.0.0.1:%d", pub))
	waitTCP(t, h.proc, fmt.Sprintf("127.0.0.1:%d", adm))

	// Hydra creates its signing keys (RSA 4096) on first use, which takes
	// seconds on a loaded machine: ask until discovery and the JWKS answer.
	waitFor(t, 90*time.Second, "Hydra discovery and keys", func() bool {
		var disc struct {
			Issuer string `json:"issuer"`
		}
		var keys struct {
			Keys []any `json:"keys"`
		}
		h.getJSON(t, h.public+"/.well-known/openid-configuration", &disc)
		h.getJSON(t, h.public+"/.well-known/jwks.json", &keys)
		h.issuer = disc.Issuer
		return h.issuer != "" && len(keys.Keys) > 0
	})

	target, _ := url.Parse(h.admin)
	rp := httputil.NewSingleHostReverseProxy(target)
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/introspect") {
			h.calls.Add(1)
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(proxy.Close)
	h.introspect = proxy.URL + "/admin/oauth2/introspect"
	return h
}

func (h *hydra) getJSON(t *testing.T, u string, out any) {
	t.Helper()
	c := httpClient()
	c.Timeout = 30 * time.Second // the first answers wait for Hydra's key generation
	resp, err := c.Get(u)
	if err != nil {
		return // out stays zero: callers poll
	}
	defer resp.Body.Close()
	json.NewDecoder(resp.Body).Decode(out) // a failed decode leaves out zero: callers poll
}

type hydraClient struct{ id, secret string }

// newClient registers a client_credentials client with the given access
// token strategy ("opaque" or "jwt").
func (h *hydra) newClient(t *testing.T, strategy string) hydraClient {
	t.Helper()
	return h.createClient(t, map[string]any{"grant_types": []string{"client_credentials"}, "scope": "read write", "access_token_strategy": strategy})
}

// token gets an access token for c with scope read (client_credentials).
func (h *hydra) token(t *testing.T, c hydraClient) string {
	t.Helper()
	return h.tokenWithScope(t, c, "read")
}

// tokenWithScope gets an access token for c with the scopes asked.
func (h *hydra) tokenWithScope(t *testing.T, c hydraClient, scope string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, h.public+"/oauth2/token", strings.NewReader("grant_type=client_credentials&scope="+url.QueryEscape(scope)))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(url.QueryEscape(c.id), url.QueryEscape(c.secret))
	resp, err := httpClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&tok); err != nil || tok.AccessToken == "" {
		t.Fatalf("token: %d %v", resp.StatusCode, err)
	}
	return tok.AccessToken
}

// codeFlowTokens runs an authorization code flow with offline_access for
// a new client of the given access token strategy, accepting the login and
// the consent through the admin API, and returns the access and the
// refresh token it yields.
func (h *hydra) codeFlowTokens(t *testing.T, strategy string) (access, refresh string) {
	t.Helper()
	f := h.codeFlow(t, strategy, "offline_access", "", "")
	if f.refresh == "" {
		t.Fatal("token: no refresh token")
	}
	return f.access, f.refresh
}

// codeFlowResult is what a code flow yields: the client and the token
// response.
type codeFlowResult struct {
	clientID              string
	access, refresh, idTk string
}

// codeFlow runs an authorization code flow for a new client of the given
// access token strategy with scope (space-separated) and nonce ("" for
// none), accepting the login (as subject bob, with acr when not "") and
// the consent of every scope through the admin API, and exchanges the
// code.
func (h *hydra) codeFlow(t *testing.T, strategy, scope, nonce, acr string) codeFlowResult {
	t.Helper()
	const redirect = "http://127.0.0.1:1/cb"
	body := fmt.Sprintf(`{"grant_types":["authorization_code","refresh_token"],"response_types":["code"],"scope":%q,`+
		`"redirect_uris":[%q],"token_endpoint_auth_method":"client_secret_post","access_token_strategy":%q}`, scope, redirect, strategy)
	resp, err := httpClient().Post(h.admin+"/admin/clients", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		ID     string `json:"client_id"`
		Secret string `json:"client_secret"`
	}
	err = json.NewDecoder(resp.Body).Decode(&c)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("create client: %d %v", resp.StatusCode, err)
	}
	jar, _ := cookiejar.New(nil)
	browser := httpClient()
	browser.Jar = jar
	auth := h.public + "/oauth2/auth?response_type=code&scope=" + url.QueryEscape(scope) + "&state=integration-state&client_id=" +
		url.QueryEscape(c.ID) + "&redirect_uri=" + url.QueryEscape(redirect)
	if nonce != "" {
		auth += "&nonce=" + url.QueryEscape(nonce)
	}
	login, _ := json.Marshal(map[string]string{"subject": "bob", "acr": acr})
	next := h.accept(t, "login", hydraFollow(t, browser, auth, "login_challenge"), string(login))
	grant, _ := json.Marshal(map[string][]string{"grant_scope": strings.Fields(scope)})
	next = h.accept(t, "consent", hydraFollow(t, browser, next, "consent_challenge"), string(grant))
	code := hydraFollow(t, browser, next, "code")
	form := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {redirect}, "client_id": {c.ID}, "client_secret": {c.Secret}}
	resp, err = httpClient().PostForm(h.public+"/oauth2/token", form)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var tok struct {
		AccessToken  string `json:"access_token"`
		RefreshToken string `json:"refresh_token"`
		IDToken      string `json:"id_token"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&tok); err != nil || tok.AccessToken == "" {
		t.Fatalf("token: %d %v", resp.StatusCode, err)
	}
	return codeFlowResult{clientID: c.ID, access: tok.AccessToken, refresh: tok.RefreshToken, idTk: tok.IDToken}
}

// revoke revokes token at Hydra (RFC 7009).
func (h *hydra) revoke(t *testing.T, c hydraClient, token string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, h.public+"/oauth2/revoke", strings.NewReader("token="+url.QueryEscape(token)))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(url.QueryEscape(c.id), url.QueryEscape(c.secret))
	resp, err := httpClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("revoke: %d", resp.StatusCode)
	}
}

// verdict is a /v1/verify answer.
type verdict struct {
	status int
	Valid  bool           `json:"valid"`
	Error  string         `json:"error"`
	Claims map[string]any `json:"claims"`
}

func verifyToken(t *testing.T, j *jwksverifyProc, token string) verdict {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"token": token})
	resp, err := httpClient().Post("http://"+j.HTTP+"/v1/verify", "application/json", strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	v := verdict{status: resp.StatusCode}
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("/v1/verify body %q: %v", b, err)
	}
	return v
}

func authz(t *testing.T, j *jwksverifyProc, token string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, "http://"+j.HTTP+"/v1/authz", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := httpClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// waitFor polls cond until it holds or limit passes.
func waitFor(t *testing.T, limit time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > limit {
			t.Fatalf("%s: not within %v", what, limit)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return time.Since(start)
}

// TestHydraOpaqueTokens is issue 15's acceptance against a real Ory Hydra.
func TestHydraOpaqueTokens(t *testing.T) {
	h := startHydra(t)
	const maxTTL, negativeTTL, staleFor = 2 * time.Second, time.Second, 3 * time.Second
	t.Setenv("HYDRA_IT_INTROSPECT_SECRET", "an-introspection-client-secret")
	j := startJWKSVerify(t, fmt.Sprintf(`
listen: 127.0.0.1:0
introspection: {clients: [{id: gateway, secret_env: HYDRA_IT_INTROSPECT_SECRET}]}
issuers:
  - issuer: %q
    discovery: true
    introspection:
      url: %q
      cache: {max_ttl: 2s, negative_ttl: 1s, stale_for: 3s}
`, h.issuer, h.introspect))
	opaque := h.newClient(t, "opaque")
	jwtClient := h.newClient(t, "jwt")

	t.Run("opaque-verifies-with-its-claims", func(t *testing.T) {
		tok := h.token(t, opaque)
		if strings.Count(tok, ".") == 2 {
			t.Fatalf("Hydra issued a JWS to the opaque client")
		}
		before := h.calls.Load()
		v := verifyToken(t, j, tok)
		if v.status != http.StatusOK || !v.Valid || v.Claims["client_id"] != opaque.id || v.Claims["scope"] != "read" {
			t.Fatalf("/v1/verify = %+v, want valid with client_id %s and scope read", v, opaque.id)
		}
		if code := authz(t, j, tok); code != http.StatusOK {
			t.Errorf("/v1/authz = %d, want 200", code)
		}
		// jwksverify's own RFC 7662 endpoint answers the opaque token from
		// Hydra's answer.
		req, _ := http.NewRequest(http.MethodPost, "http://"+j.HTTP+"/introspect", strings.NewReader("token="+url.QueryEscape(tok)))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.SetBasicAuth("gateway", "an-introspection-client-secret")
		resp, err := httpClient().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var ans map[string]any
		json.NewDecoder(resp.Body).Decode(&ans)
		resp.Body.Close()
		if ans["active"] != true || ans["client_id"] != opaque.id {
			t.Errorf("/introspect = %d %v, want active with client_id %s", resp.StatusCode, ans, opaque.id)
		}
		if n := h.calls.Load() - before; n != 1 {
			t.Errorf("introspection calls = %d, want 1 (the other answers are cached)", n)
		}
	})

	t.Run("50-concurrent-one-call", func(t *testing.T) {
		tok := h.token(t, opaque)
		before := h.calls.Load()
		var wg sync.WaitGroup
		var valid atomic.Int64
		for range 50 {
			wg.Go(func() {
				if v := verifyToken(t, j, tok); v.Valid {
					valid.Add(1)
				}
			})
		}
		wg.Wait()
		if n := h.calls.Load() - before; n != 1 || valid.Load() != 50 {
			t.Errorf("50 concurrent requests: %d introspection calls, %d valid; want 1 and 50", n, valid.Load())
		}
	})

	// Hydra answers active for a refresh token too (with token_use
	// refresh_token, a 30-day exp and the access token's aud): it is not a
	// credential for an API, whatever its age.
	t.Run("refresh-token-is-not-an-access-token", func(t *testing.T) {
		access, refresh := h.codeFlowTokens(t, "opaque")
		if v := verifyToken(t, j, access); !v.Valid {
			t.Fatalf("/v1/verify(access token) = %+v, want valid", v)
		}
		if v := verifyToken(t, j, refresh); v.Valid || v.Error != "wrong_type" {
			t.Errorf("/v1/verify(refresh token) = %+v, want invalid, wrong_type", v)
		}
		if code := authz(t, j, refresh); code != http.StatusUnauthorized {
			t.Errorf("/v1/authz(refresh token) = %d, want 401", code)
		}
	})

	t.Run("jwt-verifies-locally", func(t *testing.T) {
		tok := h.token(t, jwtClient)
		if strings.Count(tok, ".") != 2 {
			t.Fatalf("Hydra issued an opaque token to the jwt client")
		}
		before := h.calls.Load()
		if v := verifyToken(t, j, tok); !v.Valid || v.Claims["client_id"] != jwtClient.id {
			t.Fatalf("/v1/verify(JWT) = %+v, want valid", v)
		}
		if n := h.calls.Load() - before; n != 0 {
			t.Errorf("a JWT made %d introspection calls, want 0", n)
		}
	})

	t.Run("revoked-becomes-inactive", func(t *testing.T) {
		tok := h.token(t, opaque)
		if v := verifyToken(t, j, tok); !v.Valid {
			t.Fatalf("/v1/verify = %+v, want valid", v)
		}
		cachedAt := time.Now()
		h.revoke(t, opaque, tok)
		waitFor(t, maxTTL+negativeTTL+time.Second, "revoked token inactive", func() bool {
			v := verifyToken(t, j, tok)
			if v.Valid && time.Since(cachedAt) > maxTTL+time.Second {
				t.Fatalf("revoked token still valid %v after its answer was cached", time.Since(cachedAt))
			}
			return !v.Valid && v.Error == "inactive" && v.status == http.StatusOK
		})
		if code := authz(t, j, tok); code != http.StatusUnauthorized {
			t.Errorf("/v1/authz(revoked) = %d, want 401", code)
		}
	})

	t.Run("policies-over-introspected-claims", func(t *testing.T) {
		testHydraPolicies(t, h, opaque)
	})

	t.Run("hydra-stopped-stale-then-503", func(t *testing.T) {
		tok := h.token(t, opaque)
		if v := verifyToken(t, j, tok); !v.Valid {
			t.Fatalf("/v1/verify = %+v, want valid", v)
		}
		cachedAt := time.Now()
		h.proc.stop()
		// Refused connections: the endpoint cannot answer.
		if c, err := net.DialTimeout("tcp", strings.TrimPrefix(h.admin, "http://"), time.Second); err == nil {
			c.Close()
			t.Fatal("Hydra's admin port still answers after stop")
		}
		if v := verifyToken(t, j, tok); !v.Valid {
			t.Fatalf("/v1/verify right after Hydra stopped = %+v, want the cached answer", v)
		}
		polls := 0
		waitFor(t, maxTTL+staleFor+2*time.Second, "503 after stale_for", func() bool {
			polls++
			v := verifyToken(t, j, tok)
			if v.status == http.StatusServiceUnavailable {
				if v.Error != "keys_unavailable" {
					t.Fatalf("503 with %q, want keys_unavailable", v.Error)
				}
				if age := time.Since(cachedAt); age < maxTTL+staleFor-500*time.Millisecond {
					t.Fatalf("503 after %v, want the cached answer served until max_ttl + stale_for (%v)", age, maxTTL+staleFor)
				}
				return true
			}
			if !v.Valid {
				t.Fatalf("/v1/verify while stale = %+v, want valid or 503", v)
			}
			return false
		})
		if code := authz(t, j, h.issuer); code != http.StatusUnauthorized && code != http.StatusServiceUnavailable {
			t.Errorf("/v1/authz(unknown opaque) with Hydra down = %d", code)
		}
		// Past the cached answer's end the stopped server was asked again,
		// but not once per request: after a failed call the stale answer
		// serves for 1s, then 2s (max_ttl). The log has one line per 10s
		// of failures, not one per call.
		failed := rhMetrics(t, httpClient(), "http://"+j.HTTP)[fmt.Sprintf(`jwksverify_introspection_calls_total{issuer=%q,result="error"}`, h.issuer)]
		lines := strings.Count(j.Output(), `"msg":"introspection failed"`)
		if limit := int(time.Since(cachedAt)/(10*time.Second)) + 1; failed < 2 || failed > float64(polls)/4 || lines == 0 || lines > limit {
			t.Errorf("%v failed calls for %d requests, logged in %d introspection failed lines over %v; want 2 or more calls, far fewer than requests, in 1 to %d lines (one per 10s)",
				failed, polls, lines, time.Since(cachedAt), limit)
		}
	})
}

// testHydraPolicies runs policies over Hydra's introspected claims through
// the real binary: a policy requiring a scope allows an opaque token that
// has it and refuses one without it, 403 insufficient_scope, on the first
// (upstream) answer and again on the cached one with no second call
// (ory/oathkeeper#743: a cache hit must not skip the required scopes); a
// policy whose issuers exclude Hydra refuses its opaque tokens without
// asking Hydra.
func testHydraPolicies(t *testing.T, h *hydra, opaque hydraClient) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "other.key")
	if err := os.WriteFile(secret, []byte("another-issuer-hmac-secret-of-32-bytes!!"), 0o600); err != nil {
		t.Fatal(err)
	}
	j := startJWKSVerify(t, fmt.Sprintf(`
listen: 127.0.0.1:0
issuers:
  - issuer: %q
    discovery: true
    introspection:
      url: %q
      cache: {max_ttl: 1m, negative_ttl: 1m}
  - issuer: https://other.example.com/
    secret_file: %s
policies:
  - {name: needs-write, scopes: {all: [write]}}
  - {name: other-only, issuers: [https://other.example.com/]}
default_policy: needs-write
`, h.issuer, h.introspect, secret))
	writeTok := h.tokenWithScope(t, opaque, "read write")
	readTok := h.tokenWithScope(t, opaque, "read")
	tests := []struct {
		name       string
		path       string // /v1/authz, or /v1/policy/<name>
		token      string
		wantStatus int
		wantWWW    string // a part of WWW-Authenticate; "" = not checked
		wantClass  string // the body's error; "" = none
		wantCalls  int64  // introspection calls this request makes
	}{
		{"scope-granted", "/v1/authz", writeTok, http.StatusOK, "", "", 1},
		{"scope-granted-cached", "/v1/authz", writeTok, http.StatusOK, "", "", 0},
		{"scope-missing", "/v1/authz", readTok, http.StatusForbidden, `error="insufficient_scope", scope="write"`, "forbidden", 1},
		{"scope-missing-cached-answer", "/v1/authz", readTok, http.StatusForbidden, `error="insufficient_scope", scope="write"`, "forbidden", 0},
		{"scope-missing-named-policy", "/v1/policy/needs-write", readTok, http.StatusForbidden, `error="insufficient_scope"`, "forbidden", 0},
		{"issuers-exclude-hydra", "/v1/policy/other-only", writeTok, http.StatusUnauthorized, `error="invalid_token"`, "unknown_issuer", 0},
		{"issuers-exclude-hydra-new-token", "/v1/policy/other-only", h.tokenWithScope(t, opaque, "read write"), http.StatusUnauthorized, `error="invalid_token"`, "unknown_issuer", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := h.calls.Load()
			req, _ := http.NewRequest(http.MethodGet, "http://"+j.HTTP+tc.path, nil)
			req.Header.Set("Authorization", "Bearer "+tc.token)
			resp, err := httpClient().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.wantStatus {
				t.Fatalf("GET %s = %d %s, want %d", tc.path, resp.StatusCode, body, tc.wantStatus)
			}
			var ans struct {
				Error string `json:"error"`
			}
			if len(body) > 0 {
				if err := json.Unmarshal(body, &ans); err != nil {
					t.Fatalf("body %q: %v", body, err)
				}
			}
			if ans.Error != tc.wantClass {
				t.Errorf("error = %q, want %q", ans.Error, tc.wantClass)
			}
			if www := resp.Header.Get("WWW-Authenticate"); !strings.Contains(www, tc.wantWWW) {
				t.Errorf("WWW-Authenticate = %q, want it to hold %q", www, tc.wantWWW)
			}
			if n := h.calls.Load() - before; n != tc.wantCalls {
				t.Errorf("introspection calls = %d, want %d", n, tc.wantCalls)
			}
		})
	}
}
