package dpop_test

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/jwksverify/jwksverify/cache"
	"github.com/jwksverify/jwksverify/dpop"
	"github.com/jwksverify/jwksverify/internal/testkeys"
	"github.com/jwksverify/jwksverify/replay"
	"github.com/jwksverify/jwksverify/request"
	"github.com/jwksverify/jwksverify/verify"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var t0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

const (
	accessToken = "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJhIn0.c2ln" // ath is its hash; never verified here
	issuer      = "https://idp.example.com/"
)

var origReq = request.Original{Method: "POST", Scheme: "https", Host: "api.example.com", Path: "/orders/1"}

// thumb returns the RFC 7638 thumbprint of the named key's public half.
func thumb(t testing.TB, name string) string {
	k, err := cache.NewKey(testkeys.Public(name), cache.KeyMeta{})
	if err != nil {
		t.Fatal(err)
	}
	return k.Thumbprint
}

func ath(tok string) string {
	s := sha256.Sum256([]byte(tok))
	return base64.RawURLEncoding.EncodeToString(s[:])
}

// proof mints a proof of the named key with alg; header and claims
// entries replace (nil: delete) the defaults.
func proof(alg, name string, header, claims map[string]any) string {
	h := map[string]any{"typ": "dpop+jwt", "jwk": testkeys.JWKJSON(testkeys.JWK{Key: testkeys.Public(name)})}
	c := map[string]any{"jti": "j-1", "htm": "POST", "htu": "https://api.example.com/orders/1", "iat": t0.Unix(), "ath": ath(accessToken)}
	for k, v := range header {
		h[k] = v
	}
	for k, v := range claims {
		if v == nil {
			delete(c, k)
			continue
		}
		c[k] = v
	}
	return testkeys.Mint(alg, testkeys.Private(name), h, c)
}

