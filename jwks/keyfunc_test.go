package jwks_test

import (
	"context"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/MicahParks/keyfunc/v3"
	"github.com/golang-jwt/jwt/v5"

	"github.com/jwksverify/jwksverify/cache"
	"github.com/jwksverify/jwksverify/internal/testkeys"
	"github.com/jwksverify/jwksverify/jwks"
	"github.com/jwksverify/jwksverify/verify"
)

// The adapter is a drop-in for keyfunc's own.
var _ keyfunc.Keyfunc = (*jwks.Keyfunc)(nil)

const (
	kfIssuer   = "https://idp.example.com/"
	kfAudience = "api://orders"
)

// kfStart is the fake clock's start: tokens are minted for it.
var kfStart = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

// kfClock is a settable clock (Options.Now, and jwt.WithTimeFunc): it
// judges tokens and staleness. The fetcher's timers run on real time, and
// its refresh interval (DefaultTTL, 15m) is far longer than a test, so
// nothing but the start-up fetch and unknown-kid refreshes reach the server.
type kfClock struct{ ns atomic.Int64 }

func (c *kfClock) now() time.Time          { return time.Unix(0, c.ns.Load()).UTC() }
func (c *kfClock) advance(d time.Duration) { c.ns.Add(int64(d)) }

// kfServer serves a JWKS document that the test replaces, and counts the
// requests; when fail is set it answers 500, when hang is set it blocks
// until the request is cancelled.
type kfServer struct {
	srv      *httptest.Server
	mu       sync.Mutex
	body     []byte
	fail     bool
	hang     bool
	requests atomic.Int64
}

func newKFServer(t *testing.T, keys ...testkeys.JWK) *kfServer {
	t.Helper()
	s := &kfServer{body: testkeys.JWKS(keys...)}
	s.srv = httptest.NewServer(s)
	t.Cleanup(s.srv.Close)
	return s
}

func (s *kfServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.requests.Add(1)
	s.mu.Lock()
	body, fail, hang := s.body, s.fail, s.hang
	s.mu.Unlock()
	switch {
	case hang:
		<-r.Context().Done()
	case fail:
		http.Error(w, "down", http.StatusInternalServerError)
	default:
		w.Header().Set("Content-Type", "application/json")
		w.Write(body)
	}
}

func (s *kfServer) publish(keys ...testkeys.JWK) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.body = testkeys.JWKS(keys...)
}

func (s *kfServer) set(fail, hang bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail, s.hang = fail, hang
}

// startKF starts a fetcher on o (its clock and timers the test's) and waits
// for its first set unless noWait.
func startKF(t *testing.T, clk *kfClock, o jwks.Options, noWait bool) *jwks.Fetcher {
	t.Helper()
	o.Issuer = kfIssuer
	o.Now = clk.now
	o.Logger = slog.New(slog.DiscardHandler)
	f, err := jwks.New(o)
	if err != nil {
		t.Fatalf("New() = %v", err)
	}
	t.Cleanup(func() { f.Close() })
	if !noWait {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := f.Ready(ctx); err != nil {
			t.Fatalf("Ready() = %v", err)
		}
	}
	return f
}

func newClock() *kfClock {
	c := &kfClock{}
	c.ns.Store(kfStart.UnixNano())
	return c
}

// kfToken mints a token of alg signed with key, for kfIssuer and
// kfAudience, valid at kfStart, with the given header members.
func kfToken(alg string, key any, header map[string]any) string {
	return testkeys.Mint(alg, key, header, map[string]any{
		"iss": kfIssuer, "sub": "alice", "aud": kfAudience,
		"iat": kfStart.Unix(), "exp": kfStart.Add(time.Hour).Unix(),
	})
}

