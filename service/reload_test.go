package service

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/config"
	"github.com/jwksverify/jwksverify/internal/testkeys"
	"github.com/jwksverify/jwksverify/replay"
	"github.com/redis/go-redis/v9"
)

// introspectionServer is an RFC 7662 endpoint that answers every token
// active for an hour, counts its calls, and can be turned off (503).
type introspectionServer struct {
	*httptest.Server
	calls atomic.Int64
	down  atomic.Bool
}

func newIntrospectionServer(t *testing.T, iss string) *introspectionServer {
	t.Helper()
	s := &introspectionServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.calls.Add(1)
		if s.down.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"active":true,"iss":%q,"sub":"alice","exp":%d}`, iss, time.Now().Add(time.Hour).Unix())
	}))
	t.Cleanup(s.Close)
	return s
}

// writePlan writes content to path and loads it as serve does.
func writePlan(t *testing.T, path, content string) *config.Plan {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	plan, err := config.Load(path, config.Overrides{}, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatalf("config.Load() = %v", err)
	}
	return plan
}

// startLive starts the service of plan, closed at the end of the test.
func startLive(t *testing.T, plan *config.Plan) *Service {
	t.Helper()
	l, err := New(plan, Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatalf("New() = %v", err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// jwksServer serves testJWKS, closed at the end of the test.
func jwksServer(t *testing.T) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(testJWKS()) }))
	t.Cleanup(s.Close)
	return s
}

// A reload keeps the introspection answer cache of an issuer whose
// introspection settings did not change, as it keeps its keys (SPEC: issuers
// whose settings did not change keep their keys and caches): a reload asks
// the authorization server again for no cached token, and while that server
// is down the cached answers keep serving (within stale_for) across the
// reload instead of turning into 503 keys_unavailable. A changed
// introspection setting starts a new cache.
func TestReloadKeepsIntrospectionCache(t *testing.T) {
	jwksSrv := jwksServer(t)
	const iss = "https://as.example/"
	as := newIntrospectionServer(t, iss)
	dir := t.TempDir()
	file := func(audience, maxTTL string) string {
		return fmt.Sprintf(`listen: 127.0.0.1:0
issuers:
  - issuer: %s
    jwks_url: %s
    introspection: {url: %q, cache: {max_ttl: %s}}
  - issuer: https://other.example/
    jwks_url: %s
    audiences: [%s]