func newChecker(t testing.TB, opts dpop.Options) *dpop.Checker {
	t.Helper()
	if opts.Replay == nil {
		m, err := replay.NewMemory(100)
		if err != nil {
			t.Fatal(err)
		}
		opts.Replay = m
	}
	c, err := dpop.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func input(p string, jkt string) dpop.Input {
	return dpop.Input{Proofs: []string{p}, Request: origReq, AccessToken: accessToken, JKT: jkt, Issuer: issuer, Leeway: 30 * time.Second}
}

// failingStore is a replay store that cannot answer.
type failingStore struct{}

func (failingStore) Use(context.Context, [32]byte, time.Duration, time.Time) (bool, error) {
	return false, errors.New("connection refused")
}

// TestCheck covers each check of RFC 9449 §4.3 and each binding failure,
// each with the step it fails at and its class.
func TestCheck(t *testing.T) {
	jktEC := thumb(t, testkeys.EC256A)
	privJWK := testkeys.JWKJSON(testkeys.JWK{Key: testkeys.Private(testkeys.EC256A)}) // public only: testkeys drops d
	var withD map[string]any
	_ = json.Unmarshal(privJWK, &withD)
	withD["d"] = "AAAA"
	otherJWK := testkeys.JWKJSON(testkeys.JWK{Key: testkeys.Public(testkeys.EC256B)})
	rsaWeak := testkeys.JWKJSON(testkeys.JWK{Key: testkeys.Public(testkeys.RSA1024)})
	good := proof("ES256", testkeys.EC256A, nil, nil)
	segs := strings.Split(good, ".")

	tests := []struct {
		name     string
		in       func() dpop.Input
		opts     dpop.Options
		wantErr  error
		wantStep string // the failing check, "" when accepted
	}{
		{"es256-accepted", func() dpop.Input { return input(good, jktEC) }, dpop.Options{}, nil, ""},
		{"ps256-accepted", func() dpop.Input {
			return input(proof("PS256", testkeys.RSA2048A, nil, nil), thumb(t, testkeys.RSA2048A))
		}, dpop.Options{}, nil, ""},
		{"rs256-accepted", func() dpop.Input {
			return input(proof("RS256", testkeys.RSA2048A, nil, nil), thumb(t, testkeys.RSA2048A))
		}, dpop.Options{}, nil, ""},
		{"eddsa-accepted", func() dpop.Input {
			return input(proof("EdDSA", testkeys.Ed25519A, nil, nil), thumb(t, testkeys.Ed25519A))
		}, dpop.Options{}, nil, ""},
		{"htu-normalized", func() dpop.Input {
			return input(proof("ES256", testkeys.EC256A, nil, map[string]any{"htu": "HTTPS://API.example.com:443/orders/%31?x=1#f"}), jktEC)
		}, dpop.Options{}, nil, ""},
		{"htu-empty-port", func() dpop.Input {
			return input(proof("ES256", testkeys.EC256A, nil, map[string]any{"htu": "https://api.example.com:/orders/1"}), jktEC)
		}, dpop.Options{}, nil, ""},
		{"htu-non-default-port", func() dpop.Input {
			in := input(proof("ES256", testkeys.EC256A, nil, map[string]any{"htu": "https://api.example.com:8443/orders/1"}), jktEC)
			in.Request.Port = "8443"
			return in
		}, dpop.Options{}, nil, ""},
		{"iat-at-leeway", func() dpop.Input {
			return input(proof("ES256", testkeys.EC256A, nil, map[string]any{"iat": t0.Add(30 * time.Second).Unix()}), jktEC)
		}, dpop.Options{}, nil, ""},
		{"iat-just-under-max-age", func() dpop.Input {
			return input(proof("ES256", testkeys.EC256A, nil, map[string]any{"iat": t0.Add(-59 * time.Second).Unix()}), jktEC)
		}, dpop.Options{}, nil, ""},
		// At max_age itself a proof first used at iat - leeway has lost its
		// replay entry (kept max_age + 2 × leeway from that use, on a store
		// clock up to a leeway behind the replica's): refused, or
		// it could be used twice.
		{"iat-at-max-age", func() dpop.Input {
			return input(proof("ES256", testkeys.EC256A, nil, map[string]any{"iat": t0.Add(-60 * time.Second).Unix()}), jktEC)
		}, dpop.Options{}, verify.ErrInvalidDPoPProof, "dpop-iat"},
		// The application may run the request as another method: a proof
		// names one.
		{"method-override", func() dpop.Input {
			in := input(good, jktEC)
			in.Request.Overrides = "DELETE"
			return in
		}, dpop.Options{}, verify.ErrInvalidDPoPProof, "dpop-htm"},
		// htu's path as the client sent it, as the request's is.
		{"htu-raw-path", func() dpop.Input {
			in := input(proof("ES256", testkeys.EC256A, nil, map[string]any{"htu": "https://api.example.com/search/a|b"}), jktEC)
			in.Request.Path = "/search/a|b"
			return in
		}, dpop.Options{}, nil, ""},

		// §4.3 1: exactly one DPoP header.
		{"no-proof", func() dpop.Input { in := input(good, jktEC); in.Proofs = nil; return in }, dpop.Options{}, verify.ErrInvalidDPoPProof, "dpop-header"},
		{"two-proofs", func() dpop.Input { in := input(good, jktEC); in.Proofs = []string{good, good}; return in }, dpop.Options{}, verify.ErrInvalidDPoPProof, "dpop-header"},
		{"too-large", func() dpop.Input { return input(good, jktEC) }, dpop.Options{MaxProofBytes: 100}, verify.ErrInvalidDPoPProof, "dpop-header"},
		// MaxProofBytes is the largest proof taken: one byte less refuses it.
		{"size-at-limit", func() dpop.Input { return input(good, jktEC) }, dpop.Options{MaxProofBytes: len(good)}, nil, ""},
		{"size-one-over-limit", func() dpop.Input { return input(good, jktEC) }, dpop.Options{MaxProofBytes: len(good) - 1}, verify.ErrInvalidDPoPProof, "dpop-header"},
		// §4.3 2: a well-formed JWT.
		{"not-jws", func() dpop.Input { return input("abc.def", jktEC) }, dpop.Options{}, verify.ErrInvalidDPoPProof, "dpop-structure"},
		{"bad-base64", func() dpop.Input { return input(segs[0]+".!!."+segs[2], jktEC) }, dpop.Options{}, verify.ErrInvalidDPoPProof, "dpop-structure"},
		{"claims-not-object", func() dpop.Input {
			return input(segs[0]+"."+base64.RawURLEncoding.EncodeToString([]byte(`[1]`))+"."+segs[2], jktEC)
		}, dpop.Options{}, verify.ErrInvalidDPoPProof, "dpop-structure"},
		{"duplicate-claim", func() dpop.Input {
			return input(segs[0]+"."+base64.RawURLEncoding.EncodeToString([]byte(`{"jti":"a","jti":"b"}`))+"."+segs[2], jktEC)
		}, dpop.Options{}, verify.ErrInvalidDPoPProof, "dpop-structure"},
		{"crit", func() dpop.Input {
			return input(proof("ES256", testkeys.EC256A, map[string]any{"crit": []string{"x"}}, nil), jktEC)
		}, dpop.Options{}, verify.ErrInvalidDPoPProof, "dpop-structure"},
		// §4.3 3: required claims.
		{"no-jti", func() dpop.Input {
			return input(proof("ES256", testkeys.EC256A, nil, map[string]any{"jti": nil}), jktEC)
		}, dpop.Options{}, verify.ErrInvalidDPoPProof, "dpop-claims"},
		{"empty-jti", func() dpop.Input {
			return input(proof("ES256", testkeys.EC256A, nil, map[string]any{"jti": ""}), jktEC)
		}, dpop.Options{}, verify.ErrInvalidDPoPProof, "dpop-claims"},
		{"long-jti", func() dpop.Input {
			return input(proof("ES256", testkeys.EC256A, nil, map[string]any{"jti": strings.Repeat("j", 257)}), jktEC)
		}, dpop.Options{}, verify.ErrInvalidDPoPProof, "dpop-claims"},
		{"no-htm", func() dpop.Input {
			return input(proof("ES256", testkeys.EC256A, nil, map[string]any{"htm": nil}), jktEC)
		}, dpop.Options{}, verify.ErrInvalidDPoPProof, "dpop-claims"},
		{"no-htu", func() dpop.Input {
			return input(proof("ES256", testkeys.EC256A, nil, map[string]any{"htu": nil}), jktEC)
		}, dpop.Options{}, verify.ErrInvalidDPoPProof, "dpop-claims"},
		{"no-iat", func() dpop.Input {
			return input(proof("ES256", testkeys.EC256A, nil, map[string]any{"iat": nil}), jktEC)
		}, dpop.Options{}, verify.ErrInvalidDPoPProof, "dpop-claims"},
		{"iat-string", func() dpop.Input {
			return input(proof("ES256", testkeys.EC256A, nil, map[string]any{"iat": "now"}), jktEC)
		}, dpop.Options{}, verify.ErrInvalidDPoPProof, "dpop-claims"},
		{"no-ath-with-token", func() dpop.Input {
			return input(proof("ES256", testkeys.EC256A, nil, map[string]any{"ath": nil}), jktEC)
		}, dpop.Options{}, verify.ErrInvalidDPoPProof, "dpop-claims"},
		// §4.3 4: typ.
		{"no-typ", func() dpop.Input {
			return input(proof("ES256", testkeys.EC256A, map[string]any{"typ": nil}, nil), jktEC)
		}, dpop.Options{}, verify.ErrInvalidDPoPProof, "dpop-typ"},
		{"typ-jwt", func() dpop.Input {
			return input(proof("ES256", testkeys.EC256A, map[string]any{"typ": "JWT"}, nil), jktEC)
		}, dpop.Options{}, verify.ErrInvalidDPoPProof, "dpop-typ"},
		// §4.3 5: alg.
		{"alg-not-allowed", func() dpop.Input {
			return input(proof("ES384", testkeys.EC384, nil, nil), thumb(t, testkeys.EC384))
		}, dpop.Options{}, verify.ErrInvalidDPoPProof, "dpop-alg"},
		{"hs256", func() dpop.Input {
			p := testkeys.Mint("HS256", testkeys.Secret(), map[string]any{"typ": "dpop+jwt", "jwk": otherJWK}, map[string]any{"jti": "x"})
			return input(p, jktEC)
		}, dpop.Options{}, verify.ErrInvalidDPoPProof, "dpop-claims"},
		{"alg-outside-configured", func() dpop.Input { return input(good, jktEC) }, dpop.Options{Algorithms: []string{"EdDSA"}}, verify.ErrInvalidDPoPProof, "dpop-alg"},
		// §4.3 7: a public jwk that fits.
		{"no-jwk", func() dpop.Input {
			return input(proof("ES256", testkeys.EC256A, map[string]any{"jwk": nil, "kid": "k1"}, nil), jktEC)
		}, dpop.Options{}, verify.ErrInvalidDPoPProof, "dpop-jwk"},
		{"private-jwk", func() dpop.Input {
			return input(proof("ES256", testkeys.EC256A, map[string]any{"jwk": withD}, nil), jktEC)
		}, dpop.Options{}, verify.ErrInvalidDPoPProof, "dpop-jwk"},
		{"jwk-wrong-type", func() dpop.Input {
			return input(proof("ES256", testkeys.EC256A, map[string]any{"jwk": testkeys.JWKJSON(testkeys.JWK{Key: testkeys.Public(testkeys.Ed25519A)})}, nil), jktEC)
		}, dpop.Options{}, verify.ErrInvalidDPoPProof, "dpop-jwk"},
		{"jwk-weak-rsa", func() dpop.Input {
			return input(proof("RS256", testkeys.RSA1024, map[string]any{"jwk": rsaWeak}, nil), thumb(t, testkeys.RSA2048A))
		}, dpop.Options{}, verify.ErrInvalidDPoPProof, "dpop-jwk"},
		{"jwk-alg-mismatch", func() dpop.Input {
			j := testkeys.JWKJSON(testkeys.JWK{Key: testkeys.Public(testkeys.RSA2048A), Alg: "RS256"})
			return input(proof("PS256", testkeys.RSA2048A, map[string]any{"jwk": j}, nil), thumb(t, testkeys.RSA2048A))
		}, dpop.Options{}, verify.ErrInvalidDPoPProof, "dpop-jwk"},
		{"jwk-string", func() dpop.Input {
			return input(proof("ES256", testkeys.EC256A, map[string]any{"jwk": "key"}, nil), jktEC)
		}, dpop.Options{}, verify.ErrInvalidDPoPProof, "dpop-jwk"},
		// §4.3 6: signature.
		{"signed-by-other-key", func() dpop.Input {
			return input(proof("ES256", testkeys.EC256A, map[string]any{"jwk": otherJWK}, nil), thumb(t, testkeys.EC256B))
		}, dpop.Options{}, verify.ErrInvalidDPoPProof, "dpop-signature"},
		{"signature-altered", func() dpop.Input {
			sig := []byte(segs[2])
			sig[10] = map[bool]byte{true: 'B', false: 'A'}[sig[10] == 'A'] // another base64url character
			return input(segs[0]+"."+segs[1]+"."+string(sig), jktEC)
		}, dpop.Options{}, verify.ErrInvalidDPoPProof, "dpop-signature"},
		// §4.3 8: htm.
		{"htm-other", func() dpop.Input {
			return input(proof("ES256", testkeys.EC256A, nil, map[string]any{"htm": "GET"}), jktEC)
		}, dpop.Options{}, verify.ErrInvalidDPoPProof, "dpop-htm"},
		{"htm-lower", func() dpop.Input {
			return input(proof("ES256", testkeys.EC256A, nil, map[string]any{"htm": "post"}), jktEC)
		}, dpop.Options{}, verify.ErrInvalidDPoPProof, "dpop-htm"},
		{"request-unknown", func() dpop.Input { in := input(good, jktEC); in.RequestErr = request.ErrMissing; return in }, dpop.Options{}, verify.ErrInvalidDPoPProof, "dpop-htm"},
		// §4.3 9: htu.
		{"htu-other-path", func() dpop.Input {
			return input(proof("ES256", testkeys.EC256A, nil, map[string]any{"htu": "https://api.example.com/orders/2"}), jktEC)
		}, dpop.Options{}, verify.ErrInvalidDPoPProof, "dpop-htu"},
		{"htu-other-host", func() dpop.Input {
			return input(proof("ES256", testkeys.EC256A, nil, map[string]any{"htu": "https://evil.example.com/orders/1"}), jktEC)
		}, dpop.Options{}, verify.ErrInvalidDPoPProof, "dpop-htu"},
		{"htu-http", func() dpop.Input {
			return input(proof("ES256", testkeys.EC256A, nil, map[string]any{"htu": "http://api.example.com/orders/1"}), jktEC)
		}, dpop.Options{}, verify.ErrInvalidDPoPProof, "dpop-htu"},
		// User information is no part of a request's URL: an htu naming
		// some is not the request's, though it names the same host and path.
		{"htu-userinfo", func() dpop.Input {
			return input(proof("ES256", testkeys.EC256A, nil, map[string]any{"htu": "https://user@api.example.com/orders/1"}), jktEC)
		}, dpop.Options{}, verify.ErrInvalidDPoPProof, "dpop-htu"},
		{"htu-relative", func() dpop.Input {
			return input(proof("ES256", testkeys.EC256A, nil, map[string]any{"htu": "/orders/1"}), jktEC)
		}, dpop.Options{}, verify.ErrInvalidDPoPProof, "dpop-htu"},
		// The port is part of htu (RFC 9449 §4.3 9 with RFC 3986 §6.2.3):
		// a proof for :8443 is not one for :443, nor the other way round.
		{"htu-other-port", func() dpop.Input {
			return input(proof("ES256", testkeys.EC256A, nil, map[string]any{"htu": "https://api.example.com:8443/orders/1"}), jktEC)
		}, dpop.Options{}, verify.ErrInvalidDPoPProof, "dpop-htu"},
		{"request-other-port", func() dpop.Input {
			in := input(good, jktEC)
			in.Request.Port = "8443"
			return in
		}, dpop.Options{}, verify.ErrInvalidDPoPProof, "dpop-htu"},
		// A dot segment is refused in htu as in the request path.
		{"htu-dot-segment", func() dpop.Input {
			return input(proof("ES256", testkeys.EC256A, nil, map[string]any{"htu": "https://api.example.com/orders/./1"}), jktEC)
		}, dpop.Options{}, verify.ErrInvalidDPoPProof, "dpop-htu"},
		{"htu-ambiguous-path", func() dpop.Input {
			return input(proof("ES256", testkeys.EC256A, nil, map[string]any{"htu": "https://api.example.com/orders%2F1"}), jktEC)
		}, dpop.Options{}, verify.ErrInvalidDPoPProof, "dpop-htu"},
		{"scheme-not-forwarded", func() dpop.Input { in := input(good, jktEC); in.Request.Scheme = ""; return in }, dpop.Options{}, verify.ErrInvalidDPoPProof, "dpop-htu"},
		// §4.3 11: iat.
		{"iat-too-old", func() dpop.Input {
			return input(proof("ES256", testkeys.EC256A, nil, map[string]any{"iat": t0.Add(-61 * time.Second).Unix()}), jktEC)
		}, dpop.Options{}, verify.ErrInvalidDPoPProof, "dpop-iat"},
		{"iat-ahead", func() dpop.Input {
			return input(proof("ES256", testkeys.EC256A, nil, map[string]any{"iat": t0.Add(31 * time.Second).Unix()}), jktEC)
		}, dpop.Options{}, verify.ErrInvalidDPoPProof, "dpop-iat"},
		// A negative Leeway counts as none (it would also shorten the
		// jti's replay entry): a proof issued now passes.
		{"negative-leeway-is-zero", func() dpop.Input { in := input(good, jktEC); in.Leeway = -time.Minute; return in }, dpop.Options{}, nil, ""},
		// §4.3 12: ath.
		{"ath-other-token", func() dpop.Input {
			return input(proof("ES256", testkeys.EC256A, nil, map[string]any{"ath": ath("other")}), jktEC)
		}, dpop.Options{}, verify.ErrInvalidDPoPProof, "dpop-ath"},
		// Binding (cnf.jkt).
		{"jkt-other-key", func() dpop.Input { return input(good, thumb(t, testkeys.EC256B)) }, dpop.Options{}, verify.ErrBindingMismatch, "dpop-binding"},
		{"token-not-bound", func() dpop.Input { return input(good, "") }, dpop.Options{}, verify.ErrBindingMismatch, "dpop-binding"},
		// §4.3 10: jti (replay store failure fails closed).
		{"replay-store-down", func() dpop.Input { return input(good, jktEC) }, dpop.Options{Replay: failingStore{}}, verify.ErrKeysUnavailable, "dpop-jti"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newChecker(t, tt.opts)
			steps, p, err := c.Explain(context.Background(), tt.in(), t0)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Fatalf("Explain() = %v, want %v", err, tt.wantErr)
			}
			last := steps[len(steps)-1]
			if tt.wantStep == "" {
				if p == nil || !last.OK || last.Check != "dpop-jti" {
					t.Fatalf("accepted proof: steps end with %+v, proof %v", last, p)
				}
				return
			}
			if last.Check != tt.wantStep || last.OK {
				t.Errorf("failing step = %+v, want %s", last, tt.wantStep)
			}
			if _, err2 := c.Check(context.Background(), tt.in(), t0); verify.Class(err2) != verify.Class(tt.wantErr) {
				t.Errorf("Check() = %v, want the class of %v", err2, tt.wantErr)
			}
		})
	}
}