// parseOpts are what a careful golang-jwt user passes: the allowlist, the
// claims to require, and (here) the test's clock.
func parseOpts(clk *kfClock, algs ...string) []jwt.ParserOption {
	return []jwt.ParserOption{
		jwt.WithValidMethods(algs), jwt.WithIssuer(kfIssuer), jwt.WithAudience(kfAudience),
		jwt.WithExpirationRequired(), jwt.WithTimeFunc(clk.now),
	}
}

var asymmetric = slices.DeleteFunc(slices.Clone(testkeys.Algorithms), func(a string) bool { return strings.HasPrefix(a, "HS") })

// everyKey publishes one key per asymmetric algorithm, kid "k-"+alg.
func everyKey() []testkeys.JWK {
	var keys []testkeys.JWK
	for _, alg := range asymmetric {
		keys = append(keys, testkeys.JWK{Key: testkeys.Public(testkeys.NameForAlg(alg)), Kid: "k-" + alg})
	}
	return keys
}

func TestKeyfuncGolangJWT(t *testing.T) {
	clk := newClock()
	srv := newKFServer(t, everyKey()...)
	k := startKF(t, clk, jwks.Options{URL: srv.srv.URL}, false).Keyfunc()
	for _, alg := range asymmetric {
		tok := kfToken(alg, testkeys.SigningKey(alg), map[string]any{"kid": "k-" + alg})
		t.Run(alg+"-parse", func(t *testing.T) {
			token, err := jwt.Parse(tok, k.Keyfunc, parseOpts(clk, alg)...)
			if err != nil || !token.Valid {
				t.Fatalf("jwt.Parse() = %v, want a valid token", err)
			}
			if sub, _ := token.Claims.GetSubject(); sub != "alice" {
				t.Errorf("sub = %q, want alice", sub)
			}
		})
		t.Run(alg+"-parse-with-claims", func(t *testing.T) {
			var claims jwt.RegisteredClaims
			token, err := jwt.ParseWithClaims(tok, &claims, k.KeyfuncCtx(context.Background()), parseOpts(clk, alg)...)
			if err != nil || !token.Valid || claims.Subject != "alice" {
				t.Fatalf("jwt.ParseWithClaims() = %v, sub %q, want a valid token of alice", err, claims.Subject)
			}
		})
	}
	t.Run("no-kid-tries-the-keys-that-fit", func(t *testing.T) {
		tok := kfToken("ES384", testkeys.SigningKey("ES384"), nil)
		if _, err := jwt.Parse(tok, k.Keyfunc, parseOpts(clk, "ES384")...); err != nil {
			t.Fatalf("jwt.Parse(no kid) = %v, want nil", err)
		}
	})
	t.Run("golang-jwt-still-checks-the-claims", func(t *testing.T) {
		tok := kfToken("RS256", testkeys.SigningKey("RS256"), map[string]any{"kid": "k-RS256"})
		clk.advance(2 * time.Hour)
		defer clk.advance(-2 * time.Hour)
		if _, err := jwt.Parse(tok, k.Keyfunc, parseOpts(clk, "RS256")...); !errors.Is(err, jwt.ErrTokenExpired) {
			t.Fatalf("jwt.Parse(expired) = %v, want %v", err, jwt.ErrTokenExpired)
		}
	})
	if got := srv.requests.Load(); got != 1 {
		t.Errorf("JWKS requests = %d, want 1 (known kids cost no fetch)", got)
	}
}

