package integration

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/internal/testkeys"
)

// reloadIdP serves one JWKS per issuer path (/a, /b, /c) and counts the
// fetches of each.
type reloadIdP struct {
	srv     *httptest.Server
	keys    map[string]rhKey
	fetches sync.Map // path -> *atomic.Int64
}

func startReloadIdP(t *testing.T, keys map[string]rhKey) *reloadIdP {
	p := &reloadIdP{keys: keys}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		k, ok := p.keys[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		n, _ := p.fetches.LoadOrStore(r.URL.Path, new(atomic.Int64))
		n.(*atomic.Int64).Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "max-age=3600")
		_, _ = w.Write(testkeys.JWKS(k.jwk()))
	}))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *reloadIdP) Fetches(path string) int64 {
	n, ok := p.fetches.Load(path)
	if !ok {
		return 0
	}
	return n.(*atomic.Int64).Load()
}

// reloadToken mints a token of iss for aud with key k, valid for an hour.
func reloadToken(k rhKey, iss, aud, jti string) string {
	now := time.Now()
	return testkeys.Mint(k.alg, testkeys.Private(k.name), map[string]any{"kid": k.kid}, map[string]any{
		"iss": iss, "sub": "reload", "aud": aud, "iat": now.Unix(), "exp": now.Add(time.Hour).Unix(), "jti": jti,
	})
}

