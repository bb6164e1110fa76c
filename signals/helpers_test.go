package signals_test

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/cache"
	"github.com/jwksverify/jwksverify/internal/testkeys"
	"github.com/jwksverify/jwksverify/internal/testlog"
	"github.com/jwksverify/jwksverify/replay"
	"github.com/jwksverify/jwksverify/revoke"
	"github.com/jwksverify/jwksverify/signals"
	"github.com/jwksverify/jwksverify/verify"
)

// The issuers of the tests: issuerA sends logout tokens and SETs, issuerB
// only SETs (and is a configured issuer of its own keys), issuerDown has
// no keys.
const (
	issuerA    = "https://idp.example.com/"
	issuerB    = "https://other.example.com/"
	issuerDown = "https://down.example.com/"
	clientID   = "web-app"
	ssfAud     = "https://api.example.com/"
	bearerA    = "push-bearer-of-issuer-a-0123456789"
	bearerB    = "push-bearer-of-issuer-b-0123456789"
)

var epoch = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// adder is a revoke.Adder that records what it stores, and fails while
// fail is set.
type adder struct {
	mu      sync.Mutex
	entries []revoke.Entry
	fail    bool
	n       int
}

func (a *adder) Add(_ context.Context, e revoke.Entry) (revoke.Entry, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.fail {
		return revoke.Entry{}, fmt.Errorf("%w: test store down", revoke.ErrUnavailable)
	}
	a.n++
	e.ID = fmt.Sprintf("e%d", a.n)
	e.CreatedAt = epoch
	e.ExpiresAt = epoch.Add(24 * time.Hour)
	a.entries = append(a.entries, e)
	return e, nil
}

func (a *adder) stored() []revoke.Entry {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]revoke.Entry(nil), a.entries...)
}

func (a *adder) setFail(f bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.fail = f
}

// failingReplay is a replay store that cannot answer.
type failingReplay struct{}

func (failingReplay) Use(context.Context, [32]byte, time.Duration, time.Time) (bool, error) {
	return false, errors.New("replay store down")
}

// env is a receiver over a real verifier of the test issuers.
type env struct {
	v       *verify.Verifier
	r       *signals.Receiver
	store   *adder
	replay  *replay.Memory
	metrics *counter
	logs    *testlog.Buffer
	mode    signals.RevokeMode
}

// counter is a signals.Metrics that counts by "issuer|event|result".
type counter struct {
	mu sync.Mutex
	m  map[string]int
}

func (c *counter) SignalEvent(issuer, event, result string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]int{}
	}
	c.m[issuer+"|"+event+"|"+result]++
}

func (c *counter) get(k string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[k]
}