func TestKeyfuncRefuses(t *testing.T) {
	rsaDER, err := x509.MarshalPKIXPublicKey(testkeys.Public(testkeys.RSA2048A))
	if err != nil {
		t.Fatal(err)
	}
	published := append(everyKey(),
		testkeys.JWK{Key: testkeys.Public(testkeys.RSA2048A), Kid: "pinned-ps256", Alg: "PS256"},
		testkeys.JWK{Key: testkeys.Secret(), Kid: "remote-secret"},
	)
	for _, tc := range []struct {
		name    string
		token   string
		algs    []string // WithValidMethods; nil: none given
		wantErr error
	}{
		// The classic confusion: the RSA public key used as an HMAC secret,
		// by a user who allows both families.
		{"hs256-with-the-rsa-public-key", kfToken("HS256", rsaDER, map[string]any{"kid": "k-RS256"}),
			[]string{"RS256", "HS256"}, verify.ErrAlgNotAllowed},
		{"rs256-with-an-ec-key", kfToken("RS256", testkeys.SigningKey("RS256"), map[string]any{"kid": "k-ES256"}),
			[]string{"RS256", "ES256"}, verify.ErrAlgNotAllowed},
		{"es256-with-a-p384-key", kfToken("ES256", testkeys.SigningKey("ES256"), map[string]any{"kid": "k-ES384"}),
			[]string{"ES256", "ES384"}, verify.ErrAlgNotAllowed},
		{"rs256-with-a-ps256-jwk", kfToken("RS256", testkeys.SigningKey("RS256"), map[string]any{"kid": "pinned-ps256"}),
			[]string{"RS256", "PS256"}, verify.ErrAlgNotAllowed},
		{"eddsa-with-an-rsa-key", kfToken("EdDSA", testkeys.SigningKey("EdDSA"), map[string]any{"kid": "k-RS256"}),
			nil, verify.ErrAlgNotAllowed},
		// Remote oct keys never enter the set: the kid stays unknown.
		{"remote-oct-key", kfToken("HS256", testkeys.Secret(), map[string]any{"kid": "remote-secret"}),
			[]string{"HS256"}, verify.ErrUnknownKid},
		{"no-kid-and-no-key-fits", kfToken("HS256", testkeys.Secret(), nil), []string{"HS256"}, verify.ErrAlgNotAllowed},
		{"alg-none", kfToken("none", jwt.UnsafeAllowNoneSignatureType, map[string]any{"kid": "k-RS256"}),
			nil, verify.ErrAlgNotAllowed},
		{"kid-not-a-string", kfToken("RS256", testkeys.SigningKey("RS256"), map[string]any{"kid": 7}),
			nil, verify.ErrMalformed},
		// A fitting key with another key's signature: the key is handed
		// over and golang-jwt's own check refuses the signature.
		{"bad-signature", kfToken("RS256", testkeys.Private(testkeys.RSA2048B), map[string]any{"kid": "k-RS256"}),
			[]string{"RS256"}, jwt.ErrTokenSignatureInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := newClock()
			srv := newKFServer(t, published...)
			k := startKF(t, clk, jwks.Options{URL: srv.srv.URL}, false).Keyfunc()
			opts := []jwt.ParserOption{jwt.WithTimeFunc(clk.now)}
			if tc.algs != nil {
				opts = append(opts, jwt.WithValidMethods(tc.algs))
			}
			token, err := jwt.Parse(tc.token, k.Keyfunc, opts...)
			if !errors.Is(err, tc.wantErr) || token.Valid {
				t.Fatalf("jwt.Parse() = %v (valid %v), want %v", err, token.Valid, tc.wantErr)
			}
			if tc.wantErr != jwt.ErrTokenSignatureInvalid && !errors.Is(err, jwt.ErrTokenUnverifiable) {
				t.Errorf("jwt.Parse() = %v, want it to wrap %v too", err, jwt.ErrTokenUnverifiable)
			}
		})
	}
}