// writeAtomically replaces path's content by rename, as a deploy tool (or a
// Kubernetes ConfigMap update) does: the watcher never sees half a file.
func writeAtomically(t *testing.T, path, content string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// configHash is the hash /v1/issuers reports for content (the first 16 hex
// digits of its SHA-256: docs/API.md).
func configHash(content string) string {
	sum := sha256.Sum256([]byte(content))
	return hex.EncodeToString(sum[:8])
}

// servedHash reads config_hash from base/v1/issuers.
func servedHash(c *http.Client, base string) (string, error) {
	resp, err := c.Get(base + "/v1/issuers")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var out struct {
		ConfigHash string `json:"config_hash"`
	}
	err = json.NewDecoder(resp.Body).Decode(&out)
	return out.ConfigHash, err
}

// TestReloadUnderLoad reloads the real binary's configuration 20 times
// (adding an issuer, changing an audience, removing the issuer, one invalid
// file, changing the audience back; half by SIGHUP, half by the file
// watcher alone) while clients send valid tokens of an issuer no reload
// touches as fast as they can. Every one of those requests must be
// accepted, that issuer's keys must never be fetched again, and each
// change must hold from the moment /v1/issuers reports its hash.
func TestReloadUnderLoad(t *testing.T) {
	keyA := rhKey{testkeys.EC256A, "a-1", "ES256"}
	keyB := rhKey{testkeys.RSA2048A, "b-1", "RS256"}
	keyC := rhKey{testkeys.EC256B, "c-1", "ES256"}
	idp := startReloadIdP(t, map[string]rhKey{"/a": keyA, "/b": keyB, "/c": keyC})
	const (
		issA = "https://a.reload.example/"
		issB = "https://b.reload.example/"
		issC = "https://c.reload.example/"
	)
	refresh := "{min_interval: 1h, max_interval: 24h, default_ttl: 1h, unknown_kid_interval: 1h}"
	issuer := func(iss, path, aud string) string {
		return fmt.Sprintf("  - issuer: %s\n    jwks_url: %s%s\n    audiences: [%s]\n    refresh: %s\n", iss, idp.srv.URL, path, aud, refresh)
	}
	head := "listen: 127.0.0.1:0\nshutdown_timeout: 5s\nlog: {level: info, rejections_per_second: 0}\nissuers:\n"
	states := map[string]string{
		"base":   head + issuer(issA, "/a", "api://a") + issuer(issB, "/b", "api://b1"),
		"add":    head + issuer(issA, "/a", "api://a") + issuer(issB, "/b", "api://b1") + issuer(issC, "/c", "api://c"),
		"aud":    head + issuer(issA, "/a", "api://a") + issuer(issB, "/b", "api://b2") + issuer(issC, "/c", "api://c"),
		"remove": head + issuer(issA, "/a", "api://a") + issuer(issB, "/b", "api://b2"),
		// Valid YAML, invalid configuration: a full validation refuses it.
		"invalid": head + issuer(issA, "/a", "api://a") + "  - issuer: https://d.reload.example/\n    audiences: [x]\n",
	}
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	writeAtomically(t, cfg, states["base"])
	j := rhStartFile(t, cfg)
	base := "http://" + j.HTTP
	c := rhClient(t)
	if _, ok := rhWaitFor(startTimeout, func() bool { s, err := rhReadyz(c, base); return err == nil && s == 200 }); !ok {
		t.Fatal("not ready")
	}
	fetchesA := idp.Fetches("/a")
	if fetchesA != 1 {
		t.Fatalf("issuer A fetched %d times at start, want 1", fetchesA)
	}

	// The load: valid tokens of A, a few hundred distinct ones (cache hits
	// and misses both), from 4 keep-alive clients at full speed.
	tokens := make([]string, 256)
	for i := range tokens {
		tokens[i] = reloadToken(keyA, issA, "api://a", fmt.Sprint("a-", i))
	}
	stop := make(chan struct{})
	var sent, failed atomic.Int64
	var firstFailure atomic.Value
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := w; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				v, err := rhVerify(c, base, tokens[i%len(tokens)])
				sent.Add(1)
				if err != nil || !v.Valid {
					failed.Add(1)
					firstFailure.CompareAndSwap(nil, fmt.Sprintf("%v %v", v, err))
				}
			}
		})
	}
	defer func() { close(stop); wg.Wait() }()

	failures := func() float64 { return rhMetrics(t, c, base)[`jwksverify_config_reloads_total{result="failure"}`] }
	lastReloadOK := func() float64 { return rhMetrics(t, c, base)[`jwksverify_config_last_reload_successful`] }
	verdict := func(tok string) string {
		v, err := rhVerify(c, base, tok)
		if err != nil {
			t.Fatalf("verify: %v", err)
		}
		if v.Valid {
			return "valid"
		}
		return v.Error
	}
	tokB1 := reloadToken(keyB, issB, "api://b1", "b1")
	tokB2 := reloadToken(keyB, issB, "api://b2", "b2")
	tokC := reloadToken(keyC, issC, "api://c", "c")
	// Warm the cache with every token whose verdict a reload must change.
	for _, tok := range []string{tokB1} {
		if got := verdict(tok); got != "valid" {
			t.Fatalf("before reloads: %s", got)
		}
	}

	sequence := []string{"add", "aud", "remove", "invalid", "base"}
	served := configHash(states["base"])
	for n := range 20 {
		state := sequence[n%len(sequence)]
		bySignal := n%2 == 0
		before := failures()
		writeAtomically(t, cfg, states[state])
		if bySignal {
			if err := j.cmd.Process.Signal(syscall.SIGHUP); err != nil {
				t.Fatal(err)
			}
		}
		how := map[bool]string{true: "SIGHUP", false: "file watch"}[bySignal]
		if state == "invalid" {
			if _, ok := rhWaitFor(10*time.Second, func() bool { return failures() >= before+1 }); !ok {
				t.Fatalf("reload %d (%s, %s): config_reloads_total{result=failure} stayed %v", n, state, how, before)
			}
			if h, _ := servedHash(c, base); h != served {
				t.Fatalf("reload %d: invalid configuration: served hash %s, want the previous %s", n, h, served)
			}
			if _, ok := rhWaitFor(5*time.Second, func() bool { return lastReloadOK() == 0 }); !ok {
				t.Fatalf("reload %d: invalid configuration: config_last_reload_successful stayed %v, want 0", n, lastReloadOK())
			}
		} else {
			want := configHash(states[state])
			if _, ok := rhWaitFor(15*time.Second, func() bool { h, _ := servedHash(c, base); return h == want }); !ok {
				t.Fatalf("reload %d (%s, %s): /v1/issuers never reported hash %s", n, state, how, want)
			}
			if _, ok := rhWaitFor(5*time.Second, func() bool { return lastReloadOK() == 1 }); !ok {
				t.Fatalf("reload %d (%s, %s): config_last_reload_successful stayed %v, want 1", n, state, how, lastReloadOK())
			}
			served = want
		}
		// Right after the reload: the state's rules hold.
		checks := map[string][][2]string{
			"add":     {{tokC, "valid"}, {tokB1, "valid"}},
			"aud":     {{tokB1, "wrong_audience"}, {tokB2, "valid"}, {tokC, "valid"}},
			"remove":  {{tokC, "unknown_issuer"}, {tokB2, "valid"}},
			"invalid": {{tokC, "unknown_issuer"}, {tokB2, "valid"}},
			"base":    {{tokB2, "wrong_audience"}, {tokB1, "valid"}, {tokC, "unknown_issuer"}},
		}[state]
		for _, ck := range checks {
			if got := verdict(ck[0]); got != ck[1] {
				t.Errorf("reload %d (%s, %s): a token = %s, want %s", n, state, how, got, ck[1])
			}
		}
	}
	close(stop)
	wg.Wait()
	stop = make(chan struct{}) // the deferred close

	if n := failed.Load(); n != 0 {
		t.Errorf("%d of %d requests for the unchanged issuer failed during the reloads; first: %v", n, sent.Load(), firstFailure.Load())
	}
	if sent.Load() < 100 {
		t.Errorf("only %d requests sent during the reloads: the load did not run", sent.Load())
	}
	if got := idp.Fetches("/a"); got != fetchesA {
		t.Errorf("issuer A's keys fetched %d times after the reloads, want %d (no refetch of an unchanged issuer)", got, fetchesA)
	}
	// A SIGHUP'd change may also be seen by the file watcher before the
	// signal arrives: then that content is loaded twice.
	m := rhMetrics(t, c, base)
	if got := m[`jwksverify_config_reloads_total{result="success"}`]; got < 16 || got > 26 {
		t.Errorf(`config_reloads_total{result="success"} = %v, want 16 to 26`, got)
	}
	if got := m[`jwksverify_config_reloads_total{result="failure"}`]; got < 4 || got > 6 {
		t.Errorf(`config_reloads_total{result="failure"} = %v, want 4 to 6`, got)
	}
	if got := m[fmt.Sprintf("jwksverify_config_info{hash=%q}", served)]; got != 1 {
		t.Errorf("config_info{hash=%q} = %v, want 1", served, got)
	}
	if out := j.Output(); !strings.Contains(out, "configuration reload failed") {
		t.Errorf("no log line for the invalid configuration")
	}
	t.Logf("%d requests for the unchanged issuer during 20 reloads, none failed", sent.Load())
}
