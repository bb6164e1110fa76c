package jwks

import (
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/jwksverify/jwksverify/cache"
	"github.com/jwksverify/jwksverify/internal/testkeys"
)

func TestParse(t *testing.T) {
	secret := testkeys.Secret()
	oct := json.RawMessage(fmt.Sprintf(`{"kty":"oct","kid":"h","k":%q}`, base64.RawURLEncoding.EncodeToString(secret)))
	// Keycloak's signing key carries an x5c certificate; swapping in another
	// modulus makes the certificate lie about the key.
	var keycloak struct{ Keys []json.RawMessage }
	if err := json.Unmarshal(readIdP(t, "keycloak.jwks.json"), &keycloak); err != nil {
		t.Fatal(err)
	}
	goodKeycloak := keycloak.Keys[0]
	var badX5C, other map[string]any
	json.Unmarshal(goodKeycloak, &badX5C)
	json.Unmarshal(testkeys.JWKJSON(keyA), &other)
	badX5C["n"] = other["n"]
	badX5CJSON, _ := json.Marshal(badX5C)
	// A local "secret" that is public key material: anyone holding the
	// public key could sign with it (RFC 8725 §2.1).
	der, err := x509.MarshalPKIXPublicKey(testkeys.Public(testkeys.EC256A))
	if err != nil {
		t.Fatal(err)
	}
	pemSecret := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	octPEM := json.RawMessage(fmt.Sprintf(`{"kty":"oct","kid":"pem","k":%q}`, base64.RawURLEncoding.EncodeToString(pemSecret)))
	octShort := json.RawMessage(fmt.Sprintf(`{"kty":"oct","kid":"short","k":%q}`, base64.RawURLEncoding.EncodeToString(secret[:16])))
	// An RSA modulus made even (crypto/rsa refuses it at verify time).
	var evenN map[string]any
	json.Unmarshal(testkeys.JWKJSON(keyA), &evenN)
	n, _ := base64.RawURLEncoding.DecodeString(evenN["n"].(string))
	n[len(n)-1] &^= 1
	depth := func(levels int) []byte { // {"keys":[{"x":[[…]]}]}: levels of nesting in all
		return []byte(`{"keys":[{"x":` + strings.Repeat("[", levels-3) + strings.Repeat("]", levels-3) + `}]}`)
	}

	tests := []struct {
		name        string
		data        []byte
		opts        ParseOptions
		wantKids    []string
		wantSkipped []string // substrings of the reasons, in order
		wantErr     error
	}{
		{
			name:     "every-supported-kind",
			data:     doc(testkeys.JWKJSON(keyA), testkeys.JWKJSON(keyB), testkeys.JWKJSON(keyC)),
			wantKids: []string{"a", "b", "c"},
		},
		{
			name: "p384-p521-rsa3072",
			data: doc(
				testkeys.JWKJSON(testkeys.JWK{Key: testkeys.Public(testkeys.EC384), Kid: "p384"}),
				testkeys.JWKJSON(testkeys.JWK{Key: testkeys.Public(testkeys.EC521), Kid: "p521"}),
				testkeys.JWKJSON(testkeys.JWK{Key: testkeys.Public(testkeys.RSA3072), Kid: "rsa3072"}),
			),
			wantKids: []string{"p384", "p521", "rsa3072"},
		},
		{
			name:        "case-colliding-member-skipped",
			data:        doc(json.RawMessage(`{"KTY":"EC",`+string(testkeys.JWKJSON(keyA))[1:]), testkeys.JWKJSON(keyB)),
			wantKids:    []string{"b"},
			wantSkipped: []string{`appears twice`},
		},
		{
			// The lower-case name first: the later one, which encoding/json
			// (jwkset's decoder) keeps, would differ from the one checked.
			name:        "case-colliding-member-after-skipped",
			data:        doc(json.RawMessage(string(testkeys.JWKJSON(keyA))[:len(testkeys.JWKJSON(keyA))-1]+`,"KTY":"EC"}`), testkeys.JWKJSON(keyB)),
			wantKids:    []string{"b"},
			wantSkipped: []string{`"KTY" appears twice`},
		},
		{
			name:        "duplicate-member-skipped",
			data:        doc(json.RawMessage(`{"use":"enc",`+string(jwkWith(keyA, map[string]any{"use": "sig"}))[1:]), testkeys.JWKJSON(keyB)),
			wantKids:    []string{"b"},
			wantSkipped: []string{`"use" appears twice`},
		},
		{
			// "uſe" (U+017F) is "use" to encoding/json (jwkset's decoder),
			// which folds names as strings.EqualFold does, not as
			// strings.ToLower: the later "enc" would be the key's use there.
			name:        "fold-colliding-member-skipped",
			data:        doc(json.RawMessage(string(jwkWith(keyA, map[string]any{"use": "sig"}))[:len(jwkWith(keyA, map[string]any{"use": "sig"}))-1]+`,"u\u017fe":"enc"}`), testkeys.JWKJSON(keyB)),
			wantKids:    []string{"b"},
			wantSkipped: []string{`appears twice`},
		},
		{
			name:        "enc-key-skipped",
			data:        doc(testkeys.JWKJSON(keyA), jwkWith(keyB, map[string]any{"use": "enc", "alg": nil})),
			wantKids:    []string{"a"},
			wantSkipped: []string{`use "enc"`},
		},
		{
			name:        "encryption-alg-skipped",
			data:        doc(jwkWith(keyA, map[string]any{"use": nil, "alg": "RSA-OAEP"}), testkeys.JWKJSON(keyB)),
			wantKids:    []string{"b"},
			wantSkipped: []string{"encryption algorithm"},
		},
		{
			name:        "alg-none-skipped",
			data:        doc(jwkWith(keyA, map[string]any{"alg": "none"}), testkeys.JWKJSON(keyB)),
			wantKids:    []string{"b"},
			wantSkipped: []string{`alg "none"`},
		},
		{
			name:        "alg-none-any-case-skipped",
			data:        doc(jwkWith(keyA, map[string]any{"alg": "NONE"}), jwkWith(keyB, map[string]any{"alg": "None"}), testkeys.JWKJSON(keyC)),
			wantKids:    []string{"c"},
			wantSkipped: []string{`alg "none"`, `alg "none"`},
		},
		{
			name:        "unknown-use-skipped",
			data:        doc(jwkWith(keyA, map[string]any{"use": "tls"}), testkeys.JWKJSON(keyB)),
			wantKids:    []string{"b"},
			wantSkipped: []string{`unsupported use "tls"`},
		},
		{
			name: "key-ops",
			data: doc(
				jwkWith(keyA, map[string]any{"key_ops": []string{"encrypt"}}),
				jwkWith(keyB, map[string]any{"key_ops": []string{"verify"}}),
				jwkWith(keyC, map[string]any{"key_ops": "verify"}),
			),
			wantKids:    []string{"b"},
			wantSkipped: []string{`key_ops does not include "verify"`, "not an array"},
		},
		{
			name:        "remote-oct-refused",
			data:        doc(oct, testkeys.JWKJSON(keyA)),
			wantKids:    []string{"a"},
			wantSkipped: []string{"symmetric (oct) key from a remote JWKS refused"},
		},
		{
			name:     "local-oct-accepted",
			data:     doc(oct, testkeys.JWKJSON(keyA)),
			opts:     ParseOptions{Local: true},
			wantKids: []string{"h", "a"},
		},
		{
			name:        "local-oct-refused-as-public-key-or-short",
			data:        doc(octPEM, octShort, oct),
			opts:        ParseOptions{Local: true},
			wantKids:    []string{"h"},
			wantSkipped: []string{"public key material", "shorter than"},
		},
		{
			name:        "local-oct-empty-secret",
			data:        doc(json.RawMessage(`{"kty":"oct","kid":"h","k":""}`)),
			opts:        ParseOptions{Local: true},
			wantSkipped: []string{"invalid JWK"},
		},
		{
			name:        "rsa-1024-weak",
			data:        doc(testkeys.JWKJSON(testkeys.JWK{Key: testkeys.Public(testkeys.RSA1024), Kid: "weak"}), testkeys.JWKJSON(keyA)),
			wantKids:    []string{"a"},
			wantSkipped: []string{cache.ErrWeakKey.Error()},
		},
		{
			name: "rsa-bad-exponent",
			data: doc(
				jwkWith(keyA, map[string]any{"e": "AQ"}),                                                        // 1
				jwkWith(keyA, map[string]any{"e": "Ag"}),                                                        // 2
				jwkWith(keyA, map[string]any{"e": base64.RawURLEncoding.EncodeToString([]byte{0x80, 0, 0, 1})}), // 2^31+1
				jwkWith(keyA, map[string]any{"e": "AQAA"}),                                                      // 65536: even
				testkeys.JWKJSON(keyB),
			),
			wantKids:    []string{"b"},
			wantSkipped: []string{`"e"`, `"e"`, `"e"`, `"e"`},
		},
		{
			name:        "rsa-even-modulus",
			data:        doc(jwkWith(keyA, map[string]any{"n": base64.RawURLEncoding.EncodeToString(n)}), testkeys.JWKJSON(keyB)),
			wantKids:    []string{"b"},
			wantSkipped: []string{`"n"`},
		},
		{
			name: "private-members-refused",
			data: doc(
				jwkWith(keyA, map[string]any{"d": "AQAB"}),
				jwkWith(keyB, map[string]any{"d": "AQAB"}),
				jwkWith(keyA, map[string]any{"p": "AQAB"}),
				testkeys.JWKJSON(keyC),
			),
			wantKids:    []string{"c"},
			wantSkipped: []string{`private key member "d"`, `private key member "d"`, `private key member "p"`},
		},
		{
			name: "unsupported-kty-and-curves",
			data: doc(
				json.RawMessage(`{"kty":"XYZ","kid":"x"}`),
				json.RawMessage(`{"kty":"OKP","crv":"Ed448","kid":"ed448","x":"`+strings.Repeat("A", 76)+`"}`),
				json.RawMessage(`{"kty":"OKP","crv":"X25519","kid":"x25519","x":"`+base64.RawURLEncoding.EncodeToString(make([]byte, 32))+`"}`),
				json.RawMessage(`{"kty":"EC","crv":"secp256k1","kid":"k1","x":"AQ","y":"AQ"}`),
				testkeys.JWKJSON(keyA),
			),
			wantKids:    []string{"a"},
			wantSkipped: []string{`unsupported kty "XYZ"`, `OKP curve "Ed448"`, `OKP curve "X25519"`, "invalid JWK"},
		},
		{
			name: "broken-members",
			data: doc(
				json.RawMessage(`"not an object"`),
				json.RawMessage(`{"kty":"RSA","kid":7}`),
				json.RawMessage(`{"kid":"nokty"}`),
				jwkWith(keyA, map[string]any{"n": "!!!"}),
				jwkWith(keyB, map[string]any{"x": "AQ"}), // not on the curve
				jwkWith(keyA, map[string]any{"issuer": 42}),
				jwkWith(keyA, map[string]any{"alg": 1}),
				jwkWith(keyA, map[string]any{"use": 1}),
				testkeys.JWKJSON(keyC),
			),
			wantKids: []string{"c"},
			wantSkipped: []string{"not a JSON object", `"kid" is not a string`, `missing or invalid "kty"`,
				"invalid JWK", "invalid JWK", `"issuer" is not a string`, `"alg" is not a string`, `"use" is not a string`},
		},
		{
			name:        "x5c-mismatch-skipped",
			data:        doc(badX5CJSON, testkeys.JWKJSON(keyB)),
			wantKids:    []string{"b"},
			wantSkipped: []string{"x5c certificate does not match the key"},
		},
		{
			name: "x5c-bounded",
			data: doc(
				jwkWith(keyA, map[string]any{"x5c": strings.Split(strings.Repeat("AAAA,", 9), ",")[:9]}),
				jwkWith(keyB, map[string]any{"x5c": "AAAA"}),
				testkeys.JWKJSON(keyC),
			),
			wantKids:    []string{"c"},
			wantSkipped: []string{"x5c chain of 9 certificates", `"x5c" is not an array`},
		},
		{
			name:     "x5c-match-kept",
			data:     doc(goodKeycloak),
			wantKids: []string{"nB0vgzwAcgJmjXwQZSzBMNkhoCaH4fvSwx5GC8Jq93c"},
		},
		{
			name:        "max-keys",
			data:        doc(testkeys.JWKJSON(keyA), testkeys.JWKJSON(keyB), testkeys.JWKJSON(keyC)),
			opts:        ParseOptions{MaxKeys: 2},
			wantKids:    []string{"a", "b"},
			wantSkipped: []string{"1 key beyond the limit of 2 not read"},
		},
		{
			name:        "duplicate-kid-first-wins",
			data:        doc(testkeys.JWKJSON(keyA), jwkWith(keyB, map[string]any{"kid": "a"})),
			wantKids:    []string{"a"},
			wantSkipped: []string{"duplicate kid"},
		},
		{
			name:     "kidless-key",
			data:     doc(jwkWith(keyA, map[string]any{"kid": nil})),
			wantKids: []string{""},
		},
		{
			name:     "other-members-ignored",
			data:     []byte(`{"issuer":"x","keys":[` + string(testkeys.JWKJSON(keyA)) + `],"extra":{"deep":[1,2]}}`),
			wantKids: []string{"a"},
		},
		{name: "empty-set", data: []byte(`{"keys":[]}`)},
		{name: "not-json", data: []byte(`<html>`), wantErr: ErrMalformed},
		{name: "empty-body", data: nil, wantErr: ErrMalformed},
		{name: "array", data: []byte(`[{"kty":"RSA"}]`), wantErr: ErrMalformed},
		{name: "no-keys-member", data: []byte(`{"jwks":[]}`), wantErr: ErrMalformed},
		{name: "keys-null", data: []byte(`{"keys":null}`), wantErr: ErrMalformed},
		{name: "keys-object", data: []byte(`{"keys":{}}`), wantErr: ErrMalformed},
		{name: "duplicate-keys-member", data: []byte(`{"keys":[],"keys":[]}`), wantErr: ErrMalformed},
		{name: "trailing-data", data: []byte(`{"keys":[]} {}`), wantErr: ErrMalformed},
		{name: "truncated", data: []byte(`{"keys":[{"kty":"RSA"`), wantErr: ErrMalformed},
		{name: "too-deep", data: []byte(`{"keys":[{"x":` + strings.Repeat("[", 20) + strings.Repeat("]", 20) + `}]}`), wantErr: ErrMalformed},
		{name: "depth-at-the-limit", data: depth(maxJSONDepth), wantSkipped: []string{`"kty"`}},
		{name: "depth-one-over", data: depth(maxJSONDepth + 1), wantErr: ErrMalformed},
		{name: "brackets-in-strings-do-not-count", data: []byte(`{"keys":[],"s":"` + strings.Repeat("[", 40) + `"}`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			keys, skipped, err := Parse(tt.data, tt.opts)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Parse() error = %v, want %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			set := cache.NewSet(keys, skipped, t0, t0)
			var kids []string
			for _, k := range set.Keys() {
				kids = append(kids, k.Kid)
			}
			if fmt.Sprint(kids) != fmt.Sprint(tt.wantKids) {
				t.Errorf("Parse() kids = %q, want %q", kids, tt.wantKids)
			}
			got := set.Skipped()
			if len(got) != len(tt.wantSkipped) {
				t.Fatalf("Parse() skipped = %+v, want %d: %q", got, len(tt.wantSkipped), tt.wantSkipped)
			}
			for i, want := range tt.wantSkipped {
				if !strings.Contains(got[i].Reason, want) {
					t.Errorf("Parse() skipped[%d] = %+v, want reason with %q", i, got[i], want)
				}
			}
			for _, k := range keys {
				if k.Kty == "oct" && !tt.opts.Local {
					t.Errorf("Parse() returned a remote oct key %q", k.Kid)
				}
				if k.Local != tt.opts.Local {
					t.Errorf("Parse() key %q Local = %v, want %v", k.Kid, k.Local, tt.opts.Local)
				}
			}
		})
	}
}

