package integration

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/internal/testkeys"
)

// Issue 28's acceptance through the binary: the tokens jwksverify mints for
// upstreams, checked by a second jwksverify that trusts the first's
// published keys (dogfood), through real nginx and Caddy, and for opaque
// tokens of a real Hydra (the phantom-token pattern).

const mintIssuer = "https://jwksverify.e2e.internal"

var (
	mintK1 = testkeys.JWK{Key: testkeys.Private(testkeys.EC256A), Kid: "k1"}
	mintK2 = testkeys.JWK{Key: testkeys.Private(testkeys.Ed25519A), Kid: "k2"}
)

// writeMintKeys writes a private JWKS of keys to path by rename, as an
// operator (or a Kubernetes Secret) replaces it.
func writeMintKeys(t *testing.T, path string, doc []byte) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, doc, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// jwtParts decodes a compact JWS's header and claims (no signature check:
// the consumer jwksverify checks it).
func jwtParts(t *testing.T, jws string) (header, claims map[string]any) {
	t.Helper()
	parts := strings.Split(jws, ".")
	if len(parts) != 3 {
		t.Fatalf("%q is not a compact JWS", jws)
	}
	for i, out := range []*map[string]any{&header, &claims} {
		b, err := base64.RawURLEncoding.DecodeString(parts[i])
		if err != nil || json.Unmarshal(b, out) != nil {
			t.Fatalf("part %d of the JWS does not decode: %v", i, err)
		}
	}
	return header, claims
}

// mintedBy asks j's forward-auth for policy with token and returns the
// minted token (the Authorization answer header without "Bearer ").
func mintedBy(t *testing.T, j *jwksverifyProc, policy, token string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, "http://"+j.HTTP+"/v1/policy/"+policy, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := httpClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("forward-auth = %d, want 200", resp.StatusCode)
	}
	jws, ok := strings.CutPrefix(resp.Header.Get("Authorization"), "Bearer ")
	if !ok {
		t.Fatalf("forward-auth answer Authorization = %q, want Bearer <minted>", resp.Header.Get("Authorization"))
	}
	return jws
}

// startConsumer runs a second jwksverify that trusts the minted tokens of
// the jwksverify at jwksURL (its JWKS refreshed every second).
func startConsumer(t *testing.T, jwksURL string) *jwksverifyProc {
	t.Helper()
	return startJWKSVerify(t, fmt.Sprintf(`listen: 127.0.0.1:0
shutdown_timeout: 1s
issuers:
  - issuer: %s
    jwks_url: %s
    audiences: [orders-service]
    type: at+jwt
    refresh: {min_interval: 1s, max_interval: 1s, default_ttl: 1s, unknown_kid_interval: 1s}
`, mintIssuer, jwksURL))
}

