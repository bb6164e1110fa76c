package service

import (
	"cmp"
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/internal/testkeys"
)

// rawRS256 signs the payload text as it is (a duplicate member name, a
// number literal kept to the digit) under kid rsa-a.
func rawRS256(payload string) string {
	enc := base64.RawURLEncoding
	in := enc.EncodeToString([]byte(`{"alg":"RS256","kid":"rsa-a","typ":"JWT"}`)) + "." + enc.EncodeToString([]byte(payload))
	h := sha256.Sum256([]byte(in))
	sig, err := rsa.SignPKCS1v15(rand.Reader, testkeys.Private(testkeys.RSA2048A).(*rsa.PrivateKey), crypto.SHA256, h[:])
	if err != nil {
		panic(err)
	}
	return in + "." + enc.EncodeToString(sig)
}

// metricLines are the counter lines of verify_total and
// policy_decisions_total, by their label text.
func metricLines(s *Service) map[string]float64 {
	rec := httptest.NewRecorder()
	s.Metrics().Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	out := map[string]float64{}
	for _, l := range strings.Split(rec.Body.String(), "\n") {
		if !strings.HasPrefix(l, "jwksverify_verify_total{") && !strings.HasPrefix(l, "jwksverify_policy_decisions_total{") {
			continue
		}
		i := strings.LastIndexByte(l, ' ')
		var v float64
		json.Unmarshal([]byte(l[i+1:]), &v)
		out[l[:i]] = v
	}
	return out
}

// grown are the lines of after that grew since before.
func grown(before, after map[string]float64) []string {
	var out []string
	for k, v := range after {
		if v > before[k] {
			out = append(out, k)
		}
	}
	return out
}