func TestKeyfuncUnknownKid(t *testing.T) {
	clk := newClock()
	old := testkeys.JWK{Key: testkeys.Public(testkeys.EC256A), Kid: "old"}
	srv := newKFServer(t, old)
	f := startKF(t, clk, jwks.Options{URL: srv.srv.URL}, false)
	k := f.Keyfunc()
	parse := func(kid string) error {
		_, err := jwt.Parse(kfToken("ES256", testkeys.SigningKey("ES256"), map[string]any{"kid": kid}), k.Keyfunc, parseOpts(clk, "ES256")...)
		return err
	}
	requests := func(t *testing.T, want int64) {
		t.Helper()
		if got := srv.requests.Load(); got != want {
			t.Errorf("JWKS requests = %d, want %d", got, want)
		}
	}
	// The IdP rotates: the new key's tokens arrive before the next refresh.
	srv.publish(old, testkeys.JWK{Key: testkeys.Public(testkeys.EC256A), Kid: "new"})

	t.Run("storage-reads-never-fetch", func(t *testing.T) {
		if _, err := k.Storage().KeyRead(context.Background(), "new"); !errors.Is(err, jwkset.ErrKeyNotFound) {
			t.Errorf("Storage().KeyRead(new) = %v, want %v", err, jwkset.ErrKeyNotFound)
		}
		requests(t, 1)
	})
	t.Run("concurrent-first-tokens-share-one-refresh", func(t *testing.T) {
		var wg sync.WaitGroup
		errs := make([]error, 20)
		for i := range errs {
			wg.Go(func() { errs[i] = parse("new") })
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Errorf("parse %d: jwt.Parse(new kid) = %v, want nil", i, err)
			}
		}
		requests(t, 2)
		if s := f.Stats(); s.UnknownKidRefreshes != 1 {
			t.Errorf("Stats().UnknownKidRefreshes = %d, want 1", s.UnknownKidRefreshes)
		}
		if _, err := k.Storage().KeyRead(context.Background(), "new"); err != nil {
			t.Errorf("Storage().KeyRead(new) after the refresh = %v, want nil", err)
		}
	})
	t.Run("random-kids-within-the-interval-cost-nothing", func(t *testing.T) {
		for i := range 100 {
			if err := parse(fmt.Sprintf("ghost-%d", i)); !errors.Is(err, verify.ErrUnknownKid) || !errors.Is(err, jwks.ErrSuppressed) {
				t.Fatalf("jwt.Parse(ghost-%d) = %v, want %v and %v", i, err, verify.ErrUnknownKid, jwks.ErrSuppressed)
			}
		}
		requests(t, 2)
		if s := f.Stats(); s.SuppressedRefreshes != 100 {
			t.Errorf("Stats().SuppressedRefreshes = %d, want 100", s.SuppressedRefreshes)
		}
	})
	t.Run("next-interval-one-more-refresh", func(t *testing.T) {
		clk.advance(jwks.DefaultUnknownKidInterval)
		srv.publish(old, testkeys.JWK{Key: testkeys.Public(testkeys.EC256A), Kid: "newer"})
		if err := parse("newer"); err != nil {
			t.Fatalf("jwt.Parse(newer kid) = %v, want nil", err)
		}
		requests(t, 3)
	})
}

func TestKeyfuncCtxBoundsTheWait(t *testing.T) {
	clk := newClock()
	srv := newKFServer(t, testkeys.JWK{Key: testkeys.Public(testkeys.EC256A), Kid: "old"})
	k := startKF(t, clk, jwks.Options{URL: srv.srv.URL}, false).Keyfunc()
	srv.set(false, true) // the IdP hangs
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	tok := kfToken("ES256", testkeys.SigningKey("ES256"), map[string]any{"kid": "new"})
	_, err := jwt.Parse(tok, k.KeyfuncCtx(ctx), parseOpts(clk, "ES256")...)
	if !errors.Is(err, verify.ErrUnknownKid) || !errors.Is(err, context.Canceled) {
		t.Fatalf("jwt.Parse(cancelled ctx) = %v, want %v wrapping %v", err, verify.ErrUnknownKid, context.Canceled)
	}
}

