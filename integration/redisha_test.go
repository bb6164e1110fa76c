package integration

import (
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/internal/redistest"
	"github.com/jwksverify/jwksverify/internal/testkeys"
)

// The tests of this file run Redis as teams run it across zones, with real
// processes on loopback: a master, its replicas and three sentinels; a
// three-master cluster made with redis-cli --cluster create. Two or three
// jwksverify replicas share it.

// redisCLI runs redis-cli against 127.0.0.1:port and returns its output.
func redisCLI(t *testing.T, port int, args ...string) (string, error) {
	t.Helper()
	bin := requireTool(t, "redis-cli", "redis-tools")
	out, err := exec.Command(bin, append([]string{"-h", "127.0.0.1", "-p", strconv.Itoa(port)}, args...)...).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// sentinelSet is a master, two replicas and three sentinels watching the
// master as "mymaster" (quorum 2, down after 1s).
type sentinelSet struct {
	nodes     []*redisProc // nodes[0] is the first master
	sentinels []*redisProc
}

func startSentinelSet(t *testing.T) *sentinelSet {
	t.Helper()
	s := &sentinelSet{}
	master := startRedis(t)
	s.nodes = []*redisProc{master}
	for range 2 {
		s.nodes = append(s.nodes, startRedis(t, "--replicaof", "127.0.0.1", strconv.Itoa(master.port)))
	}
	for _, r := range s.nodes[1:] {
		waitFor(t, startTimeout, "replica in sync", func() bool {
			out, _ := redisCLI(t, r.port, "INFO", "replication")
			return strings.Contains(out, "master_link_status:up")
		})
	}
	for range 3 {
		port := freePort(t)
		dir := t.TempDir()
		conf := filepath.Join(dir, "sentinel.conf")
		if err := os.WriteFile(conf, fmt.Appendf(nil, `port %d
bind 127.0.0.1
dir %s
sentinel monitor mymaster 127.0.0.1 %d 2
sentinel down-after-milliseconds mymaster 1000
sentinel failover-timeout mymaster 4000
sentinel parallel-syncs mymaster 2
`, port, dir, master.port), 0o600); err != nil {
			t.Fatal(err)
		}
		r := &redisProc{t: t, bin: master.bin, port: port}
		r.p = startProcess(t, "redis-sentinel:"+strconv.Itoa(port), exec.Command(r.bin, conf, "--sentinel"))
		waitTCP(t, r.p, r.addr())
		s.sentinels = append(s.sentinels, r)
	}
	for _, sn := range s.sentinels {
		waitFor(t, 3*startTimeout, "sentinels know the replicas and each other", func() bool {
			out, _ := redisCLI(t, sn.port, "SENTINEL", "MASTER", "mymaster")
			f := strings.Fields(out)
			i, j := slices.Index(f, "num-slaves"), slices.Index(f, "num-other-sentinels")
			return i >= 0 && j >= 0 && i+1 < len(f) && j+1 < len(f) && f[i+1] == "2" && f[j+1] == "2"
		})
	}
	return s
}

// masterPort is the master's port as the first sentinel reports it.
func (s *sentinelSet) masterPort(t *testing.T) int {
	t.Helper()
	out, err := redisCLI(t, s.sentinels[0].port, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", "mymaster")
	f := strings.Fields(out)
	if err != nil || len(f) != 2 {
		return 0
	}
	p, _ := strconv.Atoi(f[1])
	return p
}

// config is the redis section that names the sentinels.
func (s *sentinelSet) config(ack int) string {
	var addrs []string
	for _, sn := range s.sentinels {
		addrs = append(addrs, strconv.Quote(sn.addr()))
	}
	return fmt.Sprintf("redis: {sentinel: {master: mymaster, addrs: [%s]}, timeout: 300ms, acknowledge_replicas: %d}\n", strings.Join(addrs, ", "), ack)
}

// dpopRedisConfig is a DPoP-required issuer over the given redis section,
// with revocations in Redis and the admin API (client "admin", secret
// revokeSecret from JV_REVOKE_SECRET). max_age is long so that every replay
// in a test is within it.
func dpopRedisConfig(is *testIssuer, redisSection string) string {
	return fmt.Sprintf(`listen: 127.0.0.1:0
admin_listen: 127.0.0.1:0
shutdown_timeout: 1s
forward_auth: {proxy: nginx}
introspection: {clients: [{id: admin, secret_env: JV_REVOKE_SECRET}]}
dpop: {replay_store: redis, max_age: 5m}
revocation: {store: redis}
%sissuers:
%s    sender_constraint: {dpop: required}
`, redisSection, is.IssuerConfig())
}

// ackedRevocation is a revocation the admin API acknowledged (201), and when.
type ackedRevocation struct {
	jti string
	at  time.Time
}

// revocations posts revocations of tokens with jti prefix-N to the
// replicas' admin APIs in turn until stop is closed, and returns the
// revocations acknowledged (201). An answer other than 201 or 503 fails the
// test.
func revocations(t *testing.T, admins []string, is *testIssuer, prefix string, stop <-chan struct{}) func() []ackedRevocation {
	var mu sync.Mutex
	var acked []ackedRevocation
	done := make(chan struct{})
	go func() {
		defer close(done)
		c := &http.Client{Timeout: 5 * time.Second}
		for n := 0; ; n++ {
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
			jti := fmt.Sprintf("%s-%d", prefix, n)
			code, b, err := adminCall(c, admins[n%len(admins)], http.MethodPost, "/v1/revocations", fmt.Sprintf(`{"issuer":%q,"jti":%q}`, is.Issuer, jti))
			switch {
			case err == nil && code == http.StatusCreated:
				mu.Lock()
				acked = append(acked, ackedRevocation{jti, time.Now()})
				mu.Unlock()
			case err == nil && code == http.StatusServiceUnavailable:
			default:
				t.Errorf("POST /v1/revocations = %d %s %v, want 201 or 503", code, b, err)
			}
		}
	}()
	return func() []ackedRevocation {
		<-done
		mu.Lock()
		defer mu.Unlock()
		return acked
	}
}

// enforced waits (at most limit) until every replica refuses the token of
// each jti as revoked, and fails the test naming those it never refused.
func enforced(t *testing.T, replicas []string, is *testIssuer, jtis []string, limit time.Duration) time.Duration {
	t.Helper()
	c := httpClient()
	start := time.Now()
	pending := slices.Clone(jtis)
	for len(pending) > 0 {
		var still []string
		for _, jti := range pending {
			tok := is.Token(map[string]any{"jti": jti})
			for _, base := range replicas {
				if code, class := bearerAuthz(c, base, tok); code != http.StatusUnauthorized || class != "revoked" {
					still = append(still, jti)
					break
				}
			}
		}
		pending = still
		if len(pending) > 0 && time.Since(start) > limit {
			t.Errorf("%d acknowledged revocations not enforced by every replica after %v (e.g. %q)", len(pending), limit, pending[0])
			break
		}
		if len(pending) > 0 {
			time.Sleep(100 * time.Millisecond) // the replicas' copies resyncing
		}
	}
	return time.Since(start)
}

// answer is one forward-auth answer of a load.
type answer struct {
	at      time.Time
	replica int
	code    int
	class   string
	err     error
}

// dpopLoad uses fresh proofs at the replicas, each at once replayed at the
// other replica, until stop is closed; it records every answer and fails
// the test on a replay accepted or an answer other than 200, 401
// invalid_dpop_proof and 503 keys_unavailable.
type dpopLoad struct {
	t        *testing.T
	replicas []string
	cl       *dpopClient
	token    string

	mu       sync.Mutex
	first    []answer          // the answers to the first use of each proof
	accepted map[string]string // jti -> proof, accepted once
	replays  atomic.Int64      // replays refused
}

func newDPoPLoad(t *testing.T, replicas []string, cl *dpopClient, token string) *dpopLoad {
	return &dpopLoad{t: t, replicas: replicas, cl: cl, token: token, accepted: map[string]string{}}
}

// run runs workers until stop is closed (each pauses between proofs:
// the machine is shared).
func (l *dpopLoad) run(workers int, prefix string, stop <-chan struct{}) *sync.WaitGroup {
	var wg sync.WaitGroup
	tr := &http.Transport{MaxIdleConnsPerHost: 8}
	c := &http.Client{Transport: tr, Timeout: 5 * time.Second}
	for w := range workers {
		wg.Go(func() {
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				case <-time.After(5 * time.Millisecond):
				}
				jti := fmt.Sprintf("%s-%d-%d", prefix, w, n)
				first := (w + n) % len(l.replicas)
				l.use(c, jti, l.cl.proof(jti, l.token), first)
			}
		})
	}
	return &wg
}