// TestReplayRefused checks that a proof is accepted once: its second use,
// here or at another checker sharing the store, fails.
func TestReplayRefused(t *testing.T) {
	store, _ := replay.NewMemory(10)
	a := newChecker(t, dpop.Options{Replay: store})
	b := newChecker(t, dpop.Options{Replay: store})
	in := input(proof("ES256", testkeys.EC256A, nil, nil), thumb(t, testkeys.EC256A))
	if _, err := a.Check(context.Background(), in, t0); err != nil {
		t.Fatalf("first Check() = %v", err)
	}
	for i, c := range []*dpop.Checker{a, b} {
		if _, err := c.Check(context.Background(), in, t0.Add(time.Second)); !errors.Is(err, dpop.ErrReplayed) || !errors.Is(err, verify.ErrInvalidDPoPProof) {
			t.Errorf("replay at checker %d: Check() = %v, want ErrReplayed", i, err)
		}
	}
	// Another issuer's namespace holds its own jti.
	in.Issuer = "https://other.example.com/"
	if _, err := a.Check(context.Background(), in, t0); err != nil {
		t.Errorf("same jti with another issuer: Check() = %v", err)
	}
}

func TestNewRefuses(t *testing.T) {
	store, _ := replay.NewMemory(1)
	for _, tt := range []struct {
		name string
		opts dpop.Options
	}{
		{"no-store", dpop.Options{}},
		{"hmac", dpop.Options{Replay: store, Algorithms: []string{"HS256"}}},
		{"none", dpop.Options{Replay: store, Algorithms: []string{"none"}}},
		{"negative-age", dpop.Options{Replay: store, MaxAge: -time.Second}},
		{"age-below-min", dpop.Options{Replay: store, MaxAge: dpop.MinMaxAge - 1}},
		{"age-above-max", dpop.Options{Replay: store, MaxAge: dpop.MaxMaxAge + 1}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := dpop.New(tt.opts); !errors.Is(err, dpop.ErrInvalidOptions) {
				t.Errorf("New(%+v) = %v, want %v", tt.opts, err, dpop.ErrInvalidOptions)
			}
		})
	}
	for _, age := range []time.Duration{dpop.MinMaxAge, dpop.MaxMaxAge} {
		if _, err := dpop.New(dpop.Options{Replay: store, MaxAge: age}); err != nil {
			t.Errorf("New(MaxAge %s) = %v", age, err)
		}
	}
	if err := dpop.CheckOptions(dpop.Options{MaxAge: time.Hour}); err == nil || !strings.HasPrefix(err.Error(), "dpop: invalid options: MaxAge: ") {
		t.Errorf("CheckOptions(MaxAge 1h) = %v, want it to name MaxAge first", err)
	}
}

