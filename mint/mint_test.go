package mint

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/MicahParks/keyfunc/v3"
	"github.com/golang-jwt/jwt/v5"
	"go.uber.org/goleak"

	"github.com/jwksverify/jwksverify/internal/testkeys"
	"github.com/jwksverify/jwksverify/verify"
)

var t0 = time.Date(2026, 12, 5, 6, 0, 0, 0, time.UTC)

// keysFile writes a private JWKS of keys to a temporary file.
func keysFile(t *testing.T, keys ...testkeys.JWK) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "mint.jwks")
	writeKeys(t, path, keys...)
	return path
}

func writeKeys(t *testing.T, path string, keys ...testkeys.JWK) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, testkeys.PrivateJWKS(keys...), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

var (
	ecA  = testkeys.JWK{Key: testkeys.Private(testkeys.EC256A), Kid: "k1"}
	ecB  = testkeys.JWK{Key: testkeys.Private(testkeys.EC256B), Kid: "k2"}
	edA  = testkeys.JWK{Key: testkeys.Private(testkeys.Ed25519A), Kid: "ed"}
	rsaA = testkeys.JWK{Key: testkeys.Private(testkeys.RSA2048A), Kid: "rsa", Alg: "PS256"}
)

func newMinter(t *testing.T, o Options) *Minter {
	t.Helper()
	if o.Issuer == "" {
		o.Issuer = "https://jwksverify.internal"
	}
	o.Logger = slog.New(slog.DiscardHandler)
	m, err := New(o)
	if err != nil {
		t.Fatalf("New() = %v", err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return m
}

// source is a verified source token's result.
func source(claims map[string]any) *verify.Result {
	b, _ := json.Marshal(claims)
	r := &verify.Result{Claims: b}
	if e, ok := claims["exp"].(int64); ok {
		r.ExpiresAt = time.Unix(e, 0)
	}
	return r
}

// parse verifies jwt against the minter's published JWKS and returns its
// header and claims.
func parse(t *testing.T, m *Minter, tok string) (map[string]any, map[string]any) {
	t.Helper()
	kf, err := keyfunc.NewJWKSetJSON(m.JWKS())
	if err != nil {
		t.Fatalf("keyfunc: %v", err)
	}
	p, err := jwt.Parse(tok, kf.Keyfunc, jwt.WithTimeFunc(func() time.Time { return t0 }))
	if err != nil {
		t.Fatalf("the minted token does not verify against the JWKS: %v", err)
	}
	return p.Header, map[string]any(p.Claims.(jwt.MapClaims))
}

func TestMintClaimsAndHeader(t *testing.T) {
	for _, k := range []testkeys.JWK{ecA, edA, rsaA, {Key: testkeys.Private(testkeys.EC384), Kid: "p384"}, {Key: testkeys.Private(testkeys.RSA2048B), Kid: "rs"}} {
		t.Run(k.Kid, func(t *testing.T) {
			m := newMinter(t, Options{KeysFile: keysFile(t, k), SigningKid: k.Kid, TTL: time.Minute})
			p, err := NewPolicy(PolicySpec{Audience: "orders-service", Claims: map[string]string{"sub": "sub", "tenant": "tid", "scope": "scope", "absent": "nope"}})
			if err != nil {
				t.Fatal(err)
			}
			src := source(map[string]any{"iss": "https://idp", "sub": "alice", "aud": "api", "exp": t0.Add(time.Hour).Unix(),
				"azp": "web", "tid": "t-1", "scope": "read write", "email": "a@example.com", "jti": "src"})
			tok, err := m.Mint("source-token", src, p, t0)
			if err != nil {
				t.Fatalf("Mint() = %v", err)
			}
			h, c := parse(t, m, tok.JWT)
			wantAlg := map[string]string{"k1": "ES256", "ed": "EdDSA", "rsa": "PS256", "p384": "ES384", "rs": "RS256"}[k.Kid]
			if !maps.Equal(h, map[string]any{"alg": wantAlg, "kid": k.Kid, "typ": "at+jwt"}) {
				t.Errorf("header = %v", h)
			}
			jti, _ := c["jti"].(string)
			if len(jti) < 20 || jti == "src" {
				t.Errorf("jti = %q, want a fresh random one", jti)
			}
			delete(c, "jti")
			want := map[string]any{"iss": "https://jwksverify.internal", "sub": "alice", "aud": "orders-service",
				"iat": float64(t0.Unix()), "exp": float64(t0.Add(time.Minute).Unix()), "client_id": "web", "tenant": "t-1", "scope": "read write"}
			if !maps.Equal(c, want) {
				t.Errorf("claims = %v, want %v", c, want)
			}
			if tok.Value[0] != "Bearer "+tok.JWT || tok.Kid != k.Kid {
				t.Errorf("Value = %q, Kid = %q", tok.Value, tok.Kid)
			}
		})
	}
}

func TestMintExpNeverBeyondSource(t *testing.T) {
	m := newMinter(t, Options{KeysFile: keysFile(t, ecA), SigningKid: "k1", TTL: time.Hour})
	p, _ := NewPolicy(PolicySpec{Audience: "a", TTL: 10 * time.Minute})
	for _, tc := range []struct {
		name    string
		srcExp  time.Time
		wantExp int64
	}{
		{"policy-ttl", t0.Add(time.Hour), t0.Add(10 * time.Minute).Unix()},
		{"source-sooner", t0.Add(90 * time.Second), t0.Add(90 * time.Second).Unix()},
		{"source-a-second-sooner", t0.Add(10*time.Minute - time.Second), t0.Add(10*time.Minute - time.Second).Unix()},
		{"source-fraction-floored", t0.Add(90*time.Second + 700*time.Millisecond), t0.Add(90 * time.Second).Unix()},
		{"source-without-exp", time.Time{}, t0.Add(10 * time.Minute).Unix()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := &verify.Result{Claims: json.RawMessage(`{"sub":"x","client_id":"c","azp":"ignored"}`), ExpiresAt: tc.srcExp}
			tok, err := m.Mint(tc.name, src, p, t0)
			if err != nil {
				t.Fatal(err)
			}
			_, c := parse(t, m, tok.JWT)
			if got := int64(c["exp"].(float64)); got != tc.wantExp {
				t.Errorf("exp = %d, want %d", got, tc.wantExp)
			}
			if c["client_id"] != "c" {
				t.Errorf("client_id = %v, want the source's client_id over azp", c["client_id"])
			}
		})
	}
}

func TestMintReuseUntilNinetyPercent(t *testing.T) {
	m := newMinter(t, Options{KeysFile: keysFile(t, ecA), SigningKid: "k1", TTL: 100 * time.Second})
	p, _ := NewPolicy(PolicySpec{Audience: "a"})
	p2, _ := NewPolicy(PolicySpec{Audience: "a"})
	src := source(map[string]any{"sub": "x", "exp": t0.Add(time.Hour).Unix()})
	first, _ := m.Mint("tok", src, p, t0)
	for _, tc := range []struct {
		name  string
		token string
		p     *Policy
		at    time.Time
		same  bool
	}{
		{"same-within-life", "tok", p, t0.Add(89 * time.Second), true},
		{"past-ninety-percent", "tok", p, t0.Add(90 * time.Second), false},
		{"other-token", "tok2", p, t0.Add(time.Second), false},
		{"other-policy", "tok", p2, t0.Add(time.Second), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := m.Mint(tc.token, src, tc.p, tc.at)
			if err != nil {
				t.Fatal(err)
			}
			if (got.JWT == first.JWT) != tc.same {
				t.Errorf("reused = %v, want %v", got.JWT == first.JWT, tc.same)
			}
		})
	}
	if s := m.Stats(); s.Hits != 1 {
		t.Errorf("Stats().Hits = %d, want 1", s.Hits)
	}
}