// use sends proof to replica first, then replays it at the next one.
func (l *dpopLoad) use(c *http.Client, jti, proof string, first int) {
	code, class, err := dpopAuthz(c, l.replicas[first], l.token, proof)
	a := answer{at: time.Now(), replica: first, code: code, class: class, err: err}
	l.check(a, "first use")
	l.mu.Lock()
	l.first = append(l.first, a)
	if code == http.StatusOK {
		l.accepted[jti] = proof
	}
	l.mu.Unlock()
	second := (first + 1) % len(l.replicas)
	code2, class2, err2 := dpopAuthz(c, l.replicas[second], l.token, proof)
	l.check(answer{at: time.Now(), replica: second, code: code2, class: class2, err: err2}, "replay")
	if code == http.StatusOK && code2 == http.StatusOK {
		l.t.Errorf("proof %s accepted at replica %d and replayed with 200 at replica %d", jti, first, second)
	}
	if code2 == http.StatusUnauthorized {
		l.replays.Add(1)
	}
}

// check fails the test on an answer that is neither an allow, a replay
// refusal nor 503 keys_unavailable.
func (l *dpopLoad) check(a answer, what string) {
	switch {
	case a.err != nil:
		l.t.Errorf("%s at replica %d: %v", what, a.replica, a.err)
	case a.code == http.StatusOK, a.code == http.StatusUnauthorized && a.class == "invalid_dpop_proof",
		a.code == http.StatusServiceUnavailable && a.class == "keys_unavailable":
	default:
		l.t.Errorf("%s at replica %d = %d %q, want 200, 401 invalid_dpop_proof or 503 keys_unavailable", what, a.replica, a.code, a.class)
	}
}