func key(t testing.TB, name, kid string) *cache.Key {
	t.Helper()
	k, err := cache.NewKey(testkeys.Public(name), cache.KeyMeta{Kid: kid})
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// newEnv builds the receiver; mode is issuerA's logout revoke mode.
func newEnv(t testing.TB, mode signals.RevokeMode) *env {
	t.Helper()
	keysA, keysB := &cache.Keys{}, &cache.Keys{}
	keysA.Store(cache.NewSet([]*cache.Key{key(t, testkeys.RSA2048A, "rsa-a"), key(t, testkeys.EC256A, "ec-a")}, nil, epoch, epoch.Add(24*time.Hour)))
	keysB.Store(cache.NewSet([]*cache.Key{key(t, testkeys.RSA2048B, "rsa-b")}, nil, epoch, epoch.Add(24*time.Hour)))
	v, err := verify.New(verify.Options{
		Issuers: []verify.Issuer{
			{Issuer: issuerA, Keys: keysA, Audiences: []string{"api://orders"}},
			{Issuer: issuerB, Keys: keysB},
			{Issuer: issuerDown, Keys: &cache.Keys{}},
		},
		Now: func() time.Time { return epoch },
	})
	if err != nil {
		t.Fatal(err)
	}
	e := &env{v: v, mode: mode, logs: &testlog.Buffer{}}
	e.reset(t)
	return e
}

// reset gives e a new receiver, store, replay store and counters over the
// same verifier.
func (e *env) reset(t testing.TB) {
	t.Helper()
	mem, err := replay.NewMemory(0)
	if err != nil {
		t.Fatal(err)
	}
	e.store, e.replay, e.metrics = &adder{}, mem, &counter{}
	e.r, err = signals.New(signals.Options{
		Verifier: e.v,
		Issuers: []signals.Issuer{
			{Issuer: issuerA, Logout: &signals.Logout{Audiences: []string{clientID}, Revoke: e.mode},
				SSF: &signals.SSF{Audiences: []string{ssfAud}, PushBearer: bearerA}},
			{Issuer: issuerB, SSF: &signals.SSF{Audiences: []string{ssfAud}, PushBearer: bearerB}},
			{Issuer: issuerDown, Logout: &signals.Logout{Audiences: []string{clientID}}},
		},
		Replay:  mem,
		Store:   e.store,
		Metrics: e.metrics,
		Logger:  slog.New(slog.NewJSONHandler(e.logs, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
}

// logoutClaims are a valid logout token's claims of issuerA, with over
// applied (a nil value deletes the claim).
func logoutClaims(over map[string]any) map[string]any {
	c := map[string]any{
		"iss": issuerA, "aud": clientID, "iat": epoch.Add(-time.Second).Unix(), "exp": epoch.Add(2 * time.Minute).Unix(),
		"jti": "logout-1", "sub": "alice", "sid": "session-1",
		"events": map[string]any{signals.BackchannelLogoutEvent: map[string]any{}},
	}
	return apply(c, over)
}

// setClaims are a valid SET's claims of issuerA for events, with over
// applied.
func setClaims(events map[string]any, over map[string]any) map[string]any {
	c := map[string]any{
		"iss": issuerA, "aud": ssfAud, "iat": epoch.Add(-time.Second).Unix(), "jti": "set-1", "events": events,
	}
	return apply(c, over)
}

func apply(c, over map[string]any) map[string]any {
	for k, v := range over {
		if v == nil {
			delete(c, k)
			continue
		}
		c[k] = v
	}
	return c
}

// mintA signs claims with issuerA's RSA key under RS256 with header
// members hdr (nil value: delete).
func mintA(hdr map[string]any, claims map[string]any) string {
	h := map[string]any{"kid": "rsa-a"}
	for k, v := range hdr {
		h[k] = v
	}
	return testkeys.Mint("RS256", testkeys.Private(testkeys.RSA2048A), h, claims)
}

// mintSET signs a SET of issuerA.
func mintSET(claims map[string]any) string {
	return mintA(map[string]any{"typ": "secevent+jwt"}, claims)
}

// signRaw signs header and payload JSON exactly as given with issuerA's
// RSA key under RS256: tokens a map cannot express (duplicate members).
func signRaw(t testing.TB, header, payload string) string {
	t.Helper()
	b64 := base64.RawURLEncoding
	signing := b64.EncodeToString([]byte(header)) + "." + b64.EncodeToString([]byte(payload))
	sum := sha256.Sum256([]byte(signing))
	k := testkeys.Private(testkeys.RSA2048A).(*rsa.PrivateKey)
	sig, err := rsa.SignPKCS1v15(rand.Reader, k, crypto.SHA256, sum[:])
	if err != nil {
		t.Fatal(err)
	}
	return signing + "." + b64.EncodeToString(sig)
}

// signRawES256 signs header and payload JSON exactly as given with
// issuerA's P-256 key (kid "ec-a") under ES256: signRaw's tokens at a
// fraction of an RSA signature's cost, for the fuzz targets.
func signRawES256(t testing.TB, header, payload string) string {
	t.Helper()
	b64 := base64.RawURLEncoding
	signing := b64.EncodeToString([]byte(header)) + "." + b64.EncodeToString([]byte(payload))
	sum := sha256.Sum256([]byte(signing))
	r, s, err := ecdsa.Sign(rand.Reader, testkeys.Private(testkeys.EC256A).(*ecdsa.PrivateKey), sum[:])
	if err != nil {
		t.Fatal(err)
	}
	sig := make([]byte, 64) // JWS ES256: R and S, 32 bytes each (RFC 7518 §3.4)
	r.FillBytes(sig[:32])
	s.FillBytes(sig[32:])
	return signing + "." + b64.EncodeToString(sig)
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// receiverOver is a receiver of issuerA's logout tokens (session mode) and
// SETs over v, with a memory replay store and a recording store.
func receiverOver(t testing.TB, v *verify.Verifier) (*signals.Receiver, *adder) {
	t.Helper()
	mem, err := replay.NewMemory(0)
	if err != nil {
		t.Fatal(err)
	}
	store := &adder{}
	r, err := signals.New(signals.Options{
		Verifier: v, Replay: mem, Store: store, Logger: slog.New(slog.DiscardHandler),
		Issuers: []signals.Issuer{{Issuer: issuerA, Logout: &signals.Logout{Audiences: []string{clientID}, Revoke: signals.RevokeSession},
			SSF: &signals.SSF{Audiences: []string{ssfAud}, PushBearer: bearerA}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return r, store
}