func TestCacheBounded(t *testing.T) {
	m := newMinter(t, Options{KeysFile: keysFile(t, edA), SigningKid: "ed", MaxEntries: 3})
	p, _ := NewPolicy(PolicySpec{Audience: "a"})
	src := source(map[string]any{"sub": "x"})
	for i := range 10 {
		if _, err := m.Mint(strings.Repeat("t", i+1), src, p, t0); err != nil {
			t.Fatal(err)
		}
	}
	if n := m.Stats().Entries; n > 3 {
		t.Errorf("Entries = %d, want at most 3", n)
	}
	t.Run("bytes", func(t *testing.T) {
		c := newTokenCache(100)
		c.maxBytes = 3000
		tok := Token{JWT: strings.Repeat("j", 100)}
		for i := range 50 {
			c.put(strings.Repeat("s", 500+i), nil, p, tok, t0.Add(time.Hour).UnixNano(), t0)
			if c.bytes > c.maxBytes {
				t.Fatalf("after %d inserts the cache holds %d bytes, over %d", i+1, c.bytes, c.maxBytes)
			}
		}
		if c.len() == 0 {
			t.Error("the cache holds nothing")
		}
	})
}

func TestJWKSPublishesPublicPartsOnly(t *testing.T) {
	m := newMinter(t, Options{KeysFile: keysFile(t, ecA, edA, rsaA, testkeys.JWK{Key: testkeys.Public(testkeys.EC256B), Kid: "next"}), SigningKid: "k1"})
	var doc struct {
		Keys []map[string]any `json:"keys"`
	}
	if err := json.Unmarshal(m.JWKS(), &doc); err != nil {
		t.Fatal(err)
	}
	var kids []string
	for _, k := range doc.Keys {
		kids = append(kids, k["kid"].(string))
		for _, priv := range privateMembers {
			if _, ok := k[priv]; ok {
				t.Errorf("kid %v publishes %q", k["kid"], priv)
			}
		}
		if k["use"] != "sig" || k["alg"] == nil {
			t.Errorf("kid %v: use %v alg %v", k["kid"], k["use"], k["alg"])
		}
	}
	if !slices.Equal(kids, []string{"k1", "ed", "rsa", "next"}) {
		t.Errorf("kids = %v", kids)
	}
}