func TestKeyfuncUnusableSet(t *testing.T) {
	key := testkeys.JWK{Key: testkeys.Public(testkeys.EC256A), Kid: "k"}
	tok := kfToken("ES256", testkeys.SigningKey("ES256"), map[string]any{"kid": "k"})
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, clk *kfClock) *jwks.Fetcher
	}{
		{"never-fetched", func(t *testing.T, clk *kfClock) *jwks.Fetcher {
			srv := newKFServer(t, key)
			srv.set(true, false)
			return startKF(t, clk, jwks.Options{URL: srv.srv.URL}, true)
		}},
		{"past-stale-for", func(t *testing.T, clk *kfClock) *jwks.Fetcher {
			srv := newKFServer(t, key)
			f := startKF(t, clk, jwks.Options{URL: srv.srv.URL, StaleFor: time.Hour}, false)
			srv.set(true, false)
			clk.advance(time.Hour + time.Second)
			return f
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := newClock()
			k := tc.setup(t, clk).Keyfunc()
			// The token's own times are judged at kfStart: only the set is stale.
			_, err := jwt.Parse(tok, k.Keyfunc, jwt.WithValidMethods([]string{"ES256"}), jwt.WithTimeFunc(func() time.Time { return kfStart }))
			if !errors.Is(err, verify.ErrKeysUnavailable) || !errors.Is(err, verify.ErrUnavailable) || errors.Is(err, verify.ErrRejected) {
				t.Errorf("jwt.Parse() = %v, want %v (could not decide, not a rejection)", err, verify.ErrKeysUnavailable)
			}
			if _, err := k.VerificationKeySet(context.Background()); !errors.Is(err, verify.ErrKeysUnavailable) {
				t.Errorf("VerificationKeySet() = %v, want %v", err, verify.ErrKeysUnavailable)
			}
			if _, err := k.Storage().KeyReadAll(context.Background()); !errors.Is(err, verify.ErrKeysUnavailable) {
				t.Errorf("Storage().KeyReadAll() = %v, want %v", err, verify.ErrKeysUnavailable)
			}
		})
	}
}

func TestKeyfuncLocalKeysAndStorage(t *testing.T) {
	secret := testkeys.Secret()
	path := filepath.Join(t.TempDir(), "jwks.json")
	doc := testkeys.JWKS(
		testkeys.JWK{Key: testkeys.Public(testkeys.RSA2048A), Kid: "rsa", Alg: "RS256", Use: "sig"},
		testkeys.JWK{Key: testkeys.Public(testkeys.EC256A), Kid: "ec"},
		testkeys.JWK{Key: secret, Kid: "hmac"},
	)
	if err := os.WriteFile(path, doc, 0o600); err != nil {
		t.Fatal(err)
	}
	clk := newClock()
	k := startKF(t, clk, jwks.Options{File: path}, false).Keyfunc()
	ctx := context.Background()
	st := k.Storage()

	t.Run("local-secret-verifies", func(t *testing.T) {
		tok := kfToken("HS256", secret, map[string]any{"kid": "hmac"})
		if _, err := jwt.Parse(tok, k.Keyfunc, parseOpts(clk, "HS256")...); err != nil {
			t.Fatalf("jwt.Parse(HS256, local secret) = %v, want nil", err)
		}
	})
	t.Run("verification-key-set", func(t *testing.T) {
		ks, err := k.VerificationKeySet(ctx)
		if err != nil || len(ks.Keys) != 3 {
			t.Fatalf("VerificationKeySet() = %d keys, %v; want 3, nil", len(ks.Keys), err)
		}
	})
	t.Run("read-all-holds-the-public-keys", func(t *testing.T) {
		all, err := st.KeyReadAll(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var kids []string
		for _, j := range all {
			kids = append(kids, j.Marshal().KID)
		}
		if !slices.Equal(kids, []string{"rsa", "ec"}) {
			t.Errorf("Storage().KeyReadAll() kids = %q, want [rsa ec]", kids)
		}
	})
	t.Run("read-keeps-the-metadata", func(t *testing.T) {
		j, err := st.KeyRead(ctx, "rsa")
		if err != nil {
			t.Fatal(err)
		}
		if m := j.Marshal(); m.ALG != jwkset.AlgRS256 || m.USE != jwkset.UseSig || m.KTY != jwkset.KtyRSA {
			t.Errorf("Storage().KeyRead(rsa) = alg %q use %q kty %q, want RS256 sig RSA", m.ALG, m.USE, m.KTY)
		}
	})
	for _, kid := range []string{"hmac", "absent"} {
		t.Run("read-"+kid+"-not-found", func(t *testing.T) {
			if _, err := st.KeyRead(ctx, kid); !errors.Is(err, jwkset.ErrKeyNotFound) {
				t.Errorf("Storage().KeyRead(%s) = %v, want %v", kid, err, jwkset.ErrKeyNotFound)
			}
		})
	}
	b64 := base64.RawURLEncoding.EncodeToString(secret)
	for name, read := range map[string]func(context.Context) (any, error){
		"json":         func(c context.Context) (any, error) { return st.JSON(c) },
		"json-public":  func(c context.Context) (any, error) { return st.JSONPublic(c) },
		"json-private": func(c context.Context) (any, error) { return st.JSONPrivate(c) },
		"json-with-private-options": func(c context.Context) (any, error) {
			return st.JSONWithOptions(c, jwkset.JWKMarshalOptions{Private: true}, jwkset.JWKValidateOptions{})
		},
		"marshal-with-private-options": func(c context.Context) (any, error) {
			m, err := st.MarshalWithOptions(c, jwkset.JWKMarshalOptions{Private: true}, jwkset.JWKValidateOptions{})
			b, _ := json.Marshal(m)
			return b, err
		},
	} {
		t.Run(name+"-never-shows-the-secret", func(t *testing.T) {
			out, err := read(ctx)
			if err != nil {
				t.Fatal(err)
			}
			s := fmt.Sprintf("%s", out)
			if strings.Contains(s, b64) || strings.Contains(s, `"hmac"`) || !strings.Contains(s, `"rsa"`) || !strings.Contains(s, `"ec"`) {
				t.Errorf("%s = %s, want the rsa and ec keys and no secret", name, s)
			}
		})
	}
	for name, write := range map[string]func() error{
		"write":       func() error { return st.KeyWrite(ctx, jwkset.JWK{}) },
		"delete":      func() error { _, err := st.KeyDelete(ctx, "rsa"); return err },
		"replace-all": func() error { return st.KeyReplaceAll(ctx, nil) },
	} {
		t.Run(name+"-is-refused", func(t *testing.T) {
			if err := write(); !errors.Is(err, errors.ErrUnsupported) {
				t.Errorf("Storage() %s = %v, want %v", name, err, errors.ErrUnsupported)
			}
			if _, err := st.KeyRead(ctx, "rsa"); err != nil {
				t.Errorf("Storage().KeyRead(rsa) after %s = %v, want nil", name, err)
			}
		})
	}
}

// TestKeyfuncKidlessBounded: a token without kid gets at most
// verify.DefaultMaxKidless keys to try, as the verifier tries, however many
// keys without kid fit its alg: golang-jwt verifies against each in turn.
func TestKeyfuncKidlessBounded(t *testing.T) {
	var static []*cache.Key
	for range verify.DefaultMaxKidless + 4 {
		k, err := cache.NewKey(testkeys.Public(testkeys.RSA2048B), cache.KeyMeta{})
		if err != nil {
			t.Fatal(err)
		}
		static = append(static, k)
	}
	clk := newClock()
	f := startKF(t, clk, jwks.Options{StaticKeys: static}, false)
	got, err := f.Keyfunc().Keyfunc(&jwt.Token{Header: map[string]any{"alg": "RS256"}, Claims: jwt.MapClaims{}})
	if err != nil {
		t.Fatalf("Keyfunc() = %v, want a key set", err)
	}
	vks, ok := got.(jwt.VerificationKeySet)
	if !ok || len(vks.Keys) != verify.DefaultMaxKidless {
		t.Fatalf("Keyfunc() = %T with %d keys, want a jwt.VerificationKeySet of %d", got, len(vks.Keys), verify.DefaultMaxKidless)
	}
}