func TestParseMetadata(t *testing.T) {
	data := doc(
		jwkWith(keyA, map[string]any{"key_ops": []string{"verify"}, "issuer": "https://issuer.example/{tenantid}/v2.0"}),
	)
	keys, _, err := Parse(data, ParseOptions{})
	if err != nil || len(keys) != 1 {
		t.Fatalf("Parse() = %v, %v, want one key", keys, err)
	}
	k := keys[0]
	want := cache.Key{Kid: "a", Kty: "RSA", Alg: "RS256", Use: "sig", Size: 2048, Issuer: "https://issuer.example/{tenantid}/v2.0"}
	if k.Kid != want.Kid || k.Kty != want.Kty || k.Alg != want.Alg || k.Use != want.Use || k.Size != want.Size ||
		k.Issuer != want.Issuer || fmt.Sprint(k.KeyOps) != "[verify]" || k.Thumbprint == "" {
		t.Errorf("Parse() key = %+v, want %+v with key_ops [verify]", *k, want)
	}
}

// Every signing key that real IdPs publish must load; their peculiarities
// (no alg, x5c, per-key issuer, enc keys) must be handled.
func TestParseIdPDocuments(t *testing.T) {
	tests := []struct {
		file        string
		wantKeys    int
		wantSkipped []string // kids
		wantIssuer  int      // keys with a per-key issuer member
	}{
		{file: "entra-common.jwks.json", wantKeys: 8, wantIssuer: 8},
		{file: "github-actions.jwks.json", wantKeys: 4},
		{file: "google.jwks.json", wantKeys: 2},
		{file: "keycloak.jwks.json", wantKeys: 1, wantSkipped: []string{"Q2O_f0Z7hVL1WUxKQbChyWK_FzQK-qRZh4Kg9mxxt_I"}},
		{file: "okta.jwks.json", wantKeys: 2},
	}
	for _, tt := range tests {
		t.Run(strings.TrimSuffix(tt.file, ".jwks.json"), func(t *testing.T) {
			keys, skipped, err := Parse(readIdP(t, tt.file), ParseOptions{})
			if err != nil {
				t.Fatalf("Parse() error = %v", err)
			}
			if len(keys) != tt.wantKeys {
				t.Errorf("Parse() = %d keys, want %d (skipped %+v)", len(keys), tt.wantKeys, skipped)
			}
			var kids []string
			for _, s := range skipped {
				kids = append(kids, s.Kid)
			}
			if fmt.Sprint(kids) != fmt.Sprint(tt.wantSkipped) {
				t.Errorf("Parse() skipped = %+v, want kids %q", skipped, tt.wantSkipped)
			}
			issuers := 0
			for _, k := range keys {
				if k.Kty != "RSA" || k.Size < cache.MinRSABits || k.Kid == "" {
					t.Errorf("Parse() key %+v, want an RSA signing key with a kid", *k)
				}
				if k.Issuer != "" {
					issuers++
				}
			}
			if issuers != tt.wantIssuer {
				t.Errorf("Parse() keys with issuer = %d, want %d", issuers, tt.wantIssuer)
			}
		})
	}
}