// TestSessionRefusalsNameTheirClass: every refusal this session added is
// answered, on every front end it applies to (forward-auth, gRPC
// ext_authz's DENIED answer, the library Middleware, /v1/verify, batches,
// /introspect, the admin API), with the class docs/API.md's table gives it:
// the status, the challenge, the body's error, the gRPC code and message,
// the log line and the metric labels (the refusing policy's name for a
// 403). A regression guard: every front end agreed when it was written.
func TestSessionRefusalsNameTheirClass(t *testing.T) {
	dir := t.TempDir()
	jwksFile := filepath.Join(dir, "jwks.json")
	if err := os.WriteFile(jwksFile, testJWKS(), 0o600); err != nil {
		t.Fatal(err)
	}
	doc := `state_dir: ` + dir + `
forward_auth: {proxy: nginx}
log: {rejections_per_second: 1000}
introspection: {clients: [{id: gateway, secret_env: GW_SECRET}]}
revocation: {store: memory, retention: 24h}
issuers:
  - issuer: https://a.example/
    jwks_file: ` + jwksFile + `
    audiences: [orders]
    required_claims: []
  - issuer: https://b.example/
    jwks_file: ` + jwksFile + `
    id_token: {client_ids: [web-app]}
    required_claims: []
policies:
  - {name: strict, scopes: {all: [admin]}}
  - {name: exact, expression: 'claims.uid > 0.0'}
  - {name: lax}
routes:
  - {methods: [DELETE], path: /items/*, policy: strict}
  - {path: /cel/**, policy: exact}
  - {path: /**, policy: lax}
`
	p, err := parsePlanEnv(doc, dir)
	if err != nil {
		t.Fatal(err)
	}
	logs := &lockedBuf{}
	s, err := New(p, Options{Logger: slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Ready(ctx); err != nil {
		t.Fatal(err)
	}
	gc := grpcClient(t, s)

	now := time.Now().Unix()
	claimsOf := func(iss, aud, extra string) string {
		return `{"iss":"` + iss + `","aud":"` + aud + `","sub":"alice","scope":"orders:read","iat":` + itoa(now) +
			`,"nbf":` + itoa(now) + `,"exp":` + itoa(now+3600) + extra + `}`
	}
	a := func(extra string) string { return rawRS256(claimsOf("https://a.example/", "orders", extra)) }

	type row struct {
		name         string
		method, path string
		token        string
		status       int
		class        string
		policy       string // the policy a 403 names (log line, metric label, verify's "policy")
		scope        string // the scope= of the 403's challenge
	}
	rows := []row{
		{"revocation-sid-not-a-string", "GET", "/orders/1", a(`,"sid":123`), 401, "malformed", "", ""},
		{"revocation-client_id-not-a-string", "GET", "/orders/1", a(`,"client_id":true`), 401, "malformed", "", ""},
		{"revocation-azp-not-a-string", "GET", "/orders/1", a(`,"azp":["x"]`), 401, "malformed", "", ""},
		{"nested-duplicate-member", "GET", "/orders/1", a(`,"realm_access":{"roles":["user"],"roles":["admin"]}`), 401, "malformed", "", ""},
		{"id-token-as-access-token", "GET", "/orders/1", rawRS256(claimsOf("https://b.example/", "web-app", "")), 401, "wrong_type", "", ""},
		{"cel-inexact-number", "GET", "/cel/x", a(`,"uid":123456789012345677`), 403, "forbidden", "exact", ""},
		{"star-route-tail", "DELETE", "/items/1/x", a(""), 403, "forbidden", "strict", "admin"},
		{"star-route-tail-override", "POST", "/items/1/x?_method=DELETE", a(""), 403, "forbidden", "strict", "admin"},
		{"star-route-itself", "DELETE", "/items/1", a(""), 403, "forbidden", "strict", "admin"},
	}
	for _, tt := range rows {
		t.Run(tt.name, func(t *testing.T) {
			checkMetrics := func(ep string, before map[string]float64, verdict bool) {
				t.Helper()
				g := grown(before, metricLines(s))
				wantDecision := `jwksverify_policy_decisions_total{class="` + tt.class + `",policy="` + tt.policy + `"}`
				if tt.policy == "" {
					wantDecision = `class="` + tt.class + `"`
				}
				var sawDecision bool
				for _, l := range g {
					switch {
					case strings.HasPrefix(l, "jwksverify_policy_decisions_total"):
						sawDecision = true
						if !strings.Contains(l, wantDecision) {
							t.Errorf("%s: metric %s, want %s", ep, l, wantDecision)
						}
					case strings.HasPrefix(l, "jwksverify_verify_total"):
						want := `class="` + tt.class + `"`
						if tt.class == "forbidden" {
							want = `class="valid"`
						}
						if !strings.Contains(l, want) {
							t.Errorf("%s: metric %s, want %s", ep, l, want)
						}
					}
				}
				if !sawDecision && verdict {
					t.Errorf("%s: no policy decision counted (%v)", ep, g)
				}
			}
			checkLine := func(ep, al string) {
				t.Helper()
				checkLog(t, ep, al, tt.class)
				if tt.policy != "" && !strings.Contains(al, `"policy":"`+tt.policy+`"`) {
					t.Errorf("%s: the log line does not name %s, the policy that refused: %s", ep, tt.policy, al)
				}
			}

			rq := refusalRequest{method: tt.method, host: "api.example", path: tt.path, authorization: "Bearer " + tt.token}
			logs.take()
			before := metricLines(s)
			checkHTTP(t, "authz", viaForwardAuth(s, rq), tt.status, tt.class, tt.scope)
			checkLine("authz", logs.take())
			checkMetrics("authz", before, true)

			before = metricLines(s)
			checkGRPC(t, gc, rq, tt.status, tt.class, tt.scope)
			checkLine("grpc", logs.take())
			checkMetrics("grpc", before, true)

			before = metricLines(s)
			checkHTTP(t, "middleware", viaMiddleware(s, rq), tt.status, tt.class, tt.scope)
			checkLine("middleware", logs.take())
			checkMetrics("middleware", before, true)

			// /v1/verify, under the policy of the request's route
			pol := cmp.Or(tt.policy, "lax")
			before = metricLines(s)
			code, got, raw := viaVerify(s, tt.token, pol, rq)
			if code != 200 || got.Error != tt.class || (tt.class == "forbidden") != got.Valid ||
				(tt.class == "forbidden" && (got.Allowed == nil || *got.Allowed || got.Policy != pol)) {
				t.Errorf("/v1/verify: %d %s, want 200 error %q", code, raw, tt.class)
			}
			checkLine("verify", logs.take())
			checkMetrics("verify", before, false)

			// token verdicts: batch and /introspect (no policy runs there)
			if tt.class != "forbidden" {
				checkTokenVerdicts(t, s, logs, tt.token, tt.class)
			}
		})
	}

	// Refusals of a request, not of a token: 400 with API.md's error code.
	for _, tt := range []struct {
		name, target, body string
		admin              bool
		error              string
	}{
		{"verify-mint-beside-dpop-without-api_auth", "/v1/verify", `{"token":` + jsonQuote(a("")) + `,"policy":"lax","mint":true,"dpop":"x.y.z"}`, false, "bad_request"},
		{"admin-null-jti", "/v1/revocations", `{"issuer":"https://a.example/","jti":null}`, true, "invalid_request"},
		{"admin-null-sub", "/v1/revocations", `{"issuer":"https://a.example/","sub":null}`, true, "invalid_request"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, tt.target, strings.NewReader(tt.body))
			r.Header.Set("Content-Type", "application/json")
			h := s.Handler()
			if tt.admin {
				r.SetBasicAuth("gateway", "gateway-secret-value")
				h = s.AdminHandler()
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			var got struct {
				Error string `json:"error"`
			}
			json.Unmarshal(w.Body.Bytes(), &got)
			if w.Code != http.StatusBadRequest || got.Error != tt.error {
				t.Errorf("POST %s = %d %s, want 400 %q", tt.target, w.Code, strings.TrimSpace(w.Body.String()), tt.error)
			}
		})
	}
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }
