package verify_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"math/big"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/cache"
	"github.com/jwksverify/jwksverify/internal/testkeys"
	"github.com/jwksverify/jwksverify/verify"
)

func TestKeyFits(t *testing.T) {
	rsaKey := testkeys.Public(testkeys.RSA2048A)
	for _, tc := range []struct {
		name    string
		key     *cache.Key
		alg     string
		wantErr error
	}{
		{"rs256-rsa-key", newKey(t, rsaKey, cache.KeyMeta{Kid: "k"}), "RS256", nil},
		{"ps512-rsa-key", newKey(t, rsaKey, cache.KeyMeta{Kid: "k"}), "PS512", nil},
		{"hs256-rsa-key", newKey(t, rsaKey, cache.KeyMeta{Kid: "k"}), "HS256", verify.ErrAlgNotAllowed},
		{"es256-rsa-key", newKey(t, rsaKey, cache.KeyMeta{Kid: "k"}), "ES256", verify.ErrAlgNotAllowed},
		{"es256-p384-key", newKey(t, testkeys.Public(testkeys.EC384), cache.KeyMeta{Kid: "k"}), "ES256", verify.ErrAlgNotAllowed},
		{"es384-p384-key", newKey(t, testkeys.Public(testkeys.EC384), cache.KeyMeta{Kid: "k"}), "ES384", nil},
		{"eddsa-ed25519-key", newKey(t, testkeys.Public(testkeys.Ed25519A), cache.KeyMeta{Kid: "k"}), "EdDSA", nil},
		{"hs256-local-secret", newKey(t, testkeys.Secret(), cache.KeyMeta{Kid: "k", Local: true}), "HS256", nil},
		{"rs256-local-secret", newKey(t, testkeys.Secret(), cache.KeyMeta{Kid: "k", Local: true}), "RS256", verify.ErrAlgNotAllowed},
		{"remote-secret", &cache.Key{Kid: "k", Kty: "oct", Size: 520, Public: testkeys.Secret()}, "HS256", verify.ErrAlgNotAllowed},
		{"jwk-alg-differs", newKey(t, rsaKey, cache.KeyMeta{Kid: "k", Alg: "PS256"}), "RS256", verify.ErrAlgNotAllowed},
		{"jwk-alg-same", newKey(t, rsaKey, cache.KeyMeta{Kid: "k", Alg: "RS256"}), "RS256", nil},
		{"use-enc", newKey(t, rsaKey, cache.KeyMeta{Kid: "k", Use: "enc"}), "RS256", verify.ErrAlgNotAllowed},
		{"use-sig", newKey(t, rsaKey, cache.KeyMeta{Kid: "k", Use: "sig"}), "RS256", nil},
		{"key-ops-without-verify", newKey(t, rsaKey, cache.KeyMeta{Kid: "k", KeyOps: []string{"encrypt"}}), "RS256", verify.ErrAlgNotAllowed},
		{"key-ops-verify", newKey(t, rsaKey, cache.KeyMeta{Kid: "k", KeyOps: []string{"verify"}}), "RS256", nil},
		{"alg-none", newKey(t, rsaKey, cache.KeyMeta{Kid: "k"}), "none", verify.ErrAlgNotAllowed},
		{"alg-lower-case", newKey(t, rsaKey, cache.KeyMeta{Kid: "k"}), "rs256", verify.ErrAlgNotAllowed},
		{"nil-key", nil, "RS256", verify.ErrAlgNotAllowed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := verify.KeyFits(tc.key, tc.alg); !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
				t.Errorf("KeyFits(%s) = %v, want %v", tc.alg, err, tc.wantErr)
			}
		})
	}
}