func TestKeysFileRefused(t *testing.T) {
	ec := testkeys.Private(testkeys.EC256A).(*ecdsa.PrivateKey)
	// k1's public part with another key's d.
	mixedDoc := func(kid string) []byte {
		var a, b struct {
			Keys []map[string]any `json:"keys"`
		}
		_ = json.Unmarshal(testkeys.PrivateJWKS(testkeys.JWK{Key: ec, Kid: kid}), &a)
		_ = json.Unmarshal(testkeys.PrivateJWKS(ecB), &b)
		a.Keys[0]["d"] = b.Keys[0]["d"]
		doc, _ := json.Marshal(a)
		return doc
	}
	ed := testkeys.Private(testkeys.Ed25519A).(ed25519.PrivateKey)
	edMixed := append(append(ed25519.PrivateKey{}, testkeys.Private(testkeys.Ed25519B).(ed25519.PrivateKey).Seed()...), ed[32:]...)
	for _, tc := range []struct {
		name string
		doc  []byte
		want string
	}{
		{"signing-kid-absent", testkeys.PrivateJWKS(ecB), `no key has the signing kid "k1"`},
		{"public-only-signing-key", testkeys.PrivateJWKS(testkeys.JWK{Key: &ec.PublicKey, Kid: "k1"}), "no private part"},
		{"inconsistent-ec", mixedDoc("k1"), "does not match"},
		{"inconsistent-ed25519", testkeys.PrivateJWKS(testkeys.JWK{Key: edMixed, Kid: "k1"}), "does not match"},
		{"inconsistent-other-key", append(testkeys.PrivateJWKS(ecA)[:len(testkeys.PrivateJWKS(ecA))-2], append([]byte(","), mixedDoc("k9")[len(`{"keys":[`):]...)...), "does not match"},
		{"rsa-1024", testkeys.PrivateJWKS(testkeys.JWK{Key: testkeys.Private(testkeys.RSA1024), Kid: "k1"}), "minimum 2048"},
		{"rsa-incomplete", rsaWithout(t, "p"), "incomplete private part"},
		{"oct", []byte(`{"keys":[{"kty":"oct","kid":"k1","k":"c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0"}]}`), "symmetric"},
		{"unknown-kty", []byte(`{"keys":[{"kty":"XYZ","kid":"k1"}]}`), "not supported"},
		{"x25519", []byte(`{"keys":[{"kty":"OKP","crv":"X25519","kid":"k1","x":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}]}`), "not a signing curve"},
		{"alg-mismatch", testkeys.PrivateJWKS(testkeys.JWK{Key: ec, Kid: "k1", Alg: "RS256"}), "alg_not_allowed"},
		{"hmac-alg", testkeys.PrivateJWKS(testkeys.JWK{Key: ec, Kid: "k1", Alg: "HS256"}), ""},
		{"enc-use", testkeys.PrivateJWKS(testkeys.JWK{Key: ec, Kid: "k1", Use: "enc"}), `use "enc"`},
		{"key-ops-encrypt-only", keyOps(t, testkeys.PrivateJWKS(ecA, testkeys.JWK{Key: testkeys.Public(testkeys.EC256B), Kid: "k2"}), 1, "encrypt"), `allow neither "sign" nor "verify"`},
		{"ec-d-longer-than-the-order", ecD(t, testkeys.PrivateJWKS(ecA), 33), "longer than the curve's order"},
		{"duplicate-kid", testkeys.PrivateJWKS(ecA, testkeys.JWK{Key: testkeys.Private(testkeys.EC256B), Kid: "k1"}), "appears twice"},
		{"no-kid", testkeys.PrivateJWKS(testkeys.JWK{Key: ec}), `no "kid"`},
		{"not-json", []byte("k1"), "not a JWKS"},
		{"empty", []byte(`{"keys":[]}`), `no key in "keys"`},
		{"no-keys-member", []byte(`{}`), `no key in "keys"`},
		{"over-max-keys", []byte(`{"keys":[{}` + strings.Repeat(`,{}`, MaxKeys) + `]}`), fmt.Sprintf("at most %d", MaxKeys)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "keys.jwks")
			if err := os.WriteFile(path, tc.doc, 0o600); err != nil {
				t.Fatal(err)
			}
			o := Options{Issuer: "i", KeysFile: path, SigningKid: "k1"}
			err := Check(o)
			if !errors.Is(err, ErrKeysFile) || !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Check() = %v, want ErrKeysFile with %q", err, tc.want)
			}
			var oe *OptionError
			if !errors.As(err, &oe) || oe.Field != "KeysFile" {
				t.Errorf("Check() = %v, want an OptionError of KeysFile", err)
			}
			if _, err := New(o); !errors.Is(err, ErrKeysFile) {
				t.Errorf("New() = %v, want ErrKeysFile", err)
			}
		})
	}
}

