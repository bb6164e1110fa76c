// Package bench compares jwksverify's verifier with its peers — golang-jwt +
// keyfunc (the naive baseline a hand-wired service uses), lestrrat-go/jwx v3,
// go-jose v4 — and with the crypto floor (the bare signature primitive on
// pre-parsed inputs), on the same tokens and keys.
//
// It is its own Go module so the peers never enter the main go.mod. The
// benchmarks live in bench_test.go; run.sh runs them and cmd/report writes
// docs/BENCHMARKS.md. Each implementation here is built once, outside the
// timed loop, and then checks exactly the same things: signature, exp
// (required), nbf, iss and aud, with 30s of leeway.
package bench

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/asn1"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"time"

	"github.com/MicahParks/keyfunc/v3"
	jose "github.com/go-jose/go-jose/v4"
	josejwt "github.com/go-jose/go-jose/v4/jwt"
	"github.com/golang-jwt/jwt/v5"
	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"
	jwxjwt "github.com/lestrrat-go/jwx/v3/jwt"

	"github.com/jwksverify/jwksverify/bench/internal/fixture"
	"github.com/jwksverify/jwksverify/cache"
	"github.com/jwksverify/jwksverify/verify"
)

// VerifyFunc verifies one token and reports whether it is valid. Each is safe
// for concurrent use.
type VerifyFunc func(token string) error

// Issuer is one issuer's name and key material as every implementation needs it.
type Issuer struct {
	Name string
	// JWKS is the issuer's JWKS document (for keyfunc, jwx, go-jose).
	JWKS []byte
	// Keys is the same set pre-parsed for jwksverify.
	Keys *cache.Keys
}

// Jwksverify returns jwksverify's Verify over issuers, all allowing alg,
// with the verified-token cache configured by tc (the zero value: off).
func Jwksverify(alg string, issuers []Issuer, tc verify.TokenCacheOptions) (VerifyFunc, *verify.Verifier, error) {
	opts := verify.Options{TokenCache: tc}
	for _, is := range issuers {
		opts.Issuers = append(opts.Issuers, verify.Issuer{
			Issuer:     is.Name,
			Keys:       is.Keys,
			Audiences:  []string{fixture.Audience},
			Algorithms: []string{alg},
		})
	}
	v, err := verify.New(opts)
	if err != nil {
		return nil, nil, err
	}
	ctx := context.Background()
	return func(token string) error {
		_, err := v.Verify(ctx, token)
		return err
	}, v, nil
}

// GolangJWTDirect is golang-jwt's jwt.Parse with the key given directly.
func GolangJWTDirect(alg string, key any) VerifyFunc {
	opts := golangJWTOptions(alg, fixture.Issuer)
	kf := func(*jwt.Token) (any, error) { return key, nil }
	return func(token string) error {
		_, err := jwt.Parse(token, kf, opts...)
		return err
	}
}

// GolangJWTKeyfunc is the naive baseline: jwt.Parse with a keyfunc over the
// issuer's JWKS (keyfunc.NewJWKSetJSON), as a hand-wired service does it.
func GolangJWTKeyfunc(alg string, is Issuer) (VerifyFunc, error) {
	k, err := keyfunc.NewJWKSetJSON(is.JWKS)
	if err != nil {
		return nil, err
	}
	opts := golangJWTOptions(alg, is.Name)
	return func(token string) error {
		_, err := jwt.Parse(token, k.Keyfunc, opts...)
		return err
	}, nil
}

// GolangJWTKeyfuncIssuers is the naive baseline for several issuers: one
// keyfunc per issuer, chosen by the (not yet verified) iss claim inside the
// keyfunc; the choice itself is the issuer check.
func GolangJWTKeyfuncIssuers(alg string, issuers []Issuer) (VerifyFunc, error) {
	byIss := make(map[string]jwt.Keyfunc, len(issuers))
	for _, is := range issuers {
		k, err := keyfunc.NewJWKSetJSON(is.JWKS)
		if err != nil {
			return nil, err
		}
		byIss[is.Name] = k.Keyfunc
	}
	opts := golangJWTOptions(alg, "")
	kf := func(t *jwt.Token) (any, error) {
		iss, err := t.Claims.GetIssuer()
		if err != nil {
			return nil, err
		}
		f, ok := byIss[iss]
		if !ok {
			return nil, fmt.Errorf("unknown issuer")
		}
		return f(t)
	}
	return func(token string) error {
		_, err := jwt.Parse(token, kf, opts...)
		return err
	}, nil
}

func golangJWTOptions(alg, iss string) []jwt.ParserOption {
	opts := []jwt.ParserOption{
		jwt.WithValidMethods([]string{alg}),
		jwt.WithAudience(fixture.Audience),
		jwt.WithExpirationRequired(),
		jwt.WithLeeway(fixture.Leeway),
	}
	if iss != "" {
		opts = append(opts, jwt.WithIssuer(iss))
	}
	return opts
}