// recovered returns, for each replica, the first time after since that
// its first use was allowed again after a 503 (an answer already on its
// way when Redis failed may still be an allow), how many 503 it answered
// before, and whether every other answer before was an allow of those.
func (l *dpopLoad) recovered(since time.Time) (at []time.Time, n503 []int, only503 bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	at, n503, only503 = make([]time.Time, len(l.replicas)), make([]int, len(l.replicas)), true
	for _, a := range l.first {
		r := a.replica
		if a.at.Before(since) || !at[r].IsZero() {
			continue
		}
		switch {
		case a.code == http.StatusServiceUnavailable:
			n503[r]++
		case a.code == http.StatusOK && n503[r] > 0:
			at[r] = a.at
		case a.code != http.StatusOK:
			only503 = false
		}
	}
	return at, n503, only503
}

// replayAll replays every accepted proof at every replica: each must be
// refused as replayed, whatever happened to Redis since it was accepted (a
// 503 while Sentinel settles is asked again).
func (l *dpopLoad) replayAll(c *http.Client) int {
	l.mu.Lock()
	proofs := make(map[string]string, len(l.accepted))
	for k, v := range l.accepted {
		proofs[k] = v
	}
	l.mu.Unlock()
	for jti, p := range proofs {
		for i, base := range l.replicas {
			code, class, err := dpopAuthz(c, base, l.token, p)
			// A 503 is fail-closed, not an answer: Sentinel may still be
			// settling (a second switch-master seconds after the first was
			// seen on a busy machine, closing the connection an EVAL was
			// on). Ask again until the store answers, then it must say
			// replayed.
			for deadline := time.Now().Add(15 * time.Second); err == nil && code == http.StatusServiceUnavailable && time.Now().Before(deadline); {
				time.Sleep(200 * time.Millisecond)
				code, class, err = dpopAuthz(c, base, l.token, p)
			}
			if err != nil || code != http.StatusUnauthorized || class != "invalid_dpop_proof" {
				l.t.Errorf("replay of accepted proof %s at replica %d = %d %q %v, want 401 invalid_dpop_proof", jti, i, code, class, err)
			}
		}
	}
	return len(proofs)
}