`, iss, jwksSrv.URL, as.URL, maxTTL, jwksSrv.URL, audience)
	}
	path := filepath.Join(dir, "config.yaml")
	load := func(content string) *config.Plan {
		t.Helper()
		return writePlan(t, path, content)
	}
	l := startLive(t, load(file("a", "5m")))
	ctx := context.Background()
	verifyOpaque := func(tok string) error {
		_, err := l.Server().Verifier().Verify(ctx, tok)
		return err
	}
	for _, tok := range []string{"opaque-1", "opaque-2"} {
		if err := verifyOpaque(tok); err != nil {
			t.Fatalf("Verify(%s) = %v, want active", tok, err)
		}
	}
	if n := as.calls.Load(); n != 2 {
		t.Fatalf("introspection calls = %d, want 2", n)
	}

	tests := []struct {
		name      string
		audience  string
		maxTTL    string
		down      bool
		wantCalls int64 // upstream calls the two tokens cost after the reload
		wantErr   error
	}{
		{name: "other-issuer-changed", audience: "b", maxTTL: "5m", wantCalls: 0},
		{name: "server-down-then-reload", audience: "c", maxTTL: "5m", down: true, wantCalls: 0},
		{name: "introspection-changed", audience: "c", maxTTL: "4m", wantCalls: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			as.down.Store(tt.down)
			defer as.down.Store(false)
			mustReload(t, l, ctx, load(file(tt.audience, tt.maxTTL)))
			if got, want := l.Plan().Hash, config.Hash([]byte(file(tt.audience, tt.maxTTL))); got != want {
				t.Fatalf("after reload: config hash %s, want %s (not swapped in)", got, want)
			}
			before := as.calls.Load()
			for _, tok := range []string{"opaque-1", "opaque-2"} {
				if err := verifyOpaque(tok); !errors.Is(err, tt.wantErr) {
					t.Errorf("after reload: Verify(%s) = %v, want %v", tok, err, tt.wantErr)
				}
			}
			if got := as.calls.Load() - before; got != tt.wantCalls {
				t.Errorf("after reload: introspection calls = %d, want %d", got, tt.wantCalls)
			}
		})
	}
}

// An introspection server slower than the unknown-kid waits but within the
// introspection client's own bounds (max_wait for a slot, then its call
// timeout) is answered the same over every front end: a request with a body
// (POST /v1/verify, POST /introspect) is not cut at the unknown-kid wait
// budget into 503 keys_unavailable while a forward-auth GET of the same
// token is allowed. The wait budget of a request (and the HTTP timeouts
// derived from it) covers the longest introspection call.
func TestSlowIntrospectionAnsweredOnEveryFrontEnd(t *testing.T) {
	jwksSrv := jwksServer(t)
	const iss = "https://as.example/"
	const delay = 2 * time.Second // beyond 1.5s (the unknown-kid wait and its margin), within the 5s call timeout
	as := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select { // a slow authorization server, not a synchronization
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"active":true,"iss":%q,"sub":"alice","exp":%d}`, iss, time.Now().Add(time.Hour).Unix())
	}))
	t.Cleanup(as.Close)
	path := filepath.Join(t.TempDir(), "config.yaml")
	content := fmt.Sprintf(`listen: 127.0.0.1:0
issuers:
  - issuer: %s
    jwks_url: %s
    introspection: {url: %q}
`, iss, jwksSrv.URL, as.URL)
	plan := writePlan(t, path, content)
	l := startLive(t, plan)
	srv := httptest.NewServer(l.Handler())
	t.Cleanup(srv.Close)

	tests := []struct {
		name, token string
		do          func(tok string) (*http.Response, error)
	}{
		{"post-verify", "opaque-verify", func(tok string) (*http.Response, error) {
			return http.Post(srv.URL+"/v1/verify", "application/json", strings.NewReader(tokenBody(tok)))
		}},
		{"get-authz", "opaque-authz", func(tok string) (*http.Response, error) {
			req, _ := http.NewRequest(http.MethodGet, srv.URL+"/v1/authz", nil)
			req.Header.Set("Authorization", "Bearer "+tok)
			return http.DefaultClient.Do(req)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			resp, err := tt.do(tt.token)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || strings.Contains(string(body), "keys_unavailable") {
				t.Errorf("status %d, body %s; want 200 and the token active", resp.StatusCode, body)
			}
		})
	}
}