// keyOps is doc with key i's key_ops set to ops.
func keyOps(t *testing.T, doc []byte, i int, ops ...string) []byte {
	var d struct {
		Keys []map[string]any `json:"keys"`
	}
	if err := json.Unmarshal(doc, &d); err != nil {
		t.Fatal(err)
	}
	d.Keys[i]["key_ops"] = ops
	b, _ := json.Marshal(d)
	return b
}

// ecD is doc with its first key's d made n bytes long: a zero byte before
// the original's 32, an encoding no EC private key of P-256 has.
func ecD(t *testing.T, doc []byte, n int) []byte {
	var d struct {
		Keys []map[string]any `json:"keys"`
	}
	if err := json.Unmarshal(doc, &d); err != nil {
		t.Fatal(err)
	}
	raw, err := base64.RawURLEncoding.DecodeString(d.Keys[0]["d"].(string))
	if err != nil {
		t.Fatal(err)
	}
	long := append(make([]byte, n-len(raw)), raw...)
	d.Keys[0]["d"] = base64.RawURLEncoding.EncodeToString(long)
	b, _ := json.Marshal(d)
	return b
}

// rsaWithout is a private RSA JWKS with the member drop left out.
func rsaWithout(t *testing.T, drop string) []byte {
	var doc struct {
		Keys []map[string]any `json:"keys"`
	}
	if err := json.Unmarshal(testkeys.PrivateJWKS(testkeys.JWK{Key: testkeys.Private(testkeys.RSA2048A).(*rsa.PrivateKey), Kid: "k1"}), &doc); err != nil {
		t.Fatal(err)
	}
	delete(doc.Keys[0], drop)
	b, _ := json.Marshal(doc)
	return b
}