// TestRedisSentinelFailover: two jwksverify replicas share a Sentinel
// master with acknowledge_replicas: 1. The master is SIGKILLed under DPoP
// load and a stream of admin revocations: no replayed proof is ever
// accepted (not at once, not after the failover: every proof accepted
// before the kill is still refused at both replicas), every revocation
// acknowledged (201) before or during the failover is enforced by both
// replicas after it, the requests during the failover get 503
// keys_unavailable, and both replicas recover without a restart. The times
// are logged (OPERATIONS.md quotes them).
func TestRedisSentinelFailover(t *testing.T) {
	s := startSentinelSet(t)
	t.Setenv("JV_REVOKE_SECRET", revokeSecret)
	is := newTestIssuer(t)
	conf := dpopRedisConfig(is, s.config(1))
	a, b := startJWKSVerify(t, conf), startJWKSVerify(t, conf)
	cl := newDPoPClient(t, testkeys.EC256B)
	token := is.Token(map[string]any{"cnf": map[string]any{"jkt": cl.jkt}})
	load := newDPoPLoad(t, []string{a.HTTP, b.HTTP}, cl, token)

	stop := make(chan struct{})
	wg := load.run(2, "sentinel", stop)
	stopRevoking := make(chan struct{})
	revoked := revocations(t, []string{a.Admin, b.Admin}, is, "revoked-across-failover", stopRevoking)
	waitFor(t, startTimeout, "proofs accepted before the kill", func() bool {
		load.mu.Lock()
		defer load.mu.Unlock()
		return len(load.accepted) >= 50
	})
	oldMaster := s.masterPort(t)
	if oldMaster != s.nodes[0].port {
		t.Fatalf("the sentinels name master port %d, want %d", oldMaster, s.nodes[0].port)
	}
	killed := time.Now()
	if err := s.nodes[0].p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var promoted time.Time
	waitFor(t, 30*time.Second, "a replica promoted", func() bool {
		if p := s.masterPort(t); p != 0 && p != oldMaster {
			promoted = time.Now()
			return true
		}
		return false
	})
	var at []time.Time
	waitFor(t, 30*time.Second, "both jwksverify replicas allowing again", func() bool {
		at, _, _ = load.recovered(killed)
		return !at[0].IsZero() && !at[1].IsZero()
	})
	time.Sleep(time.Second) // some load after the recovery
	close(stop)
	close(stopRevoking)
	wg.Wait()
	var jtis []string
	var beforeKill int
	for _, r := range revoked() {
		jtis = append(jtis, r.jti)
		if r.at.Before(killed) {
			beforeKill++
		}
	}
	if beforeKill == 0 {
		t.Errorf("no revocation acknowledged before the kill")
	}
	took := enforced(t, []string{a.HTTP, b.HTTP}, is, jtis, 15*time.Second)
	t.Logf("%d revocations acknowledged (acknowledge_replicas: 1), %d of them before the SIGKILL: every one enforced by both replicas after the failover (checked %v after the load stopped)",
		len(jtis), beforeKill, took.Round(time.Millisecond))

	at, n503, only503 := load.recovered(killed)
	if !only503 {
		t.Errorf("a first use between the kill and a replica's recovery was answered neither 200 nor 503")
	}
	for i, r := range at {
		if n503[i] == 0 {
			t.Errorf("replica %d answered no 503 during the failover", i)
		}
		t.Logf("replica %d: allowing again %v after the SIGKILL, %v after the promotion (sentinel promoted %v after the kill); %d answers 503 meanwhile",
			i, r.Sub(killed).Round(10*time.Millisecond), r.Sub(promoted).Round(10*time.Millisecond), promoted.Sub(killed).Round(10*time.Millisecond), n503[i])
		if d := r.Sub(promoted); d > 10*time.Second {
			t.Errorf("replica %d allowed again %v after the promotion, want within 10s (SPEC)", i, d)
		}
	}
	n := load.replayAll(httpClient())
	t.Logf("%d proofs accepted in all, each refused again at both replicas after the failover; %d immediate replays refused", n, load.replays.Load())
	for _, j := range []*jwksverifyProc{a, b} {
		if j.exited() {
			t.Errorf("a jwksverify replica exited: %s", j.Output())
		}
		notJSON(t, j.Output())
	}
}