// TestKeyFitsAgreesWithVerifier proves KeyFits is the verifier's own rule:
// for every algorithm and every test key (each kind, with and without a JWK
// alg and use), the verifier answers alg_not_allowed exactly when KeyFits
// refuses the pair.
func TestKeyFitsAgreesWithVerifier(t *testing.T) {
	var keys []*cache.Key
	for _, alg := range testkeys.Algorithms {
		keys = append(keys, keyFor(t, alg, "plain-"+alg))
		k := keyFor(t, alg, "")
		meta := cache.KeyMeta{Kid: "marked-" + alg, Alg: alg, Use: "sig", Local: k.Local}
		keys = append(keys, newKey(t, k.Public, meta))
	}
	keys = append(keys, newKey(t, testkeys.Public(testkeys.RSA2048A), cache.KeyMeta{Kid: "enc", Use: "enc"}))
	for _, key := range keys {
		v := newVerifier(t, verify.Options{Issuers: []verify.Issuer{issuerA(keysOf(key))}})
		for _, alg := range testkeys.Algorithms {
			t.Run(key.Kid+"-"+alg, func(t *testing.T) {
				_, err := v.Verify(context.Background(), mint(alg, key.Kid, nil))
				refused := errors.Is(err, verify.ErrAlgNotAllowed)
				if fitErr := verify.KeyFits(key, alg); refused != (fitErr != nil) {
					t.Errorf("Verify() = %v but KeyFits() = %v: the two disagree", err, fitErr)
				}
			})
		}
	}
}

// TestCheckHMACKeyRefusesPublicKeyMaterial: an HMAC secret is never built
// from public key material (SPEC, RFC 8725 §2.1). A secret_file (or a
// jwks_file oct key) that holds the IdP's public key — PEM, DER, base64
// DER, a certificate, a JWK — would let anyone who has that public key,
// which is everyone, sign HS256 tokens the verifier accepts.
func TestCheckHMACKeyRefusesPublicKeyMaterial(t *testing.T) {
	pub := testkeys.Public(testkeys.RSA2048A)
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	ecDER, err := x509.MarshalPKIXPublicKey(testkeys.Public(testkeys.EC256A))
	if err != nil {
		t.Fatal(err)
	}
	pemPub := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	pkcs1 := pem.EncodeToMemory(&pem.Block{Type: "RSA PUBLIC KEY", Bytes: x509.MarshalPKCS1PublicKey(pub.(*rsa.PublicKey))})
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), NotBefore: time.Unix(0, 0), NotAfter: time.Unix(1<<32, 0)}
	certDER, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, pub, testkeys.Private(testkeys.RSA2048A))
	if err != nil {
		t.Fatal(err)
	}
	jwk := `{"kty":"RSA","n":"` + base64.RawURLEncoding.EncodeToString(pub.(*rsa.PublicKey).N.Bytes()) + `","e":"AQAB"}`
	for _, tc := range []struct {
		name    string
		secret  []byte
		wantErr bool
	}{
		{"random-secret", testkeys.Secret(), false},
		{"ascii-secret", []byte("correct horse battery staple, 32+ bytes long"), false},
		{"pem-public-key", pemPub, true},
		{"pem-public-key-crlf", bytes.ReplaceAll(pemPub, []byte("\n"), []byte("\r\n")), true},
		{"pem-rsa-public-key", pkcs1, true},
		{"pem-certificate", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: certDER}), true},
		{"der-public-key", der, true},
		{"der-ec-public-key", ecDER, true},
		{"der-pkcs1", x509.MarshalPKCS1PublicKey(pub.(*rsa.PublicKey)), true},
		{"der-certificate", certDER, true},
		{"base64-der-public-key", []byte(base64.StdEncoding.EncodeToString(der) + "\n"), true},
		{"jwk", []byte(jwk), true},
		{"jwks", []byte(`{"keys":[` + jwk + `]}`), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := newKey(t, tc.secret, cache.KeyMeta{Kid: "h", Local: true})
			err := verify.CheckHMACKey(k)
			if (err != nil) != tc.wantErr || (err != nil && !errors.Is(err, verify.ErrAlgNotAllowed)) {
				t.Fatalf("CheckHMACKey(%s) = %v, want error %v (alg_not_allowed)", tc.name, err, tc.wantErr)
			}
			if err != nil && bytes.Contains([]byte(err.Error()), tc.secret[:min(len(tc.secret), 16)]) {
				t.Errorf("CheckHMACKey() error %q quotes the secret", err)
			}
		})
	}
}