// A reload that changes an issuer's refresh settings while its IdP is down
// (an operator lengthening stale_for during an outage, say) keeps the last
// good keys serving: the issuer's new fetcher starts from the set its
// predecessor had for the same source, bounded by the new stale_for from
// that set's fetch time, instead of from nothing (keys_unavailable, not
// ready, until the IdP is back).
func TestReloadDuringIdPOutageKeepsLastGoodKeys(t *testing.T) {
	var down atomic.Bool
	idp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if down.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.Write(testJWKS())
	}))
	t.Cleanup(idp.Close)
	const iss = "https://idp.example/"
	path := filepath.Join(t.TempDir(), "config.yaml")
	load := func(staleFor string) *config.Plan {
		t.Helper()
		content := fmt.Sprintf(`listen: 127.0.0.1:0
issuers:
  - issuer: %s
    jwks_url: %s
    refresh: {stale_for: %s}
`, iss, idp.URL, staleFor)
		return writePlan(t, path, content)
	}
	l := startLive(t, load("1h"))
	if err := l.cur.Load().fetchers[0].f.Ready(context.Background()); err != nil {
		t.Fatal(err)
	}
	tok := mintRS256(claimsAt(iss, "", time.Now()))

	down.Store(true)
	// The reload waits for the new fetcher's first keys at most as long
	// as its context allows (newIssuerWait otherwise).
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	mustReload(t, l, ctx, load("48h"))
	s := l.cur.Load()
	if len(s.fetchers) != 1 || s.fetchers[0].opts.StaleFor != 48*time.Hour {
		t.Fatalf("reload not swapped in")
	}
	if ready, notReady := s.server.Ready(); !ready {
		t.Errorf("after the reload during the outage: Ready() = false %v, want the last good keys serving", notReady)
	}
	if _, err := s.server.Verifier().Verify(context.Background(), tok); err != nil {
		t.Errorf("after the reload during the outage: Verify() = %v, want valid", err)
	}
	set := s.fetchers[0].f.Keys().Load()
	if set == nil {
		t.Fatal("after the reload during the outage: no key set")
	}
	if want := set.FetchedAt.Add(48 * time.Hour); !set.UsableUntil.Equal(want) {
		t.Errorf("UsableUntil = %v, want the fetch time %v + the new stale_for", set.UsableUntil, set.FetchedAt)
	}
}

// A reload that changes the memory replay store's bound
// (dpop.replay_max_entries) does not forget the proofs already used: a
// proof used before the reload is still refused as replayed after it, as a
// full store refuses new proofs rather than forget unexpired ones.
func TestReloadKeepsUsedDPoPProofs(t *testing.T) {
	load := replayBoundPlans(t)
	l := startLive(t, load(1000))
	ctx := context.Background()
	now := time.Now()
	used := [32]byte{1}
	if fresh, err := l.replayStore.Use(ctx, used, time.Minute, now); !fresh || err != nil {
		t.Fatalf("Use() = %t, %v; want fresh", fresh, err)
	}
	tests := []struct {
		name       string
		maxEntries int
	}{
		{"bound-raised", 2000},
		{"bound-lowered", 500},
		{"unchanged", 500},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mustReload(t, l, ctx, load(tt.maxEntries))
			if fresh, err := l.replayStore.Use(ctx, used, time.Minute, now.Add(time.Second)); fresh || err != nil {
				t.Errorf("after the reload: Use() of the proof used before = %t, %v; want replayed", fresh, err)
			}
		})
	}
}