func getJWKS(t *testing.T, addr string) (*http.Response, []map[string]any) {
	t.Helper()
	resp, err := httpClient().Get("http://" + addr + "/.well-known/jwks.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var doc struct {
		Keys []map[string]any `json:"keys"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	return resp, doc.Keys
}

func kidsOf(keys []map[string]any) []string {
	var kids []string
	for _, k := range keys {
		kids = append(kids, fmt.Sprint(k["kid"]))
	}
	return kids
}

const mintConfig = `listen: 127.0.0.1:0
admin_listen: 127.0.0.1:0
shutdown_timeout: 1s
mint: {issuer: %s, keys_file: %s, signing_kid: %s, ttl: 1m}
policies:
  - name: orders-read
    scopes: {any: [orders:read]}
    mint: {audience: orders-service, claims: {scope: scope, tenant: tid}, ttl: 2m}
  - name: short
    mint: {audience: orders-service, ttl: 2s}
  - name: plain
issuers:
%s`

// TestMintThroughBinary: the claims and header of a minted token exactly
// as SPEC; its signature checked by a second jwksverify against the
// served JWKS; private members never served; reuse; rotation; refused key
// files; and the consumer refusing a token once its key is removed.
func TestMintThroughBinary(t *testing.T) {
	is := newTestIssuer(t)
	keys := filepath.Join(t.TempDir(), "mint.jwks")
	writeMintKeys(t, keys, testkeys.PrivateJWKS(mintK1, mintK2))
	j := startJWKSVerify(t, fmt.Sprintf(mintConfig, mintIssuer, keys, "k1", is.IssuerConfig()))
	consumer := startConsumer(t, "http://"+j.HTTP+"/.well-known/jwks.json")

	source := is.Token(map[string]any{"tid": "t-1", "azp": "web", "email": "alice@example.com"})
	minted := mintedBy(t, j, "orders-read", source)

	t.Run("claims-and-header-exactly", func(t *testing.T) {
		v := verifyToken(t, consumer, minted)
		if !v.Valid {
			t.Fatalf("the consumer refuses the minted token: %+v", v)
		}
		h, c := jwtParts(t, minted)
		if len(h) != 3 || h["alg"] != "ES256" || h["kid"] != "k1" || h["typ"] != "at+jwt" {
			t.Errorf("header = %v, want exactly alg ES256, kid k1, typ at+jwt", h)
		}
		var names []string
		for k := range c {
			names = append(names, k)
		}
		slices.Sort(names)
		if want := []string{"aud", "client_id", "exp", "iat", "iss", "jti", "scope", "sub", "tenant"}; !slices.Equal(names, want) {
			t.Errorf("claims %v, want exactly %v", names, want)
		}
		if c["iss"] != mintIssuer || c["sub"] != "alice" || c["aud"] != "orders-service" || c["client_id"] != "web" ||
			c["scope"] != "orders:read" || c["tenant"] != "t-1" || c["exp"].(float64)-c["iat"].(float64) != 120 {
			t.Errorf("claims = %v", c)
		}
	})
	t.Run("exp-never-beyond-source", func(t *testing.T) {
		exp := time.Now().Add(30 * time.Second).Unix()
		_, c := jwtParts(t, mintedBy(t, j, "orders-read", is.Token(map[string]any{"exp": exp})))
		if c["exp"] != float64(exp) {
			t.Errorf("exp = %v, want the source's %d", c["exp"], exp)
		}
	})
	t.Run("reused-within-life", func(t *testing.T) {
		if again := mintedBy(t, j, "orders-read", source); again != minted {
			t.Error("the same source token got a new minted token within 90 % of the first's life")
		}
	})
	t.Run("new-token-past-ninety-percent", func(t *testing.T) {
		// ttl 2s: the token lives until its exp (whole seconds, never
		// after now + ttl); it is handed out again until 90 % of that life
		// has passed, and a new one is minted after.
		t1 := time.Now()
		first := mintedBy(t, j, "short", source)
		if again := mintedBy(t, j, "short", source); again != first {
			t.Fatal("not reused right away")
		}
		_, c1 := jwtParts(t, first)
		exp := time.Unix(int64(c1["exp"].(float64)), 0)
		reuseEnd := t1.Add(exp.Sub(t1) * 9 / 10)
		var next string
		var lastFirst time.Time // when the last request answered with first started
		waitFor(t, 5*time.Second, "a new token past 90 % of the first's life", func() bool {
			start := time.Now()
			next = mintedBy(t, j, "short", source)
			if next == first {
				lastFirst = start
			}
			return next != first
		})
		seen := time.Now()
		_, c2 := jwtParts(t, next)
		if seen.Before(reuseEnd.Add(-100*time.Millisecond)) || c1["jti"] == c2["jti"] {
			t.Errorf("a new token %v before 90 %% of the first's life ended (jti %v then %v)", reuseEnd.Sub(seen), c1["jti"], c2["jti"])
		}
		if !lastFirst.Before(exp) {
			t.Errorf("the first token was handed out to a request of %v, past its exp %v", lastFirst, exp)
		}
	})
	t.Run("verify-minted", func(t *testing.T) {
		body, _ := json.Marshal(map[string]any{"token": source, "policy": "orders-read", "mint": true})
		resp, err := httpClient().Post("http://"+j.HTTP+"/v1/verify", "application/json", strings.NewReader(string(body)))
		if err != nil {
			t.Fatal(err)
		}
		var v struct {
			Minted string `json:"minted"`
		}
		json.NewDecoder(resp.Body).Decode(&v)
		resp.Body.Close()
		if v.Minted != minted {
			t.Errorf("/v1/verify minted = %q, want the cached minted token", v.Minted)
		}
	})
	t.Run("jwks-public-only-on-both-listeners", func(t *testing.T) {
		for _, addr := range []string{j.HTTP, j.Admin} {
			resp, ks := getJWKS(t, addr)
			if resp.StatusCode != http.StatusOK || resp.Header.Get("Cache-Control") != "public, max-age=300" {
				t.Errorf("%s: status %d, Cache-Control %q", addr, resp.StatusCode, resp.Header.Get("Cache-Control"))
			}
			if !slices.Equal(kidsOf(ks), []string{"k1", "k2"}) {
				t.Errorf("%s: kids %v", addr, kidsOf(ks))
			}
			for _, k := range ks {
				for _, m := range []string{"d", "p", "q", "dp", "dq", "qi", "oth", "k"} {
					if _, ok := k[m]; ok {
						t.Errorf("%s: kid %v serves the private member %q", addr, k["kid"], m)
					}
				}
			}
		}
	})
	t.Run("bad-keys-file-refused", func(t *testing.T) {
		good, _ := os.ReadFile(keys)
		writeMintKeys(t, keys, testkeys.PrivateJWKS(testkeys.JWK{Key: testkeys.Public(testkeys.EC256A), Kid: "k1"}))
		waitFor(t, 10*time.Second, "the refusal logged", func() bool { return strings.Contains(j.Output(), "mint keys file refused") })
		if again := mintedBy(t, j, "orders-read", source); again != minted {
			t.Error("a refused keys file changed the minting")
		}
		if _, ks := getJWKS(t, j.HTTP); !slices.Equal(kidsOf(ks), []string{"k1", "k2"}) {
			t.Errorf("kids after a refused file = %v", kidsOf(ks))
		}
		out, err := exec.Command(jwksverifyBinary(t), "check", "--config", j.Config).CombinedOutput()
		if err == nil || !strings.Contains(string(out), "mint.keys_file") || !strings.Contains(string(out), "no private part") {
			t.Errorf("check = %v, %s; want a refusal naming mint.keys_file", err, out)
		}
		writeMintKeys(t, keys, good)
		if out, err := exec.Command(jwksverifyBinary(t), "check", "--config", j.Config).CombinedOutput(); err != nil {
			t.Errorf("check of the good file = %v, %s", err, out)
		}
	})
	t.Run("rotation", func(t *testing.T) {
		// The next key (k2) has been published from the start; switch
		// signing_kid: the next answer uses it.
		cfg := fmt.Sprintf(mintConfig, mintIssuer, keys, "k2", is.IssuerConfig())
		cfg = strings.Replace(cfg, "listen: 127.0.0.1:0\nadmin_listen: 127.0.0.1:0", "listen: "+j.HTTP+"\nadmin_listen: "+j.Admin, 1)
		if err := os.WriteFile(j.Config, []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		var next string
		waitFor(t, 10*time.Second, "signing with k2", func() bool {
			next = mintedBy(t, j, "orders-read", source)
			h, _ := jwtParts(t, next)
			return h["kid"] == "k2"
		})
		if v := verifyToken(t, consumer, next); !v.Valid || v.Error != "" {
			t.Errorf("the consumer refuses the k2 token: %+v", v)
		}
		// The old key leaves the file: never used again, no longer
		// published, and the consumer refuses what it signed once its
		// JWKS cache refreshes.
		writeMintKeys(t, keys, testkeys.PrivateJWKS(mintK2))
		waitFor(t, 10*time.Second, "k1 unpublished", func() bool {
			_, ks := getJWKS(t, j.HTTP)
			return slices.Equal(kidsOf(ks), []string{"k2"})
		})
		for i := range 3 {
			h, _ := jwtParts(t, mintedBy(t, j, "orders-read", is.Token(map[string]any{"jti": fmt.Sprint("r", i)})))
			if h["kid"] != "k2" {
				t.Errorf("a token minted after k1 left the file has kid %v", h["kid"])
			}
		}
		waitFor(t, 15*time.Second, "the consumer refusing the k1 token", func() bool {
			v := verifyToken(t, consumer, minted)
			return !v.Valid && v.Error == "unknown_kid"
		})
	})
}

// mintExtra is the jwksverify configuration of the proxy tests with
// minting: /orders/** mints for orders-service, /public/** runs a policy
// that mints nothing.
func mintExtra(t *testing.T) string {
	keys := filepath.Join(t.TempDir(), "mint.jwks")
	writeMintKeys(t, keys, testkeys.PrivateJWKS(mintK1))
	return fmt.Sprintf(`mint: {issuer: %s, keys_file: %s, signing_kid: k1}
policies:
  - name: orders-read
    mint: {audience: orders-service}
  - name: plain
routes:
  - {path: /orders/**, policy: orders-read}
  - {path: /public/**, policy: plain}
`, mintIssuer, keys)
}

// TestProxyMint: real nginx and Caddy with the generated files send the
// application the minted token, never the caller's, on a route whose
// policy mints; and the caller's own Authorization, untouched (no Caddy
// placeholder), on one whose policy mints nothing.
func TestProxyMint(t *testing.T) {
	for _, px := range []string{"nginx", "caddy"} {
		t.Run(px, func(t *testing.T) {
			var env *proxyEnv
			switch px {
			case "nginx":
				env = startNginxWith(t, false, "", mintExtra(t))
			case "caddy":
				env = startCaddyWith(t, false, "", mintExtra(t))
			}
			caller := env.issuer.Token(nil)
			get := func(path string) *echoed {
				t.Helper()
				req, _ := http.NewRequest(http.MethodGet, env.URL+path, nil)
				req.Header.Set("Authorization", "Bearer "+caller)
				var resp *http.Response
				var err error
				// jwksverify was started unready (the down issuer): wait for
				// the test issuer's keys.
				waitFor(t, 10*time.Second, "an allowed answer", func() bool {
					resp, err = (&http.Client{Timeout: 5 * time.Second}).Do(req)
					if err != nil {
						return false
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					return resp.StatusCode == http.StatusOK
				})
				return env.upstream.Last()
			}
			t.Run("minting-route", func(t *testing.T) {
				got := get("/orders/1")
				authz := got.Headers.Values("Authorization")
				if len(authz) != 1 || strings.Contains(authz[0], caller) {
					t.Fatalf("the application got Authorization %q, want only the minted token", authz)
				}
				jws, ok := strings.CutPrefix(authz[0], "Bearer ")
				if !ok {
					t.Fatalf("Authorization = %q, want Bearer <minted>", authz[0])
				}
				h, c := jwtParts(t, jws)
				if h["kid"] != "k1" || h["typ"] != "at+jwt" || c["aud"] != "orders-service" || c["iss"] != mintIssuer || c["sub"] != "alice" {
					t.Errorf("minted header %v, claims %v", h, c)
				}
				for name, vals := range got.Headers {
					for _, v := range vals {
						if strings.Contains(v, caller) {
							t.Errorf("the caller's token reached the application in %s", name)
						}
					}
				}
			})
			t.Run("route-without-minting", func(t *testing.T) {
				got := get("/public/x")
				if a := got.Headers.Values("Authorization"); len(a) != 1 || a[0] != "Bearer "+caller {
					t.Errorf("the application got Authorization %q, want the caller's own", a)
				}
				for name, vals := range got.Headers {
					for _, v := range vals {
						if strings.Contains(v, "{http.") || strings.Contains(v, "{rp.") {
							t.Errorf("a Caddy placeholder reached the application: %s: %s", name, v)
						}
					}
				}
			})
		})
	}
}

// TestHydraPhantomToken: an opaque Hydra token is introspected, allowed
// and minted into a JWT whose sub and client_id are Hydra's; a second
// jwksverify verifies it with the first's published keys.
func TestHydraPhantomToken(t *testing.T) {
	h := startHydra(t)
	keys := filepath.Join(t.TempDir(), "mint.jwks")
	writeMintKeys(t, keys, testkeys.PrivateJWKS(mintK1))
	j := startJWKSVerify(t, fmt.Sprintf(`listen: 127.0.0.1:0
shutdown_timeout: 1s
mint: {issuer: %s, keys_file: %s, signing_kid: k1, ttl: 1m}
policies:
  - name: phantom
    scopes: {all: [read]}
    mint: {audience: orders-service, claims: {scope: scope}}
issuers:
  - issuer: %q
    discovery: true
    introspection: {url: %q}
`, mintIssuer, keys, h.issuer, h.introspect))
	consumer := startConsumer(t, "http://"+j.HTTP+"/.well-known/jwks.json")
	opaque := h.newClient(t, "opaque")
	tok := h.token(t, opaque)
	if strings.Count(tok, ".") == 2 {
		t.Fatal("Hydra issued a JWS to the opaque client")
	}
	minted := mintedBy(t, j, "phantom", tok)
	v := verifyToken(t, consumer, minted)
	if !v.Valid {
		t.Fatalf("the consumer refuses the minted token: %+v", v)
	}
	if v.Claims["sub"] != opaque.id || v.Claims["client_id"] != opaque.id || v.Claims["scope"] != "read" || v.Claims["iss"] != mintIssuer {
		t.Errorf("minted claims = %v, want Hydra's sub and client_id %s", v.Claims, opaque.id)
	}
	if _, err := url.Parse(h.issuer); err != nil {
		t.Fatal(err)
	}
}