func TestParseReusesUnchangedKeys(t *testing.T) {
	kidless := jwkWith(keyC, map[string]any{"kid": nil})
	prevKeys, _, err := Parse(doc(testkeys.JWKJSON(keyA), testkeys.JWKJSON(keyB), kidless), ParseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	prev := cache.NewSet(prevKeys, nil, t0, t0)
	a, _ := prev.Lookup("a")
	b, _ := prev.Lookup("b")

	// "a" unchanged; "b" same kid with new material; "b2" new metadata on
	// b's material; the kid-less key unchanged.
	next := doc(
		testkeys.JWKJSON(keyA),
		testkeys.JWKJSON(testkeys.JWK{Key: testkeys.Public(testkeys.EC256B), Kid: "b", Alg: "ES256", Use: "sig"}),
		jwkWith(keyB, map[string]any{"alg": nil}),
		kidless,
	)
	keys, _, err := Parse(next, ParseOptions{Previous: prev})
	if err != nil {
		t.Fatal(err)
	}
	if keys[0] != a {
		t.Errorf("Parse() unchanged key a = %p, want the previous pointer %p", keys[0], a)
	}
	if keys[1] == b || keys[1].Thumbprint == b.Thumbprint {
		t.Errorf("Parse() rotated key b reused the previous key")
	}
	if keys[2] == b {
		t.Errorf("Parse() key with changed metadata reused the previous key")
	}
	if keys[3] != prev.KidlessKeys()[0] {
		t.Errorf("Parse() unchanged kid-less key not reused")
	}
}