// JWXDirect is jwx v3's jwt.Parse (JWS verify, then validation) with the key
// given directly.
func JWXDirect(alg string, key any) (VerifyFunc, error) {
	a, ok := jwa.LookupSignatureAlgorithm(alg)
	if !ok {
		return nil, fmt.Errorf("jwx: no algorithm %s", alg)
	}
	opts := []jwxjwt.ParseOption{jwxjwt.WithKey(a, key)}
	opts = append(opts, jwxValidation(fixture.Issuer)...)
	return func(token string) error {
		_, err := jwxjwt.Parse([]byte(token), opts...)
		return err
	}, nil
}

// JWXKeySet is jwx v3's jwt.Parse with the issuer's JWKS as a jwk.Set (key by kid).
func JWXKeySet(is Issuer) (VerifyFunc, error) {
	set, err := jwk.Parse(is.JWKS)
	if err != nil {
		return nil, err
	}
	opts := []jwxjwt.ParseOption{jwxjwt.WithKeySet(set)}
	opts = append(opts, jwxValidation(is.Name)...)
	return func(token string) error {
		_, err := jwxjwt.Parse([]byte(token), opts...)
		return err
	}, nil
}

func jwxValidation(iss string) []jwxjwt.ParseOption {
	return []jwxjwt.ParseOption{
		jwxjwt.WithIssuer(iss),
		jwxjwt.WithAudience(fixture.Audience),
		jwxjwt.WithRequiredClaim("exp"),
		jwxjwt.WithAcceptableSkew(fixture.Leeway),
	}
}

// joseClaims is what go-jose decodes: the registered claims and the scope, as
// a service would.
type joseClaims struct {
	josejwt.Claims
	Scope string `json:"scope"`
}

// GoJOSE is go-jose v4's jwt.ParseSigned + Claims(key) + ValidateWithLeeway.
// key is a crypto key (the key given directly) or a *jose.JSONWebKeySet
// (go-jose picks the key by kid).
func GoJOSE(alg, iss string, key any) VerifyFunc {
	algs := []jose.SignatureAlgorithm{jose.SignatureAlgorithm(alg)}
	return func(token string) error {
		t, err := josejwt.ParseSigned(token, algs)
		if err != nil {
			return err
		}
		var c joseClaims
		if err := t.Claims(key, &c); err != nil {
			return err
		}
		if c.Expiry == nil {
			return errors.New("go-jose: no exp")
		}
		return c.ValidateWithLeeway(josejwt.Expected{
			Issuer:      iss,
			AnyAudience: josejwt.Audience{fixture.Audience},
			Time:        time.Now(),
		}, fixture.Leeway)
	}
}

// GoJOSEKeySet parses is's JWKS for [GoJOSE].
func GoJOSEKeySet(is Issuer) (*jose.JSONWebKeySet, error) {
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(is.JWKS, &set); err != nil {
		return nil, err
	}
	return &set, nil
}

// Floor is the crypto floor: the bare primitive (hash + verify) for token's
// alg, on inputs decoded once up front. Only the signature is checked, and
// the returned function ignores its argument: it verifies token every time.
// HMAC builds its hash.Hash per call, as any concurrency-safe verifier must.
func Floor(alg string, key any, token string) (VerifyFunc, error) {
	dot := strings.LastIndexByte(token, '.')
	if dot < 0 {
		return nil, errors.New("floor: malformed token")
	}
	input := []byte(token[:dot])
	sig, err := base64.RawURLEncoding.DecodeString(token[dot+1:])
	if err != nil {
		return nil, err
	}
	bad := errors.New("floor: bad signature")
	check := func(ok bool) error {
		if !ok {
			return bad
		}
		return nil
	}
	switch alg {
	case "HS256":
		secret := key.([]byte)
		return func(string) error {
			m := hmac.New(sha256.New, secret)
			m.Write(input)
			return check(hmac.Equal(m.Sum(nil), sig))
		}, nil
	case "RS256":
		pub := key.(*rsa.PublicKey)
		return func(string) error {
			h := sha256.Sum256(input)
			return rsa.VerifyPKCS1v15(pub, crypto.SHA256, h[:], sig)
		}, nil
	case "PS256":
		pub := key.(*rsa.PublicKey)
		opts := &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash, Hash: crypto.SHA256}
		return func(string) error {
			h := sha256.Sum256(input)
			return rsa.VerifyPSS(pub, crypto.SHA256, h[:], sig, opts)
		}, nil
	case "ES256", "ES384", "ES512":
		pub := key.(*ecdsa.PublicKey)
		der, err := asn1.Marshal(struct{ R, S *big.Int }{
			new(big.Int).SetBytes(sig[:len(sig)/2]), new(big.Int).SetBytes(sig[len(sig)/2:]),
		})
		if err != nil {
			return nil, err
		}
		digest := func() []byte {
			switch alg {
			case "ES384":
				h := sha512.Sum384(input)
				return h[:]
			case "ES512":
				h := sha512.Sum512(input)
				return h[:]
			}
			h := sha256.Sum256(input)
			return h[:]
		}
		return func(string) error { return check(ecdsa.VerifyASN1(pub, digest(), der)) }, nil
	case "EdDSA":
		pub := key.(ed25519.PublicKey)
		return func(string) error { return check(ed25519.Verify(pub, input, sig)) }, nil
	}
	return nil, fmt.Errorf("floor: no primitive for %s", alg)
}