// notJSON fails t for each line of a jwksverify process's output that is
// not one JSON object: the Redis client library's own lines (a Sentinel or
// master it cannot reach) came as text on stderr, which a log pipeline
// cannot parse.
func notJSON(t *testing.T, out string) {
	t.Helper()
	for line := range strings.Lines(out) {
		if line = strings.TrimSpace(line); line != "" && !json.Valid([]byte(line)) {
			t.Errorf("a line of jwksverify's output is not JSON: %q", line)
		}
	}
}

// clusterSet is a Redis Cluster of three masters.
type clusterSet struct {
	nodes []*redisProc
}

func startCluster(t *testing.T) *clusterSet {
	t.Helper()
	c := &clusterSet{}
	var addrs []string
	for range 3 {
		dir := t.TempDir()
		r := startRedis(t, "--cluster-enabled", "yes", "--cluster-config-file", filepath.Join(dir, "nodes.conf"),
			"--cluster-node-timeout", "5000", "--dir", dir)
		c.nodes = append(c.nodes, r)
		addrs = append(addrs, r.addr())
	}
	if out, err := redisCLI(t, c.nodes[0].port, append(append([]string{"--cluster", "create"}, addrs...), "--cluster-yes")...); err != nil {
		t.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	for _, r := range c.nodes {
		waitFor(t, 3*startTimeout, "cluster_state:ok", func() bool {
			out, _ := redisCLI(t, r.port, "CLUSTER", "INFO")
			return strings.Contains(out, "cluster_state:ok")
		})
	}
	return c
}

func (c *clusterSet) config() string {
	return fmt.Sprintf("redis: {cluster: {addrs: [%q, %q]}, timeout: 500ms}\n", c.nodes[0].addr(), c.nodes[1].addr())
}

// TestRedisCluster: two jwksverify replicas over a three-master cluster.
// Proofs spread over every master's slots are each accepted once and
// refused when replayed at the other replica; revocations acknowledged at
// either replica are enforced by both; a slot migration (redis-cli
// --cluster reshard, under DPoP and revocation load) allows no replay,
// neither during it nor after (every proof accepted before is refused
// again at both replicas), and loses no acknowledged revocation.
func TestRedisCluster(t *testing.T) {
	c := startCluster(t)
	t.Setenv("JV_REVOKE_SECRET", revokeSecret)
	is := newTestIssuer(t)
	conf := dpopRedisConfig(is, c.config())
	a, b := startJWKSVerify(t, conf), startJWKSVerify(t, conf)
	cl := newDPoPClient(t, testkeys.EC256B)
	token := is.Token(map[string]any{"cnf": map[string]any{"jkt": cl.jkt}})
	load := newDPoPLoad(t, []string{a.HTTP, b.HTTP}, cl, token)
	hc := httpClient()

	t.Run("many-keys-across-slots", func(t *testing.T) {
		for i := range 300 {
			jti := fmt.Sprintf("spread-%d", i)
			load.use(hc, jti, cl.proof(jti, token), i%2)
		}
		load.mu.Lock()
		n := len(load.accepted)
		load.mu.Unlock()
		if n != 300 {
			t.Errorf("%d of 300 fresh proofs accepted, want 300", n)
		}
		for _, r := range c.nodes {
			out, err := redisCLI(t, r.port, "DBSIZE")
			if k, _ := strconv.Atoi(out); err != nil || k == 0 {
				t.Errorf("master %d holds %q keys, want some: the proofs are not spread over the slots", r.port, out)
			}
		}
	})

	t.Run("revocations", func(t *testing.T) {
		stop := make(chan struct{})
		revoked := revocations(t, []string{a.Admin, b.Admin}, is, "cluster-revoked", stop)
		time.Sleep(1500 * time.Millisecond)
		close(stop)
		var jtis []string
		for _, r := range revoked() {
			jtis = append(jtis, r.jti)
		}
		if len(jtis) < 20 {
			t.Fatalf("%d revocations acknowledged, want many", len(jtis))
		}
		enforced(t, []string{a.HTTP, b.HTTP}, is, jtis, 10*time.Second)
	})

	t.Run("slot-migration-under-load", func(t *testing.T) {
		from, _ := redisCLI(t, c.nodes[0].port, "CLUSTER", "MYID")
		to, _ := redisCLI(t, c.nodes[1].port, "CLUSTER", "MYID")
		before, _ := redisCLI(t, c.nodes[0].port, "DBSIZE")
		load.mu.Lock()
		n0 := len(load.first)
		load.mu.Unlock()
		stop := make(chan struct{})
		wg := load.run(2, "migrate", stop)
		revoked := revocations(t, []string{a.Admin, b.Admin}, is, "migrate-revoked", stop)
		time.Sleep(500 * time.Millisecond)
		start := time.Now()
		out, err := redisCLI(t, c.nodes[0].port, "--cluster", "reshard", c.nodes[0].addr(), "--cluster-from", from, "--cluster-to", to,
			"--cluster-slots", "2000", "--cluster-yes")
		moved := time.Since(start)
		time.Sleep(500 * time.Millisecond)
		close(stop)
		wg.Wait()
		if err != nil {
			t.Fatalf("redis-cli --cluster reshard: %v\n%s", err, out)
		}
		after, _ := redisCLI(t, c.nodes[0].port, "DBSIZE")
		load.mu.Lock()
		during := load.first[n0:]
		load.mu.Unlock()
		codes := map[int]int{}
		for _, a := range during {
			codes[a.code]++
		}
		t.Logf("2000 slots moved in %v under load; the first master held %s keys before, %s after; first uses meanwhile by status: %v",
			moved.Round(time.Millisecond), before, after, codes)
		if codes[http.StatusOK] == 0 {
			t.Errorf("no proof accepted during the migration: the load did not run")
		}
		n := load.replayAll(hc)
		t.Logf("%d proofs accepted in all, each refused again at both replicas after the migration", n)
		var jtis []string
		for _, r := range revoked() {
			jtis = append(jtis, r.jti)
		}
		enforced(t, []string{a.HTTP, b.HTTP}, is, jtis, 10*time.Second)
		t.Logf("%d revocations acknowledged during the migration, each enforced by both replicas after it", len(jtis))
	})
}

// TestSharedIntrospectionAcrossReplicas: three replicas share the
// introspection cache in Redis. Concurrent requests with one opaque token
// across all three make one upstream call per cache lifetime (counted at a
// real introspection endpoint), for an inactive token too; no Redis key
// or value holds a token or a plain hash of one.
func TestSharedIntrospectionAcrossReplicas(t *testing.T) {
	rd := startRedis(t)
	as := startASServer(t)
	is := newTestIssuer(t)
	const active, inactive = "opaque-shared-token-9f2c1d", "opaque-never-issued-77aa"
	as.set(active, map[string]any{"aud": is.Audience})
	key := filepath.Join(t.TempDir(), "cache-key")
	if err := os.WriteFile(key, []byte(strings.Repeat("shared-cache-key", 4)), 0o600); err != nil {
		t.Fatal(err)
	}
	// redis.timeout 2s: the first burst's Redis calls include each
	// replica's dials, and 500ms failed two of them on a loaded 2-core
	// machine ("the shared cache (Redis) failed: i/o timeout", 503). What
	// the test counts (upstream calls per token and lifetime) does not
	// depend on it.
	conf := fmt.Sprintf(`listen: 127.0.0.1:0
shutdown_timeout: 1s
forward_auth: {proxy: nginx}
redis: {url: "redis://%s", timeout: 2s}
issuers:
%s    introspection: {url: %q, cache: {shared: true, key_file: %q, max_ttl: 3s, negative_ttl: 2s}}
`, rd.addr(), is.IssuerConfig(), as.URL, key)
	var replicas []string
	for range 3 {
		replicas = append(replicas, startJWKSVerify(t, conf).HTTP)
	}
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}, Timeout: 10 * time.Second}
	burst := func(token string, want int) {
		t.Helper()
		var wg sync.WaitGroup
		for i := range 30 {
			wg.Go(func() {
				code, class, err := forwardAuthErr(hc, replicas[i%3], "Bearer", token, "", "")
				if err != nil || code != want {
					t.Errorf("replica %d: %d %q %v, want %d", i%3, code, class, err, want)
				}
			})
		}
		wg.Wait()
	}
	tests := []struct {
		name      string
		token     string
		want      int
		after     time.Duration // wait before the burst
		wantCalls int64
	}{
		{"active", active, http.StatusOK, 0, 1},
		{"active-cached", active, http.StatusOK, 0, 1},
		{"inactive", inactive, http.StatusUnauthorized, 0, 2},
		{"inactive-cached", inactive, http.StatusUnauthorized, 0, 2},
		{"active-next-lifetime", active, http.StatusOK, 3500 * time.Millisecond, 3},
		{"inactive-next-lifetime", inactive, http.StatusUnauthorized, 0, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			time.Sleep(tt.after) // a cache lifetime passing, in real time: other processes
			burst(tt.token, tt.want)
			if got := as.calls.Load(); got != tt.wantCalls {
				t.Errorf("introspection calls = %d, want %d (one per token and cache lifetime for the three replicas)", got, tt.wantCalls)
			}
		})
	}

	keys, err := redisCLI(t, rd.port, "--scan")
	if err != nil || keys == "" {
		t.Fatalf("redis-cli --scan = %q, %v", keys, err)
	}
	for _, k := range strings.Fields(keys) {
		v, _ := redisCLI(t, rd.port, "GET", k)
		for _, tok := range []string{active, inactive} {
			for _, f := range plainForms(tok) {
				if strings.Contains(k, f) || strings.Contains(v, f) {
					t.Errorf("Redis key %q or its value holds the token %q or a plain hash of it (%s)", k, tok, f)
				}
			}
		}
	}
}

