package server

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/cache"
	"github.com/jwksverify/jwksverify/internal/testkeys"
	"github.com/jwksverify/jwksverify/server/internal/servertest"
)

func get(h http.Handler, path string) *httptest.ResponseRecorder {
	return do(h, httptest.NewRequest(http.MethodGet, path, nil))
}

func TestHealthz(t *testing.T) {
	e := newEnv(t, envConfig{emptyKeys: true})
	w := get(e.handler, "/healthz")
	if w.Code != http.StatusOK {
		t.Errorf("status = %d, want 200 even without keys", w.Code)
	}
	checkGolden(t, "healthz", w)
}

func TestReadyz(t *testing.T) {
	e := newEnv(t, envConfig{emptyKeys: true, noDown: true})

	w := get(e.handler, "/readyz")
	if w.Code != http.StatusServiceUnavailable {
		t.Errorf("before keys: status = %d, want 503", w.Code)
	}
	checkGolden(t, "readyz-before-keys", w)
	if ok, notReady := e.srv.Ready(); ok || len(notReady) != 1 || notReady[0] != issuerA {
		t.Errorf("Ready() = %v, %q; want false, [%s]", ok, notReady, issuerA)
	}

	e.keysA.Store(keySet(t, e.clock.Now())) // usable for 24h
	w = get(e.handler, "/readyz")
	if w.Code != http.StatusOK {
		t.Errorf("after keys: status = %d, want 200", w.Code)
	}
	checkGolden(t, "readyz-ready", w)

	e.clock.Add(24 * time.Hour)
	if w = get(e.handler, "/readyz"); w.Code != http.StatusOK {
		t.Errorf("at the staleness bound: status = %d, want 200", w.Code)
	}
	e.clock.Add(time.Second)
	w = get(e.handler, "/readyz")
	if w.Code != http.StatusServiceUnavailable {
		t.Errorf("once stale: status = %d, want 503", w.Code)
	}
	checkGolden(t, "readyz-stale", w)

	e.keysA.Store(keySet(t, e.clock.Now()))
	if w = get(e.handler, "/readyz"); w.Code != http.StatusOK {
		t.Errorf("after a good fetch: status = %d, want 200", w.Code)
	}
}

func TestIssuers(t *testing.T) {
	e := newEnv(t, envConfig{})
	secret, err := cache.NewKey(testkeys.Secret(), cache.KeyMeta{Kid: "hmac", Local: true})
	if err != nil {
		t.Fatal(err)
	}
	keys := []*cache.Key{mustKey(t, testkeys.RSA2048A, "rsa-a"), mustKey(t, testkeys.EC256A, "ec-a"), secret}
	skipped := []cache.Skipped{{Index: 3, Kid: "ed448", Kty: "OKP", Reason: "unsupported curve Ed448"}}
	fetched := epoch.Add(-10 * time.Minute)
	e.keysA.Store(cache.NewSet(keys, skipped, fetched, fetched.Add(24*time.Hour)))
	e.keysA.SetStatus(cache.Status{
		Source:              "https://idp.example.com/jwks.json",
		LastAttempt:         epoch.Add(-time.Minute),
		LastSuccess:         fetched,
		NextRefresh:         epoch.Add(5 * time.Minute),
		LastError:           "jwks: status 502",
		ConsecutiveFailures: 2,
	})
	servertest.AddStats(e.keysA, cache.FetchStats{Fetches: 7, NotModified: 3, Errors: 2, KeysSkipped: 1, UnknownKidRefreshes: 1, SuppressedRefreshes: 4})
	e.keysD.SetStatus(cache.Status{Source: "discovery:" + issuerDown, LastAttempt: epoch, LastError: "dial tcp: connection refused", ConsecutiveFailures: 5})

	w := get(e.handler, "/v1/issuers")
	if w.Code != http.StatusOK {
		t.Fatalf("status = %d, want 200", w.Code)
	}
	var got issuersView
	if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Issuers) != 2 {
		t.Fatalf("issuers = %d, want 2", len(got.Issuers))
	}
	a, d := got.Issuers[0], got.Issuers[1]
	if !a.Ready || !a.Stale || len(a.Keys) != 3 || len(a.Skipped) != 1 || *a.AgeSeconds != 600 || *a.StaleForRemainingSeconds != 23*3600+50*60 {
		t.Errorf("issuer A = %+v, want ready, stale, 3 keys, 1 skipped, age 600s", a)
	}
	if a.Keys[2].Kty != "oct" || a.Keys[2].Thumbprint != "" {
		t.Errorf("oct key = %+v, want no thumbprint", a.Keys[2])
	}
	if d.Ready || d.Stale || d.AgeSeconds != nil || d.ConsecutiveFailures != 5 {
		t.Errorf("issuer down = %+v, want not ready, not stale (no set), no age", d)
	}
	if strings.Contains(w.Body.String(), secret.Thumbprint) {
		t.Errorf("/v1/issuers shows the thumbprint of a secret")
	}
	checkGolden(t, "issuers", w)
}