func TestOptionsRefused(t *testing.T) {
	path := keysFile(t, ecA)
	for _, tc := range []struct {
		name  string
		o     Options
		field string
	}{
		{"no-issuer", Options{KeysFile: path, SigningKid: "k1"}, "Issuer"},
		{"no-keys-file", Options{Issuer: "i", SigningKid: "k1"}, "KeysFile"},
		{"no-signing-kid", Options{Issuer: "i", KeysFile: path}, "SigningKid"},
		{"ttl-too-long", Options{Issuer: "i", KeysFile: path, SigningKid: "k1", TTL: 48 * time.Hour}, "TTL"},
		{"ttl-a-nanosecond-over-max", Options{Issuer: "i", KeysFile: path, SigningKid: "k1", TTL: MaxTTL + time.Nanosecond}, "TTL"},
		{"ttl-a-nanosecond-under-min", Options{Issuer: "i", KeysFile: path, SigningKid: "k1", TTL: MinTTL - time.Nanosecond}, "TTL"},
		{"max-entries-over", Options{Issuer: "i", KeysFile: path, SigningKid: "k1", MaxEntries: MaxMaxEntries + 1}, "MaxEntries"},
		{"bad-header", Options{Issuer: "i", KeysFile: path, SigningKid: "k1", Header: "X Token"}, "Header"},
		{"missing-file", Options{Issuer: "i", KeysFile: path + ".none", SigningKid: "k1"}, "KeysFile"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.o)
			var oe *OptionError
			if !errors.As(err, &oe) || oe.Field != tc.field {
				t.Errorf("New() = %v, want an OptionError of %s", err, tc.field)
			}
		})
	}
}

func TestPolicyRefused(t *testing.T) {
	for _, tc := range []struct {
		name  string
		spec  PolicySpec
		field string
	}{
		{"no-audience", PolicySpec{}, "Audience"},
		{"reserved-sub", PolicySpec{Audience: "a", Claims: map[string]string{"sub": "email"}}, "Claims[sub]"},
		{"reserved-iss-identity", PolicySpec{Audience: "a", Claims: map[string]string{"iss": "iss"}}, "Claims[iss]"},
		{"reserved-client-id", PolicySpec{Audience: "a", Claims: map[string]string{"client_id": "cid"}}, "Claims[client_id]"},
		{"reserved-exp", PolicySpec{Audience: "a", Claims: map[string]string{"exp": "exp"}}, "Claims[exp]"},
		{"ttl", PolicySpec{Audience: "a", TTL: time.Millisecond}, "TTL"},
		{"empty-source", PolicySpec{Audience: "a", Claims: map[string]string{"tenant": ""}}, "Claims[tenant]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewPolicy(tc.spec)
			var oe *OptionError
			if !errors.As(err, &oe) || oe.Field != tc.field || !errors.Is(err, ErrInvalidOptions) {
				t.Errorf("NewPolicy() = %v, want an OptionError of %s", err, tc.field)
			}
		})
	}
}