// The HTTP server's timeouts are fixed at start (a reload that changes them
// logs that it needs a restart); a reload that lengthens the waits a
// request may have (a longer unknown_kid_wait, an added issuer) must not
// make requests outlive them: every request is still answered, within the
// waits the running timeouts were derived from, never with a closed
// connection. Here the IdP hangs and the reloaded unknown_kid_wait (30s) is
// longer than the running write timeout (21.5s).
func TestReloadLongerWaitsStayWithinRunningTimeouts(t *testing.T) {
	var hang atomic.Bool
	idp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hang.Load() {
			<-r.Context().Done() // an IdP that accepts and never answers
			return
		}
		w.Write(testJWKS())
	}))
	t.Cleanup(idp.Close)
	const iss = "https://idp.example/"
	path := filepath.Join(t.TempDir(), "config.yaml")
	load := func(refresh string) *config.Plan {
		t.Helper()
		return writePlan(t, path, fmt.Sprintf(`listen: 127.0.0.1:0
issuers:
  - issuer: %s
    jwks_url: %s
    refresh: %s
`, iss, idp.URL, refresh))
	}
	start := load("{fetch_timeout: 1m}")
	l := startLive(t, start)
	if err := l.cur.Load().fetchers[0].f.Ready(context.Background()); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(l.Handler())
	srv.Config.ReadTimeout, srv.Config.WriteTimeout = start.HTTP.Read, start.HTTP.Write // as a program serving Handler sets them
	srv.Start()
	t.Cleanup(srv.Close)

	mustReload(t, l, context.Background(), load("{fetch_timeout: 1m, unknown_kid_wait: 30s}"))
	hang.Store(true)
	tok := testkeys.Mint("RS256", testkeys.Private(testkeys.RSA2048A), map[string]any{"kid": "rotated"}, claimsAt(iss, "", time.Now()))
	tests := []struct {
		name string
		req  func() *http.Request
	}{
		{"get-authz", func() *http.Request {
			r, _ := http.NewRequest(http.MethodGet, srv.URL+"/v1/authz", nil)
			r.Header.Set("Authorization", "Bearer "+tok)
			return r
		}},
		{"post-verify", func() *http.Request {
			r, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/verify", strings.NewReader(tokenBody(tok)))
			return r
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			began := time.Now()
			resp, err := http.DefaultClient.Do(tt.req())
			if err != nil {
				t.Fatalf("after %v: %v; want an answer (unknown_kid)", time.Since(began).Round(time.Millisecond), err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if !strings.Contains(string(body), "unknown_kid") && !strings.Contains(resp.Header.Get("WWW-Authenticate"), "unknown_kid") {
				t.Errorf("status %d, body %s; want unknown_kid", resp.StatusCode, body)
			}
			if took := time.Since(began); took > start.HTTP.Wait+time.Second {
				t.Errorf("answered after %v, want within the running wait budget %v", took.Round(time.Millisecond), start.HTTP.Wait)
			}
		})
	}
}

// Reloads that change the Redis replay store's settings do not pile up
// Redis clients (each with its connections and goroutines) for the life of
// the process: the one in use is kept, and those of the replaced settings
// are closed once the requests that may still use them are done
// (retired), not at exit.
func TestReloadRetiresReplacedRedisClients(t *testing.T) {
	jwksSrv := jwksServer(t)
	path := filepath.Join(t.TempDir(), "config.yaml")
	load := func(timeoutMS int) *config.Plan {
		t.Helper()
		return writePlan(t, path, fmt.Sprintf(`listen: 127.0.0.1:0
dpop: {replay_store: redis, redis_url: "redis://127.0.0.1:1", redis_timeout: %dms}
issuers:
  - issuer: https://idp.example/
    jwks_url: %s
    sender_constraint: {dpop: optional}
`, timeoutMS, jwksSrv.URL))
	}
	l, err := New(load(100), Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatalf("New() = %v", err)
	}
	var replaced []*replay.Redis
	for i := range 10 {
		before := l.replayStore.(*replay.Redis)
		mustReload(t, l, context.Background(), load(101+i))
		replaced = append(replaced, before)
	}
	if n := len(l.redisAll); n != 1 {
		t.Errorf("after 10 reloads changing redis_timeout: %d Redis clients held for the life of the process, want 1 (the one in use)", n)
	}
	if len(l.redisAll) > 0 && (l.redisAll[0] != l.redis || l.replayClient != l.redis) {
		t.Errorf("the Redis client kept is not the one the store in use uses")
	}
	// Retired, not just forgotten: closing the service ends the grace at
	// once, and every replaced client is then closed.
	l.Close()
	for i, r := range replaced {
		if err := r.Ping(context.Background()); !errors.Is(err, redis.ErrClosed) {
			t.Errorf("replaced client %d: Ping() = %v, want %v (closed)", i, err, redis.ErrClosed)
		}
	}
}

// replayBoundPlans returns a loader of plans, each written to one file:
// an issuer with DPoP optional over a memory replay store of maxEntries.
func replayBoundPlans(t *testing.T) func(maxEntries int) *config.Plan {
	jwksSrv := jwksServer(t)
	path := filepath.Join(t.TempDir(), "config.yaml")
	return func(maxEntries int) *config.Plan {
		t.Helper()
		return writePlan(t, path, fmt.Sprintf(`listen: 127.0.0.1:0
dpop: {replay_store: memory, replay_max_entries: %d}
issuers:
  - issuer: https://idp.example/
    jwks_url: %s
    sender_constraint: {dpop: optional}
`, maxEntries, jwksSrv.URL))
	}
}
