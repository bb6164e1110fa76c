package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
)

// The revocation tests run real jwksverify binaries and, for store: redis,
// a real redis-server (with an append-only file, so that a restarted Redis
// has what it acknowledged).

// revokeSecret is the introspection client secret the admin API is called
// with (client "admin", from JV_REVOKE_SECRET).
const revokeSecret = "revocation-admin-secret-0123456789"

// revocationConfig is a config of is with the admin listener, the admin
// client, and extra top-level keys (revocation, redis, state_dir).
func revocationConfig(is *testIssuer, extra string) string {
	return fmt.Sprintf(`listen: 127.0.0.1:0
admin_listen: 127.0.0.1:0
shutdown_timeout: 1s
forward_auth: {proxy: nginx}
introspection: {clients: [{id: admin, secret_env: JV_REVOKE_SECRET}]}
issuers:
%s%s`, is.IssuerConfig(), extra)
}

// adminCall calls the admin API of a replica as client "admin".
func adminCall(c *http.Client, admin, method, path, body string) (int, []byte, error) {
	req, err := http.NewRequest(method, "http://"+admin+path, strings.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.SetBasicAuth("admin", revokeSecret)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, b, nil
}

// revokeAt adds an entry at a replica and returns its id.
func revokeAt(t *testing.T, c *http.Client, admin, body string) string {
	t.Helper()
	code, b, err := adminCall(c, admin, http.MethodPost, "/v1/revocations", body)
	if err != nil || code != http.StatusCreated {
		t.Fatalf("POST /v1/revocations %s = %d %s %v, want 201", body, code, b, err)
	}
	var e struct{ ID, ExpiresAt string }
	if err := json.Unmarshal(b, &e); err != nil || e.ID == "" {
		t.Fatalf("POST answer %s: %v", b, err)
	}
	return e.ID
}

// bearerAuthz asks a replica's forward-auth about token: status and class.
func bearerAuthz(c *http.Client, base, token string) (int, string) {
	code, class, err := forwardAuthErr(c, base, "Bearer", token, "", "")
	if err != nil {
		return 0, err.Error()
	}
	return code, class
}

// ready reports whether a replica's /readyz answers 200.
func ready(c *http.Client, admin string) bool {
	resp, err := c.Get("http://" + admin + "/readyz")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// TestRevocationAcrossReplicas: three replicas share one Redis. A
// revocation acknowledged at one is enforced by the others within 1 s (p99
// over 200, logged as a measurement); gRPC Check and /introspect refuse the
// token too. Redis stopped: after max_staleness every replica answers 503
// keys_unavailable and is not ready, and a revoked token is never allowed;
// Redis back: every replica recovers without a restart, and nothing
// acknowledged is lost.
func TestRevocationAcrossReplicas(t *testing.T) {
	rd := &redisProc{t: t, bin: requireTool(t, "redis-server", "redis-server"), port: freePort(t), dir: t.TempDir()}
	rd.start()
	t.Setenv("JV_REVOKE_SECRET", revokeSecret)
	is := newTestIssuer(t)
	cfg := revocationConfig(is, fmt.Sprintf("revocation: {store: redis, max_staleness: 3s}\nredis: {url: \"redis://%s\"}\n", rd.addr()))
	reps := []*jwksverifyProc{
		startJWKSVerifyWith(t, cfg, jwksverifyOptions{Args: []string{"--grpc-listen", "127.0.0.1:0"}}),
		startJWKSVerify(t, cfg),
		startJWKSVerify(t, cfg),
	}
	hc := httpClient()

	t.Run("propagation-p99-under-1s", func(t *testing.T) {
		const n = 200
		var lags []time.Duration
		for i := range n {
			tok := is.Token(map[string]any{"jti": fmt.Sprintf("prop-%d", i)})
			for j, r := range reps {
				if code, class := bearerAuthz(hc, r.HTTP, tok); code != http.StatusOK {
					t.Fatalf("token %d before revocation at replica %d = %d %s, want 200", i, j, code, class)
				}
			}
			at := i % len(reps)
			revokeAt(t, hc, reps[at].Admin, fmt.Sprintf(`{"issuer":%q,"jti":"prop-%d"}`, is.Issuer, i))
			acked := time.Now()
			if code, class := bearerAuthz(hc, reps[at].HTTP, tok); code != http.StatusUnauthorized || class != "revoked" {
				t.Fatalf("at the acknowledging replica = %d %s, want 401 revoked at once", code, class)
			}
			pending := []int{(at + 1) % 3, (at + 2) % 3}
			var lag time.Duration
			for len(pending) > 0 {
				if time.Since(acked) > 10*time.Second {
					t.Fatalf("revocation %d not enforced by replicas %v after 10s", i, pending)
				}
				pending = slices.DeleteFunc(pending, func(j int) bool {
					code, class := bearerAuthz(hc, reps[j].HTTP, tok)
					if code == http.StatusOK {
						return false
					}
					if code != http.StatusUnauthorized || class != "revoked" {
						t.Fatalf("replica %d answered %d %s, want 200 then 401 revoked", j, code, class)
					}
					lag = time.Since(acked)
					return true
				})
			}
			lags = append(lags, lag)
		}
		slices.Sort(lags)
		p := func(q float64) time.Duration { return lags[int(q*float64(len(lags)-1))] }
		t.Logf("BenchmarkRevocationPropagation/replicas=3 %d p50=%.2fms p99=%.2fms max=%.2fms (acknowledged at one replica → refused by both others, forward-auth polled)",
			n, ms(p(0.5)), ms(p(0.99)), ms(lags[len(lags)-1]))
		if p(0.99) > time.Second {
			t.Errorf("propagation p99 = %s, want within 1s", p(0.99))
		}
	})

	revoked := is.Token(map[string]any{"jti": "kept-1", "sub": "mallory"})
	valid := is.Token(map[string]any{"jti": "valid-1", "sub": "bob"})
	for _, r := range reps {
		bearerAuthz(hc, r.HTTP, revoked) // in every replica's token cache
	}
	keptID := revokeAt(t, hc, reps[1].Admin, fmt.Sprintf(`{"issuer":%q,"sub":"mallory"}`, is.Issuer))
	for j, r := range reps {
		waitFor(t, 5*time.Second, fmt.Sprintf("replica %d refuses mallory", j), func() bool {
			code, class := bearerAuthz(hc, r.HTTP, revoked)
			return code == http.StatusUnauthorized && class == "revoked"
		})
	}

	t.Run("grpc-denies", func(t *testing.T) {
		conn, err := grpc.NewClient(reps[0].GRPC, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		ctx, cancel := context.WithTimeout(t.Context(), startTimeout)
		defer cancel()
		resp, err := authv3.NewAuthorizationClient(conn).Check(ctx, &authv3.CheckRequest{Attributes: &authv3.AttributeContext{
			Request: &authv3.AttributeContext_Request{Http: &authv3.AttributeContext_HttpRequest{
				Method: "GET", Path: "/orders/7", Host: "app", Scheme: "http", Protocol: "HTTP/1.1",
				Headers: map[string]string{":authority": "app", ":method": "GET", ":path": "/orders/7", "authorization": "Bearer " + revoked},
			}},
		}})
		if err != nil || codes.Code(resp.GetStatus().GetCode()) != codes.Unauthenticated ||
			resp.GetDeniedResponse().GetStatus().GetCode() != typev3.StatusCode_Unauthorized {
			t.Fatalf("Check() = %v, %v; want DENIED with HTTP 401", resp, err)
		}
		found := false
		for _, h := range resp.GetDeniedResponse().GetHeaders() {
			if strings.EqualFold(h.GetHeader().GetKey(), "www-authenticate") && strings.Contains(h.GetHeader().GetValue(), `error_description="revoked"`) {
				found = true
			}
		}
		if !found {
			t.Errorf("denied headers = %v, want WWW-Authenticate with error_description=\"revoked\"", resp.GetDeniedResponse().GetHeaders())
		}
	})

	t.Run("introspect-inactive", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodPost, "http://"+reps[2].HTTP+"/introspect", strings.NewReader(url.Values{"token": {revoked}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.SetBasicAuth("admin", revokeSecret)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || strings.TrimSpace(string(b)) != `{"active":false}` {
			t.Errorf("/introspect = %d %s, want 200 {\"active\":false}", resp.StatusCode, b)
		}
	})

	t.Run("redis-stopped-fails-closed-then-recovers", func(t *testing.T) {
		rd.p.stop()
		stopped := time.Now()
		// Until max_staleness the copies answer as before; after it, 503.
		// Never, at any point, is the revoked token allowed.
		for j, r := range reps {
			waitFor(t, 15*time.Second, fmt.Sprintf("replica %d fails closed", j), func() bool {
				if code, class := bearerAuthz(hc, r.HTTP, revoked); code == http.StatusOK {
					t.Fatalf("replica %d allowed a revoked token with Redis down (%s)", j, class)
				}
				code, class := bearerAuthz(hc, r.HTTP, valid)
				return code == http.StatusServiceUnavailable && class == "keys_unavailable"
			})
			if ready(hc, r.Admin) {
				t.Errorf("replica %d is ready with a stale copy", j)
			}
			if code, class := bearerAuthz(hc, r.HTTP, revoked); code != http.StatusServiceUnavailable || class != "keys_unavailable" {
				t.Errorf("replica %d, revoked token with a stale copy = %d %s, want 503 keys_unavailable", j, code, class)
			}
		}
		// The copy's age counts from its last proof (a poll at most 1s
		// before Redis stopped): stale no earlier than max_staleness − 1s.
		if d := time.Since(stopped); d < 2*time.Second {
			t.Errorf("failed closed %s after Redis stopped, well before max_staleness (3s)", d)
		}
		if code, _, err := adminCall(hc, reps[0].Admin, http.MethodPost, "/v1/revocations", fmt.Sprintf(`{"issuer":%q,"jti":"down"}`, is.Issuer)); err != nil || code != http.StatusServiceUnavailable {
			t.Errorf("POST with Redis down = %d %v, want 503 (nothing acknowledged)", code, err)
		}

		rd.start()
		for j, r := range reps {
			waitFor(t, 20*time.Second, fmt.Sprintf("replica %d recovers", j), func() bool {
				code, _ := bearerAuthz(hc, r.HTTP, valid)
				return code == http.StatusOK && ready(hc, r.Admin)
			})
			if code, class := bearerAuthz(hc, r.HTTP, revoked); code != http.StatusUnauthorized || class != "revoked" {
				t.Errorf("replica %d after Redis came back: revoked token = %d %s, want 401 revoked", j, code, class)
			}
			code, b, err := adminCall(hc, r.Admin, http.MethodGet, "/v1/revocations?issuer="+url.QueryEscape(is.Issuer), "")
			var list struct{ Revocations []struct{ ID string } }
			_ = json.Unmarshal(b, &list)
			if err != nil || code != http.StatusOK || len(list.Revocations) != 201 || !slices.ContainsFunc(list.Revocations, func(e struct{ ID string }) bool { return e.ID == keptID }) {
				t.Errorf("replica %d lists %d entries (%d %v), want the 201 acknowledged ones", j, len(list.Revocations), code, err)
			}
		}
		if strings.Contains(reps[0].Output(), "redis://") {
			t.Error("a log line holds the redis URL")
		}
	})
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// TestRevocationMemoryStore: store: memory keeps an entry (and a lift)
// across a restart; `jwksverify revoke` adds, lists and deletes through the
// admin API; the admin API is not on listen.
func TestRevocationMemoryStore(t *testing.T) {
	t.Setenv("JV_REVOKE_SECRET", revokeSecret)
	is := newTestIssuer(t)
	cfg := revocationConfig(is, fmt.Sprintf("state_dir: %s\nrevocation: {store: memory, retention: 1h}\n", t.TempDir()))
	hc := httpClient()
	a := startJWKSVerify(t, cfg)
	kept := is.Token(map[string]any{"jti": "m-1", "sid": "session-7"})
	lifted := is.Token(map[string]any{"jti": "m-2"})
	for _, tok := range []string{kept, lifted} {
		if code, class := bearerAuthz(hc, a.HTTP, tok); code != http.StatusOK {
			t.Fatalf("before revocation = %d %s", code, class)
		}
	}
	if code, _, _ := adminCall(hc, a.HTTP, http.MethodGet, "/v1/revocations", ""); code != http.StatusNotFound {
		t.Errorf("GET /v1/revocations on listen = %d, want 404 (admin_listen only)", code)
	}
	cli := func(args ...string) (string, int) {
		cmd := exec.Command(jwksverifyBinary(t), append([]string{"revoke"}, args...)...)
		cmd.Env = append(cmd.Environ(), "JWKSVERIFY_ADMIN_URL=http://"+a.Admin, "JWKSVERIFY_ADMIN_SECRET="+revokeSecret)
		out, err := cmd.Output()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return string(out), code
	}
	if out, code := cli("add", "--client", "admin", "--issuer", is.Issuer, "--sid", "session-7"); code != 0 || !strings.Contains(out, `"kind":"sid"`) {
		t.Fatalf("jwksverify revoke add = %d %s", code, out)
	}
	out, code := cli("add", "--client", "admin", "--issuer", is.Issuer, "--jti", "m-2")
	var e struct{ ID string }
	if err := json.Unmarshal([]byte(out), &e); code != 0 || err != nil {
		t.Fatalf("jwksverify revoke add = %d %s", code, out)
	}
	if out, code := cli("delete", "--client", "admin", e.ID); code != 0 {
		t.Fatalf("jwksverify revoke delete = %d %s", code, out)
	}
	if out, code := cli("delete", "--client", "admin", e.ID); code != 1 {
		t.Errorf("jwksverify revoke delete of a lifted entry = %d %s, want 1 (404)", code, out)
	}
	if out, code := cli("list", "--client", "nobody"); code != 1 {
		t.Errorf("jwksverify revoke list as an unknown client = %d %s, want 1 (401)", code, out)
	}
	if out, code := cli("list", "--issuer", is.Issuer); code != 0 || strings.Count(out, `"id"`) != 1 {
		t.Errorf("jwksverify revoke list = %d %s, want one entry", code, out)
	}
	check := func(p *jwksverifyProc, when string) {
		t.Helper()
		if code, class := bearerAuthz(hc, p.HTTP, kept); code != http.StatusUnauthorized || class != "revoked" {
			t.Errorf("%s: revoked token = %d %s, want 401 revoked", when, code, class)
		}
		if code, class := bearerAuthz(hc, p.HTTP, lifted); code != http.StatusOK {
			t.Errorf("%s: lifted token = %d %s, want 200", when, code, class)
		}
	}
	check(a, "before the restart")
	a.stop()
	b := startJWKSVerify(t, cfg)
	check(b, "after the restart")
}

// TestRevocationOpaque: an opaque token is matched on its introspection
// answer's claims, on a cached answer (no upstream call) and on a stale one
// (the endpoint down); /introspect answers {"active":false}.
func TestRevocationOpaque(t *testing.T) {
	t.Setenv("JV_REVOKE_SECRET", revokeSecret)
	as := startASServer(t)
	is := newTestIssuer(t)
	as.set("opaque-revoked", map[string]any{"aud": is.Audience, "sid": "s-opaque"})
	as.set("opaque-kept", map[string]any{"aud": is.Audience, "sid": "s-other"})
	cfg := strings.Replace(revocationConfig(is, fmt.Sprintf("state_dir: %s\nrevocation: {}\n", t.TempDir())),
		"    claims_to_headers:", fmt.Sprintf("    introspection: {url: %q, cache: {max_ttl: 1s, stale_for: 1h}}\n    claims_to_headers:", as.URL), 1)
	j := startJWKSVerify(t, cfg)
	hc := httpClient()
	for _, tok := range []string{"opaque-revoked", "opaque-kept"} {
		if code, class := bearerAuthz(hc, j.HTTP, tok); code != http.StatusOK {
			t.Fatalf("%s before revocation = %d %s", tok, code, class)
		}
	}
	calls := as.calls.Load()
	revokeAt(t, hc, j.Admin, fmt.Sprintf(`{"issuer":%q,"sid":"s-opaque"}`, is.Issuer))
	if code, class := bearerAuthz(hc, j.HTTP, "opaque-revoked"); code != http.StatusUnauthorized || class != "revoked" {
		t.Errorf("cached answer = %d %s, want 401 revoked", code, class)
	}
	if n := as.calls.Load() - calls; n != 0 {
		t.Errorf("%d upstream calls, want a cache hit", n)
	}
	as.unblock()
	as.ts.Close()
	// Past max_ttl the endpoint cannot answer: the cached answers are
	// served stale (counted), and the revoked one is still refused.
	waitFor(t, 15*time.Second, "a stale answer served", func() bool {
		if code, class := bearerAuthz(hc, j.HTTP, "opaque-kept"); code != http.StatusOK {
			t.Fatalf("kept token with the endpoint down = %d %s, want 200 from the stale answer", code, class)
		}
		resp, err := hc.Get("http://" + j.Admin + "/metrics")
		if err != nil {
			return false
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		for line := range strings.Lines(string(b)) {
			if strings.HasPrefix(line, "jwksverify_introspection_stale_served_total{") && !strings.HasSuffix(strings.TrimSpace(line), " 0") {
				return true
			}
		}
		return false
	})
	if code, class := bearerAuthz(hc, j.HTTP, "opaque-revoked"); code != http.StatusUnauthorized || class != "revoked" {
		t.Errorf("stale answer = %d %s, want 401 revoked", code, class)
	}
	req, _ := http.NewRequest(http.MethodPost, "http://"+j.HTTP+"/introspect", strings.NewReader("token=opaque-revoked"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth("admin", revokeSecret)
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if strings.TrimSpace(string(b)) != `{"active":false}` {
		t.Errorf("/introspect = %d %s, want {\"active\":false}", resp.StatusCode, b)
	}
}