func TestReloadRotation(t *testing.T) {
	path := keysFile(t, ecA, ecB)
	m := newMinter(t, Options{KeysFile: path, SigningKid: "k1"})
	p, _ := NewPolicy(PolicySpec{Audience: "a"})
	src := source(map[string]any{"sub": "x", "exp": t0.Add(time.Hour).Unix()})
	before, _ := m.Mint("tok", src, p, t0)
	if before.Kid != "k1" {
		t.Fatalf("Kid = %s", before.Kid)
	}

	t.Run("bad-content-keeps-old-keys", func(t *testing.T) {
		if err := os.WriteFile(path, []byte(`{"keys":[]}`), 0o600); err != nil {
			t.Fatal(err)
		}
		if changed, err := m.Reload(); changed || !errors.Is(err, ErrKeysFile) {
			t.Fatalf("Reload() = %v, %v; want false, ErrKeysFile", changed, err)
		}
		got, _ := m.Mint("tok", src, p, t0.Add(time.Second))
		if got.JWT != before.JWT {
			t.Error("a refused file dropped the cache or the keys")
		}
		if s := m.Stats(); s.ReloadFailures != 1 || !s.Refusing {
			t.Errorf("Stats() = %+v, want ReloadFailures 1, Refusing", s)
		}
	})
	t.Run("signing-key-removed", func(t *testing.T) {
		// The file now holds k2 only, with k1's kid: the old key is gone
		// and the cache with it.
		writeKeys(t, path, testkeys.JWK{Key: testkeys.Private(testkeys.EC256B), Kid: "k1"})
		if changed, err := m.Reload(); !changed || err != nil {
			t.Fatalf("Reload() = %v, %v", changed, err)
		}
		got, _ := m.Mint("tok", src, p, t0.Add(2*time.Second))
		if got.JWT == before.JWT {
			t.Fatal("a token signed by a removed key was handed out again")
		}
		parse(t, m, got.JWT) // verifies under the new JWKS
		if m.Stats().Refusing {
			t.Error("Refusing after a content was taken")
		}
		if bytes.Contains(m.JWKS(), []byte(base64.RawURLEncoding.EncodeToString(testkeys.Private(testkeys.EC256A).(*ecdsa.PrivateKey).X.Bytes()))) {
			t.Error("the removed key is still published")
		}
	})
	t.Run("file-gone-keeps-keys", func(t *testing.T) {
		kept := m.JWKS()
		if err := os.Rename(path, path+".away"); err != nil {
			t.Fatal(err)
		}
		for range 2 {
			if changed, err := m.Reload(); changed || !errors.Is(err, ErrKeysFile) {
				t.Fatalf("Reload() = %v, %v; want false, ErrKeysFile", changed, err)
			}
		}
		if !bytes.Equal(m.JWKS(), kept) || m.Stats().ReloadFailures != 2 {
			t.Errorf("a missing file changed the keys or was counted %d times in all, want 2", m.Stats().ReloadFailures)
		}
		if !m.Stats().Refusing {
			t.Error("not Refusing while the file is gone")
		}
		if err := os.Rename(path+".away", path); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("unchanged-content", func(t *testing.T) {
		// The file is back with the keys signing: nothing to take, and
		// nothing refused any more.
		if changed, err := m.Reload(); changed || err != nil {
			t.Fatalf("Reload() = %v, %v; want false, nil", changed, err)
		}
		if m.Stats().Refusing {
			t.Error("Refusing once the file holds the keys signing again")
		}
	})
}

func TestWatchPicksUpChange(t *testing.T) {
	path := keysFile(t, ecA)
	m := newMinter(t, Options{KeysFile: path, SigningKid: "k1", Watch: 10 * time.Millisecond})
	before := m.JWKS()
	writeKeys(t, path, ecA, ecB)
	deadline := time.Now().Add(5 * time.Second)
	for bytes.Equal(m.JWKS(), before) {
		if time.Now().After(deadline) {
			t.Fatal("the watched keys file change was not picked up")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if kids, signing := m.Kids(); !slices.Equal(kids, []string{"k1", "k2"}) || signing != "k1" {
		t.Errorf("Kids() = %v, %s", kids, signing)
	}
}

func TestHeaderOtherThanAuthorization(t *testing.T) {
	m := newMinter(t, Options{KeysFile: keysFile(t, edA), SigningKid: "ed", Header: "X-Internal-Token"})
	p, _ := NewPolicy(PolicySpec{Audience: "a"})
	tok, err := m.Mint("t", source(map[string]any{"sub": "x"}), p, t0)
	if err != nil || tok.Value[0] != tok.JWT {
		t.Errorf("Mint() = %q, %v; want the bare JWT", tok.Value, err)
	}
}

func TestSign(t *testing.T) {
	m := newMinter(t, Options{KeysFile: keysFile(t, ecA), SigningKid: "k1"})
	for _, tc := range []struct {
		name    string
		claims  string
		wantErr bool
	}{
		{"object", `{"iss":"i","token_introspection":{"active":false}}`, false},
		{"array", `[1]`, true},
		{"garbage", `{`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			jws, err := m.Sign("token-introspection+jwt", []byte(tc.claims))
			if (err != nil) != tc.wantErr {
				t.Fatalf("Sign() = %v, wantErr %v", err, tc.wantErr)
			}
			if err == nil {
				h, _ := parse(t, m, jws)
				if h["typ"] != "token-introspection+jwt" || h["kid"] != "k1" {
					t.Errorf("header = %v", h)
				}
			}
		})
	}
}

func TestMintAllocationsOnHit(t *testing.T) {
	m := newMinter(t, Options{KeysFile: keysFile(t, ecA), SigningKid: "k1"})
	p, _ := NewPolicy(PolicySpec{Audience: "a"})
	src := source(map[string]any{"sub": "x", "exp": t0.Add(time.Hour).Unix()})
	if _, err := m.Mint("tok", src, p, t0); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(100, func() { _, _ = m.Mint("tok", src, p, t0) }); n != 0 {
		t.Errorf("a cache hit allocates %v times, want 0", n)
	}
}

func writeFile(path string, b []byte) error { return os.WriteFile(path, b, 0o600) }

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestMintNullIdentityClaims: a null sub, client_id or azp in the source is
// absent (as revocation reads it): a null client_id does not hide the azp
// naming the client, and no minted token says sub or client_id null.
func TestMintNullIdentityClaims(t *testing.T) {
	m := newMinter(t, Options{KeysFile: keysFile(t, ecA), SigningKid: "k1", TTL: time.Minute})
	p, err := NewPolicy(PolicySpec{Audience: "a"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, claims string
		want         map[string]any // sub, client_id; nil: absent
	}{
		{"client-id-null-azp", `{"sub":"alice","client_id":null,"azp":"web"}`, map[string]any{"sub": "alice", "client_id": "web"}},
		{"both-null", `{"sub":"alice","client_id":null,"azp":null}`, map[string]any{"sub": "alice", "client_id": nil}},
		{"sub-null", `{"sub":null,"client_id":"c"}`, map[string]any{"sub": nil, "client_id": "c"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tok, err := m.Mint(tc.name, &verify.Result{Claims: json.RawMessage(tc.claims), ExpiresAt: t0.Add(time.Hour)}, p, t0)
			if err != nil {
				t.Fatal(err)
			}
			_, c := parse(t, m, tok.JWT)
			for name, want := range tc.want {
				got, ok := c[name]
				if want == nil && ok {
					t.Errorf("%s = %v, want absent", name, got)
				}
				if want != nil && got != want {
					t.Errorf("%s = %v, want %v", name, got, want)
				}
			}
		})
	}
}