// plainForms are what a careless cache would key tok by: tok itself and
// unkeyed hashes of it, in hex and base64.
func plainForms(tok string) []string {
	s256, s1 := sha256.Sum256([]byte(tok)), sha1.Sum([]byte(tok))
	return []string{tok, hex.EncodeToString(s256[:]), hex.EncodeToString(s256[:16]), hex.EncodeToString(s1[:]),
		base64.RawURLEncoding.EncodeToString(s256[:]), base64.StdEncoding.EncodeToString(s256[:])}
}

// TestRedisFailuresFailClosed: a wrong password, a TLS failure and a Redis
// unreachable at start each answer 503 keys_unavailable (DPoP and the
// shared introspection cache), never an allow; the same replica with the
// right settings allows (the control).
func TestRedisFailuresFailClosed(t *testing.T) {
	is := newTestIssuer(t)
	as := startASServer(t)
	as.set("opaque-ok", map[string]any{"aud": is.Audience})
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	key := write("cache-key", strings.Repeat("k", 32))
	right, wrong := write("right", "right-password\n"), write("wrong", "wrong-password\n")
	pw := startRedis(t, "--requirepass", "right-password")

	files := redistest.NewTLSFiles(t)
	tlsPort := freePort(t)
	tlsRedis := &redisProc{t: t, bin: pw.bin, port: tlsPort}
	tlsRedis.p = startProcess(t, "redis-server-tls", exec.Command(tlsRedis.bin, "--port", "0", "--tls-port", strconv.Itoa(tlsPort),
		"--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--tls-cert-file", files.ServerCert, "--tls-key-file", files.ServerKey,
		"--tls-ca-cert-file", files.CA, "--tls-auth-clients", "yes"))
	waitTCP(t, tlsRedis.p, tlsRedis.addr())
	closed := freePort(t)

	cl := newDPoPClient(t, testkeys.EC256B)
	token := is.Token(map[string]any{"cnf": map[string]any{"jkt": cl.jkt}})
	tests := []struct {
		name  string
		redis string
		allow bool
	}{
		{"password-right", fmt.Sprintf("redis: {url: \"redis://%s\", password_file: %q}\n", pw.addr(), right), true},
		{"password-wrong", fmt.Sprintf("redis: {url: \"redis://%s\", password_file: %q}\n", pw.addr(), wrong), false},
		{"tls-right", fmt.Sprintf("redis: {url: \"rediss://%s\", tls: {ca_file: %q, cert_file: %q, key_file: %q}}\n", tlsRedis.addr(), files.CA, files.ClientCert, files.ClientKey), true},
		{"tls-unknown-ca", fmt.Sprintf("redis: {url: \"rediss://%s\", tls: {ca_file: %q, cert_file: %q, key_file: %q}}\n", tlsRedis.addr(), files.OtherCA, files.ClientCert, files.ClientKey), false},
		{"tls-no-client-cert", fmt.Sprintf("redis: {url: \"rediss://%s\", tls: {ca_file: %q}}\n", tlsRedis.addr(), files.CA), false},
		{"plaintext-to-tls", fmt.Sprintf("redis: {url: \"redis://%s\"}\n", tlsRedis.addr()), false},
		{"unreachable-at-start", fmt.Sprintf("redis: {url: \"redis://127.0.0.1:%d\"}\n", closed), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := startJWKSVerify(t, fmt.Sprintf(`listen: 127.0.0.1:0
shutdown_timeout: 1s
forward_auth: {proxy: nginx}
dpop: {replay_store: redis}
%sissuers:
%s    sender_constraint: {dpop: optional}
    introspection: {url: %q, cache: {shared: true, key_file: %q}}
`, tt.redis, is.IssuerConfig(), as.URL, key))
			hc := httpClient()
			wantCode, wantClass := http.StatusServiceUnavailable, "keys_unavailable"
			if tt.allow {
				wantCode, wantClass = http.StatusOK, ""
			}
			for i := range 3 {
				jti := fmt.Sprintf("%s-%d", tt.name, i)
				if code, class, err := dpopAuthz(hc, j.HTTP, token, cl.proof(jti, token)); err != nil || code != wantCode || class != wantClass {
					t.Errorf("DPoP request %d = %d %q %v, want %d %q", i, code, class, err, wantCode, wantClass)
				}
				if code, class, err := forwardAuthErr(hc, j.HTTP, "Bearer", "opaque-ok", "", ""); err != nil || code != wantCode || class != wantClass {
					t.Errorf("opaque token %d = %d %q %v, want %d %q", i, code, class, err, wantCode, wantClass)
				}
			}
			for _, secret := range []string{"right-password", "wrong-password"} {
				if strings.Contains(j.Output(), secret) {
					t.Errorf("the log holds the password %q", secret)
				}
			}
		})
	}
}
