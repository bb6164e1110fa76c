package integration

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/cache"
	"github.com/jwksverify/jwksverify/internal/testkeys"
)

// The DPoP tests run real redis-server processes and real jwksverify
// binaries: the replay decision is shared across replicas through Redis.

// redisProc is a redis-server on 127.0.0.1:port, without persistence
// unless dir is set: then an append-only file there, fsync'd on every
// write, which a restart reads back.
type redisProc struct {
	t    *testing.T
	bin  string
	port int
	args []string // extra arguments (--replicaof, --requirepass, ...)
	dir  string   // with AOF (appendfsync always) in dir; "" = no persistence
	p    *process
}

func startRedis(t *testing.T, args ...string) *redisProc {
	t.Helper()
	r := &redisProc{t: t, bin: requireTool(t, "redis-server", "redis-server"), port: freePort(t), args: args}
	r.start()
	return r
}

func (r *redisProc) start() {
	r.t.Helper()
	// Every process gets a directory of its own: a replica's full
	// synchronization writes dump.rdb there even with --save "" (into the
	// test's working directory, the checkout, without --dir).
	args := []string{"--port", strconv.Itoa(r.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", r.t.TempDir()}
	if r.dir != "" {
		args = append(args[:len(args)-3], "yes", "--appendfsync", "always", "--dir", r.dir)
	}
	r.p = startProcess(r.t, "redis-server:"+strconv.Itoa(r.port), exec.Command(r.bin, append(args, r.args...)...))
	waitTCP(r.t, r.p, r.addr())
}

func (r *redisProc) addr() string { return "127.0.0.1:" + strconv.Itoa(r.port) }

// dpopClient is a DPoP client: its key (EC P-256, testkeys ec256-b) and
// tokens bound to it.
type dpopClient struct {
	key string
	jkt string
}

func newDPoPClient(t *testing.T, key string) *dpopClient {
	k, err := cache.NewKey(testkeys.Public(key), cache.KeyMeta{})
	if err != nil {
		t.Fatal(err)
	}
	return &dpopClient{key: key, jkt: k.Thumbprint}
}

// proof signs a proof for POST https://api.example.com/orders/1 and token.
func (c *dpopClient) proof(jti, token string) string {
	s := sha256.Sum256([]byte(token))
	return testkeys.Mint("ES256", testkeys.Private(c.key),
		map[string]any{"typ": "dpop+jwt", "jwk": testkeys.JWKJSON(testkeys.JWK{Key: testkeys.Public(c.key)})},
		map[string]any{"jti": jti, "htm": "POST", "htu": "https://api.example.com/orders/1",
			"iat": time.Now().Unix(), "ath": base64.RawURLEncoding.EncodeToString(s[:])})
}

// dpopAuthz asks jwksverify's forward-auth as nginx does, and returns the
// status and the class of a denial.
func dpopAuthz(c *http.Client, base, token, proof string) (int, string, error) {
	return forwardAuthErr(c, base, "DPoP", token, proof, "")
}

// dpopConfig is a DPoP-required issuer over the Redis at redisAddr. The
// timeout is generous: 1000 concurrent requests on a busy 2-core machine
// queue for the pool, and this test is about correctness, not latency.
func dpopConfig(is *testIssuer, redisAddr string) string {
	return fmt.Sprintf(`listen: 127.0.0.1:0
shutdown_timeout: 1s
forward_auth: {proxy: nginx}
dpop: {replay_store: redis, redis_url: "redis://%s", redis_timeout: 2s}
issuers:
%s    sender_constraint: {dpop: required}
`, redisAddr, is.IssuerConfig())
}

// TestDPoPReplayAcrossReplicas: two jwksverify processes share one Redis.
// A proof accepted at one is refused at the other; 1000 concurrent replays
// of one proof across both are accepted exactly once; Redis stopped gives
// 503, restarted the service resumes without a restart of jwksverify.
func TestDPoPReplayAcrossReplicas(t *testing.T) {
	rd := startRedis(t)
	is := newTestIssuer(t)
	a := startJWKSVerify(t, dpopConfig(is, rd.addr()))
	b := startJWKSVerify(t, dpopConfig(is, rd.addr()))
	cl := newDPoPClient(t, testkeys.EC256B)
	token := is.Token(map[string]any{"cnf": map[string]any{"jkt": cl.jkt}})
	hc := httpClient()

	t.Run("accepted-at-one-refused-at-other", func(t *testing.T) {
		p := cl.proof("replica-1", token)
		if code, class, err := dpopAuthz(hc, a.HTTP, token, p); err != nil || code != 200 {
			t.Fatalf("first use at A = %d %s %v, want 200", code, class, err)
		}
		if code, class, err := dpopAuthz(hc, b.HTTP, token, p); err != nil || code != 401 || class != "invalid_dpop_proof" {
			t.Fatalf("replay at B = %d %s %v, want 401 invalid_dpop_proof", code, class, err)
		}
	})

	t.Run("1000-concurrent-replays-accepted-once", func(t *testing.T) {
		p := cl.proof("concurrent-1", token)
		tr := &http.Transport{MaxConnsPerHost: 64, MaxIdleConnsPerHost: 64}
		defer tr.CloseIdleConnections()
		c := &http.Client{Transport: tr, Timeout: 10 * time.Second}
		var ok, denied, other atomic.Int64
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range 1000 {
			base := a.HTTP
			if i%2 == 1 {
				base = b.HTTP
			}
			wg.Go(func() {
				<-start
				code, class, err := dpopAuthz(c, base, token, p)
				switch {
				case err == nil && code == 200:
					ok.Add(1)
				case err == nil && code == 401 && class == "invalid_dpop_proof":
					denied.Add(1)
				default:
					other.Add(1)
					t.Errorf("replay: %d %s %v", code, class, err)
				}
			})
		}
		close(start)
		wg.Wait()
		if ok.Load() != 1 || denied.Load() != 999 || other.Load() != 0 {
			t.Errorf("1000 concurrent uses: %d accepted, %d refused, %d other; want 1, 999, 0", ok.Load(), denied.Load(), other.Load())
		}
	})

	t.Run("redis-stopped-then-restarted", func(t *testing.T) {
		rd.p.stop()
		for i, base := range []string{a.HTTP, b.HTTP} {
			code, class, err := dpopAuthz(hc, base, token, cl.proof(fmt.Sprintf("down-%d", i), token))
			if err != nil || code != 503 || class != "keys_unavailable" {
				t.Errorf("redis stopped: replica %d = %d %s %v, want 503 keys_unavailable", i, code, class, err)
			}
		}
		rd.start()
		for i, base := range []string{a.HTTP, b.HTTP} {
			var code int
			var class string
			// go-redis reconnects on the next call; allow a few for the pool.
			deadline := time.Now().Add(startTimeout)
			for n := 0; ; n++ {
				var err error
				code, class, err = dpopAuthz(hc, base, token, cl.proof(fmt.Sprintf("up-%d-%d", i, n), token))
				if err == nil && code == 200 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("redis restarted: replica %d still %d %s %v", i, code, class, err)
				}
				time.Sleep(pollEvery)
			}
		}
		if strings.Contains(a.Output(), "redis://") || strings.Contains(b.Output(), "redis://") {
			t.Error("a log line holds the redis URL")
		}
	})
}
