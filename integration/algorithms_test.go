package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/internal/testkeys"
)

// TestEveryAlgorithmThroughTheBinary verifies a token of each of the 13
// algorithms through the real binary (`jwksverify serve` on a jwks_file and
// a secret_file), with the prepared RSA and EC keys the binary builds, and
// checks that a signature changed in one character and a token signed by
// another key of the same type are bad_signature. The EC tokens are sent
// first by several clients at once, so that the keys' tables are built
// concurrently on their first verification.
func TestEveryAlgorithmThroughTheBinary(t *testing.T) {
	const iss, hmacIss = "https://algs.example", "https://hmac.example"
	dir := t.TempDir()
	var jwks []testkeys.JWK
	for _, alg := range testkeys.Algorithms {
		if strings.HasPrefix(alg, "HS") {
			continue
		}
		jwks = append(jwks, testkeys.JWK{Key: testkeys.Public(testkeys.NameForAlg(alg)), Kid: "k-" + alg, Alg: alg, Use: "sig"})
	}
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cfg := fmt.Sprintf(`listen: 127.0.0.1:0
shutdown_timeout: 5s
token_cache: {max_entries: 0}
issuers:
  - issuer: %s
    jwks_file: %s
    audiences: [%s]
  - issuer: %s
    secret_file: %s
    audiences: [%s]
`, iss, write("keys.jwks.json", testkeys.JWKS(jwks...)), rhAudience, hmacIss, write("hmac.secret", testkeys.Secret()), rhAudience)
	j := startJWKSVerify(t, cfg)
	base := "http://" + j.HTTP
	c := rhClient(t)

	mint := func(alg string, key any) string {
		issuer, header := iss, map[string]any{"kid": "k-" + alg}
		if strings.HasPrefix(alg, "HS") {
			issuer, header = hmacIss, map[string]any{"kid": nil}
		}
		return testkeys.Mint(alg, key, header, map[string]any{
			"iss": issuer, "aud": rhAudience, "sub": "alice", "exp": time.Now().Add(time.Hour).Unix(),
		})
	}
	check := func(t *testing.T, token string, wantValid bool, wantError string) {
		t.Helper()
		v, err := rhVerify(c, base, token)
		if err != nil {
			t.Fatal(err)
		}
		if v.Valid != wantValid || v.Error != wantError {
			t.Errorf("POST /v1/verify = %s (%s), want valid %v error %q", v, v.Body, wantValid, wantError)
		}
	}

	// First use of the EC keys, from 4 clients at once each.
	var wg sync.WaitGroup
	errs := make(chan string, 12)
	for _, alg := range []string{"ES256", "ES384", "ES512"} {
		tok := mint(alg, testkeys.SigningKey(alg))
		for range 4 {
			wg.Go(func() {
				v, err := rhVerify(c, base, tok)
				if err != nil || !v.Valid {
					errs <- fmt.Sprintf("%s first use: %v %v", alg, v, err)
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}

	// Another key of the same type for each algorithm: the token names the
	// published key's kid but is signed by this one.
	other := map[string]any{
		"RS": testkeys.Private(testkeys.RSA2048B), "PS": testkeys.Private(testkeys.RSA2048B),
		"ES256": testkeys.Private(testkeys.EC256B), "EdDSA": testkeys.Private(testkeys.Ed25519B),
		"HS": []byte(strings.Repeat("another secret, 32 bytes or more", 2)),
	}
	for _, alg := range testkeys.Algorithms {
		t.Run(alg, func(t *testing.T) {
			tok := mint(alg, testkeys.SigningKey(alg))
			check(t, tok, true, "")

			dot := strings.LastIndexByte(tok, '.')
			sig := []byte(tok[dot+1:])
			i := len(sig) / 2
			if sig[i] == 'A' {
				sig[i] = 'B'
			} else {
				sig[i] = 'A'
			}
			check(t, tok[:dot+1]+string(sig), false, "bad_signature")

			key, ok := other[alg]
			if !ok {
				key, ok = other[alg[:2]]
			}
			if !ok {
				return // ES384, ES512: one test key each
			}
			check(t, mint(alg, key), false, "bad_signature")
		})
	}
}