func TestReplayKeyDistinct(t *testing.T) {
	if dpop.ReplayKey("ab", "c") == dpop.ReplayKey("a", "bc") {
		t.Error("ReplayKey(ab, c) == ReplayKey(a, bc)")
	}
}

// TestKeyCache checks that a returning client's proof costs no key
// parsing, that a key is reused only with the same alg, use and key_ops,
// that a refused key is never cached, and that a negative size turns the
// cache off.
func TestKeyCache(t *testing.T) {
	jktEC := thumb(t, testkeys.EC256A)
	ecJWK := testkeys.JWKJSON(testkeys.JWK{Key: testkeys.Public(testkeys.EC256A)})
	var withUse map[string]any
	_ = json.Unmarshal(ecJWK, &withUse)
	withUse["use"] = "sig"
	tests := []struct {
		name       string
		size       int
		proofs     []string
		wantParses uint64
		wantHits   uint64
	}{
		{"returning-client", 0, []string{
			proof("ES256", testkeys.EC256A, nil, map[string]any{"jti": "a"}),
			proof("ES256", testkeys.EC256A, nil, map[string]any{"jti": "b"}),
			proof("ES256", testkeys.EC256A, nil, map[string]any{"jti": "c"}),
		}, 1, 2},
		{"other-metadata-parsed-again", 0, []string{
			proof("ES256", testkeys.EC256A, nil, map[string]any{"jti": "a"}),
			proof("ES256", testkeys.EC256A, map[string]any{"jwk": withUse}, map[string]any{"jti": "b"}),
			proof("ES256", testkeys.EC256A, map[string]any{"jwk": withUse}, map[string]any{"jti": "c"}),
		}, 2, 1},
		{"cache-off", -1, []string{
			proof("ES256", testkeys.EC256A, nil, map[string]any{"jti": "a"}),
			proof("ES256", testkeys.EC256A, nil, map[string]any{"jti": "b"}),
		}, 2, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newChecker(t, dpop.Options{KeyCacheSize: tt.size})
			for _, p := range tt.proofs {
				if _, err := c.Check(context.Background(), input(p, jktEC), t0); err != nil {
					t.Fatalf("Check() = %v, want nil", err)
				}
			}
			if got := c.KeyStats(); got.Parses != tt.wantParses || got.Hits != tt.wantHits {
				t.Errorf("KeyStats() = %+v, want %d parses and %d hits", got, tt.wantParses, tt.wantHits)
			}
		})
	}
	t.Run("refused-key-not-cached", func(t *testing.T) {
		c := newChecker(t, dpop.Options{})
		weak := proof("RS256", testkeys.RSA1024, nil, nil)
		for range 2 {
			if _, err := c.Check(context.Background(), input(weak, "x"), t0); !errors.Is(err, verify.ErrInvalidDPoPProof) {
				t.Fatalf("Check() = %v, want %v", err, verify.ErrInvalidDPoPProof)
			}
		}
		if got := c.KeyStats(); got.Parses != 2 || got.Hits != 0 {
			t.Errorf("KeyStats() = %+v, want 2 parses and no hit", got)
		}
	})
	// The cached key is reused only for the same metadata: a jwk with
	// another alg, key_ops or a key_ops that is no array is built again,
	// and refused as it is when not cached.
	for _, tt := range []struct {
		name   string
		member string
		value  any
	}{
		{"cached-key-other-alg", "alg", "RS256"},
		{"cached-key-other-key-ops", "key_ops", []string{"encrypt"}},
		{"cached-key-key-ops-not-array", "key_ops", "verify"},
		{"cached-key-empty-key-ops", "key_ops", []string{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := newChecker(t, dpop.Options{})
			if _, err := c.Check(context.Background(), input(proof("ES256", testkeys.EC256A, nil, map[string]any{"jti": "a"}), jktEC), t0); err != nil {
				t.Fatal(err)
			}
			var jwk map[string]any
			_ = json.Unmarshal(ecJWK, &jwk)
			jwk[tt.member] = tt.value
			p := proof("ES256", testkeys.EC256A, map[string]any{"jwk": jwk}, map[string]any{"jti": "b"})
			if _, err := c.Check(context.Background(), input(p, jktEC), t0); !errors.Is(err, verify.ErrInvalidDPoPProof) {
				t.Fatalf("Check(jwk %s %v) = %v, want %v", tt.member, tt.value, err, verify.ErrInvalidDPoPProof)
			}
		})
	}
	// One slot: each client's key evicts the other's, and neither is
	// taken for the other.
	t.Run("one-slot-two-clients", func(t *testing.T) {
		c := newChecker(t, dpop.Options{KeyCacheSize: 1})
		jktB := thumb(t, testkeys.EC256B)
		for i, k := range []string{testkeys.EC256A, testkeys.EC256B, testkeys.EC256A, testkeys.EC256B} {
			jkt := jktEC
			if k == testkeys.EC256B {
				jkt = jktB
			}
			p := proof("ES256", k, nil, map[string]any{"jti": "j" + strconv.Itoa(i)})
			if _, err := c.Check(context.Background(), input(p, jkt), t0); err != nil {
				t.Fatalf("Check(proof %d) = %v, want nil", i, err)
			}
		}
	})
	t.Run("cached-key-checks-signature", func(t *testing.T) {
		c := newChecker(t, dpop.Options{})
		if _, err := c.Check(context.Background(), input(proof("ES256", testkeys.EC256A, nil, map[string]any{"jti": "a"}), jktEC), t0); err != nil {
			t.Fatal(err)
		}
		// EC256B signs, the header names EC256A's (cached) key.
		forged := proof("ES256", testkeys.EC256B, map[string]any{"jwk": ecJWK}, map[string]any{"jti": "b"})
		if _, err := c.Check(context.Background(), input(forged, jktEC), t0); !errors.Is(err, verify.ErrInvalidDPoPProof) {
			t.Fatalf("Check() = %v, want %v", err, verify.ErrInvalidDPoPProof)
		}
		if got := c.KeyStats(); got.Hits != 1 {
			t.Errorf("KeyStats() = %+v, want the forged proof's key from the cache", got)
		}
	})
}

