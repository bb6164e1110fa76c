package service

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/jwksverify/jwksverify/config"
	"github.com/jwksverify/jwksverify/internal/testkeys"
)

// TestReloadStress reloads between two plans in a loop while HTTP and
// gRPC requests run, then drains and closes during reloads. Plan A allows
// aud "orders" for sub alice (header X-Auth-A); plan B aud "billing" for
// sub bob (header X-Auth-B). A token that only a mix of them allows (the
// verifier of one, the policy of the other) is never allowed; an allowed
// answer carries only its own plan's header; a request decided after a
// Reload returned follows the new plan; Close returns while reloads run.
// Run it with -race.
func TestReloadStress(t *testing.T) {
	if testing.Short() {
		t.Skip("stress")
	}
	var jwksCalls atomic.Int64
	idp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		jwksCalls.Add(1)
		w.Header().Set("Cache-Control", "max-age=1")
		w.Write(testJWKS())
	}))
	t.Cleanup(idp.Close)
	plan := func(aud, sub, header, staleFor string) *config.Plan {
		return parsePlan(t, "", fmt.Sprintf(`forward_auth: {proxy: envoy}
token_cache: {max_entries: 1000}
issuers:
  - issuer: https://a.example/
    jwks_url: %s
    audiences: [%s]
    claims_to_headers: {sub: %s}
    refresh: {stale_for: %s, unknown_kid_interval: 1s, unknown_kid_wait: 50ms}
policies:
  - {name: p, expression: 'claims.sub == "%s"'}
routes:
  - {path: /orders/**, policy: p}
`, idp.URL, aud, header, staleFor, sub))
	}
	plans := []*config.Plan{
		plan("orders", "alice", "X-Auth-A", "1h"),
		plan("billing", "bob", "X-Auth-B", "1h"),
		plan("orders", "alice", "X-Auth-A", "2h"), // a new fetcher: the old one retires
		plan("billing", "bob", "X-Auth-B", "2h"),
	}
	s, err := New(plans[0], Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			s.Close()
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.Ready(ctx); err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer()
	s.RegisterGRPC(g)
	go g.Serve(lis)
	t.Cleanup(g.Stop)
	cc, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	client := authv3.NewAuthorizationClient(cc)

	now := time.Now()
	tok := func(aud, sub, kid string) string {
		c := claimsAt("https://a.example/", aud, now)
		c["sub"] = sub
		return testkeys.Mint("RS256", testkeys.Private(testkeys.RSA2048A), map[string]any{"kid": kid}, c)
	}
	tA, tB := tok("orders", "alice", "rsa-a"), tok("billing", "bob", "rsa-a")
	mixes := []string{tok("billing", "alice", "rsa-a"), tok("orders", "bob", "rsa-a")}
	unknownKid := tok("orders", "alice", "nope")

	type answer struct {
		allowed bool
		headers []string // lower-case header names set on an allow
		code    int
	}
	httpAsk := func(token string) answer {
		r := httptest.NewRequest(http.MethodGet, "/v1/authz/orders/1", nil)
		r.Host = "api.example"
		r.Header.Set("Authorization", "Bearer "+token)
		w := httptest.NewRecorder()
		s.Handler().ServeHTTP(w, r)
		var hs []string
		for k := range w.Header() {
			if strings.HasPrefix(strings.ToLower(k), "x-auth-") {
				hs = append(hs, strings.ToLower(k))
			}
		}
		return answer{w.Code == 200, hs, w.Code}
	}
	grpcAsk := func(token string) answer {
		resp, err := client.Check(context.Background(), &authv3.CheckRequest{Attributes: &authv3.AttributeContext{
			Request: &authv3.AttributeContext_Request{Http: &authv3.AttributeContext_HttpRequest{
				Method: "GET", Scheme: "https", Host: "api.example", Path: "/orders/1",
				Headers: map[string]string{"authorization": "Bearer " + token},
			}},
			Source: &authv3.AttributeContext_Peer{Address: &corev3.Address{}},
		}})
		if err != nil {
			return answer{code: 503}
		}
		ok := resp.GetOkResponse()
		if ok == nil {
			return answer{code: int(resp.GetDeniedResponse().GetStatus().GetCode())}
		}
		var hs []string
		for _, h := range ok.GetHeaders() {
			if strings.HasPrefix(h.GetHeader().GetKey(), "x-auth-") {
				hs = append(hs, h.GetHeader().GetKey())
			}
		}
		return answer{true, hs, 200}
	}
	asks := map[string]func(string) answer{"http": httpAsk, "grpc": grpcAsk}

	var failures atomic.Int64
	fail := func(format string, args ...any) {
		if failures.Add(1) <= 20 {
			t.Errorf(format, args...)
		}
	}
	checkAllowed := func(front, name string, a answer, want string) {
		if !a.allowed {
			return
		}
		if len(a.headers) != 1 || a.headers[0] != want {
			fail("%s: %s allowed with headers %q, want only %s", front, name, a.headers, want)
		}
	}
	stop := make(chan struct{})
	var stopOnce sync.Once
	stopAll := func() { stopOnce.Do(func() { close(stop) }) }
	var wg sync.WaitGroup
	// A t.Fatal below must not leave the workers calling t.Errorf after
	// the test ended.
	t.Cleanup(func() { stopAll(); wg.Wait() })
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			front := []string{"http", "grpc"}[w%2]
			ask := asks[front]
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				checkAllowed(front, "tA", ask(tA), "x-auth-a")
				checkAllowed(front, "tB", ask(tB), "x-auth-b")
				for _, m := range mixes {
					if a := ask(m); a.allowed {
						fail("%s: a token only a mix of the plans allows was allowed (headers %q)", front, a.headers)
					}
				}
				if i%16 == 0 {
					if a := ask(unknownKid); a.allowed {
						fail("%s: unknown kid allowed", front)
					}
				}
			}
		}()
	}

	deadline := time.Now().Add(4 * time.Second)
	for i := 1; time.Now().Before(deadline); i++ {
		p := plans[i%len(plans)]
		if err := s.Reload(ctx, p); err != nil {
			t.Fatalf("Reload %d: %v", i, err)
		}
		// Decided after the reload returned: the new plan only.
		isA := i%2 == 0
		for front, ask := range asks {
			a, b := ask(tA), ask(tB)
			if a.allowed != isA || b.allowed == isA {
				fail("%s after reload %d (plan %s): tA allowed %t (code %d), tB allowed %t (code %d)", front, i, map[bool]string{true: "A", false: "B"}[isA], a.allowed, a.code, b.allowed, b.code)
			}
		}
	}
	// Drain while reloads and requests run, then Close while reloads
	// still run (they end once Close has returned: a Close that did not
	// wait for the reload in flight races its undo, which -race reports).
	done := make(chan struct{})
	var rw sync.WaitGroup
	rw.Add(1)
	go func() {
		defer rw.Done()
		for i := 0; i < 10000; i++ {
			select {
			case <-done:
				return
			default:
			}
			_ = s.Reload(ctx, plans[i%len(plans)])
		}
	}()
	time.Sleep(50 * time.Millisecond)
	s.Drain()
	time.Sleep(50 * time.Millisecond)
	stopAll()
	wg.Wait()
	g.Stop()
	go func() { s.Close(); close(done) }()
	select {
	case <-done:
		closed = true
	case <-time.After(5 * time.Second):
		t.Fatal("Close() did not return within 5s")
	}
	rw.Wait()
}