// TestPSSSaltIsHashLength: a PS256 proof verifies with a salt of the
// hash's length only (RFC 7518 §3.5), as an access token does; the
// largest salt, which some signers use, is refused at the signature.
func TestPSSSaltIsHashLength(t *testing.T) {
	good := proof("PS256", testkeys.RSA2048A, nil, nil)
	dot := strings.LastIndexByte(good, '.')
	sum := sha256.Sum256([]byte(good[:dot]))
	key := testkeys.Private(testkeys.RSA2048A).(*rsa.PrivateKey)
	for _, tc := range []struct {
		name    string
		salt    int
		wantErr error
	}{
		{"hash-length", rsa.PSSSaltLengthEqualsHash, nil},
		{"largest", rsa.PSSSaltLengthAuto, verify.ErrInvalidDPoPProof},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sig, err := rsa.SignPSS(rand.Reader, key, crypto.SHA256, sum[:], &rsa.PSSOptions{SaltLength: tc.salt})
			if err != nil {
				t.Fatal(err)
			}
			c := newChecker(t, dpop.Options{})
			p := good[:dot+1] + base64.RawURLEncoding.EncodeToString(sig)
			steps, _, err := c.Explain(context.Background(), input(p, thumb(t, testkeys.RSA2048A)), t0)
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
				t.Fatalf("Explain() = %v, want %v", err, tc.wantErr)
			}
			if last := steps[len(steps)-1]; tc.wantErr != nil && last.Check != "dpop-signature" {
				t.Errorf("failing step = %+v, want dpop-signature", last)
			}
		})
	}
}
