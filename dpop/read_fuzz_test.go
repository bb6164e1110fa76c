package dpop

import (
	"context"
	"encoding/base64"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/internal/jsonscan"
	"github.com/jwksverify/jwksverify/internal/testkeys"
)

// reading is what steps 2 to 6 read of a proof, for comparing two readers.
type reading struct {
	claims     proofClaims
	alg        string
	thumbprint string
	signing    string
	sig        string
}

// readNew runs steps 2 to 6 of Check (structure, claims, typ, alg, jwk).
func readNew(c *Checker, proof string, withToken bool) (reading, error) {
	hdr, cl, signing, sig, err := c.parse(proof)
	if err != nil {
		return reading{}, err
	}
	pc, err := readClaims(cl, withToken)
	if err != nil {
		return reading{}, err
	}
	if err := checkTyp(&hdr, nil); err != nil {
		return reading{}, err
	}
	alg, err := c.checkAlg(&hdr, nil)
	if err != nil {
		return reading{}, err
	}
	key, err := c.checkJWK(&hdr, alg, nil)
	if err != nil {
		return reading{}, err
	}
	return reading{pc, alg, key.Thumbprint, signing, string(sig)}, nil
}

// readLegacy is readNew with the encoding/json reader it replaced.
func readLegacy(c *Checker, proof string, withToken bool) (reading, error) {
	hdr, cl, signing, sig, err := c.legacyParse(proof)
	if err != nil {
		return reading{}, err
	}
	pc, err := legacyReadClaims(cl, withToken)
	if err != nil {
		return reading{}, err
	}
	typ, err := legacyStringMember(hdr, "typ")
	if err != nil || !strings.EqualFold(typ, "dpop+jwt") {
		return reading{}, invalid("typ")
	}
	alg, err := legacyStringMember(hdr, "alg")
	if err != nil || !slices.Contains(c.algs, alg) {
		return reading{}, invalid("alg")
	}
	key, err := legacyPublicKey(hdr["jwk"], alg)
	if err != nil {
		return reading{}, err
	}
	return reading{pc, alg, key.Thumbprint, signing, string(sig)}, nil
}

// strictJSON reports whether b is one JSON object that the strict scanner
// reads: valid JSON, valid UTF-8, nested at most 64 deep (FuzzScanner, in
// internal/jsonscan, holds the scanner to encoding/json on that).
func strictJSON(b []byte) bool {
	it, err := jsonscan.NewMembers(string(b))
	for err == nil {
		var ok bool
		if _, ok, err = it.Next(); !ok {
			break
		}
	}
	return err == nil
}

// FuzzRead holds the proof reader (the strict scanner and the key cache)
// to the encoding/json reader it replaced: whatever the old one refused,
// the new one refuses; whatever the old one accepted, the new one accepts
// and reads the same, unless header or claims are not strict JSON (invalid
// UTF-8, data after the object, nesting deeper than 64), which the new one
// refuses. Each input is read twice by the new reader: the second read
// takes the key from the cache.
func FuzzRead(f *testing.F) {
	ecJWK := string(testkeys.JWKJSON(testkeys.JWK{Key: testkeys.Public(testkeys.EC256A)}))
	edJWK := string(testkeys.JWKJSON(testkeys.JWK{Key: testkeys.Public(testkeys.Ed25519A)}))
	rsaJWK := string(testkeys.JWKJSON(testkeys.JWK{Key: testkeys.Public(testkeys.RSA2048A)}))
	claims := `{"jti":"j-1","htm":"POST","htu":"https://api.example.com/orders/1","iat":1764590400,"ath":"x"}`
	for _, s := range []struct{ hdr, cl string }{
		{`{"typ":"dpop+jwt","alg":"ES256","jwk":` + ecJWK + `}`, claims},
		{`{"typ":"dpop+jwt","alg":"EdDSA","jwk":` + edJWK + `}`, claims},
		{`{"typ":"dpop+jwt","alg":"PS256","jwk":` + rsaJWK + `}`, claims},
		{`{"typ":"DPoP+JWT","alg":"ES256","jwk":` + strings.Replace(ecJWK, `{`, `{"use":"sig","alg":"ES256","key_ops":["verify",null],`, 1) + `}`, claims},
		{`{"typ":"dpop+jwt","alg":"ES256","jwk":` + strings.Replace(ecJWK, `{`, `{"d":"AAAA",`, 1) + `}`, claims},
		{`{"typ":"dpop+jwt","alg":"ES256","jwk":` + strings.Replace(ecJWK, `{`, `{"key_ops":null,"crv":null,`, 1) + `}`, claims},
		{`{"typ":"dpop+jwt","alg":"ES256","\u0061lg":"ES256","jwk":` + ecJWK + `}`, claims},
		{`{"typ":"dpop+jwt","alg":"ES256","jwk":` + ecJWK + `,"crit":["x"]}`, claims},
		{`{"typ":null,"alg":"ES256","jwk":null}`, `{"jti":null,"iat":null,"ath":null}`},
		{`{"typ":"dpop+jwt","alg":"ES256","jwk":` + ecJWK + `} x`, `{"jti":"\ud800","htm":"G","htu":"h","iat":1e400}`},
		{`{"typ":"dpop+jwt","alg":"ES256","jwk":` + ecJWK + `}`, `{"jti":"a","htm":"G","htu":"h","iat":-0.5,"ath":null}`},
	} {
		f.Add(s.hdr, s.cl, true)
		f.Add(s.hdr, s.cl, false)
	}
	newC, err := New(Options{Replay: nopStore{}})
	if err != nil {
		f.Fatal(err)
	}
	oldC, _ := New(Options{Replay: nopStore{}, KeyCacheSize: -1})
	b64 := base64.RawURLEncoding
	f.Fuzz(func(t *testing.T, hdr, cl string, withToken bool) {
		proof := b64.EncodeToString([]byte(hdr)) + "." + b64.EncodeToString([]byte(cl)) + ".c2ln"
		want, wantErr := readLegacy(oldC, proof, withToken)
		for i := range 2 {
			got, err := readNew(newC, proof, withToken)
			switch {
			case wantErr != nil && err == nil:
				t.Fatalf("read %d accepts what the encoding/json reader refused (%v)", i, wantErr)
			case wantErr == nil && err != nil:
				if strictJSON([]byte(hdr)) && strictJSON([]byte(cl)) {
					t.Fatalf("read %d refuses strict JSON that the encoding/json reader accepted: %v", i, err)
				}
			case wantErr == nil && (got.alg != want.alg || got.thumbprint != want.thumbprint || got.signing != want.signing ||
				got.sig != want.sig || got.claims.jti != want.claims.jti || got.claims.htm != want.claims.htm ||
				got.claims.htu != want.claims.htu || got.claims.ath != want.claims.ath || got.claims.hasAth != want.claims.hasAth ||
				!got.claims.iat.Equal(want.claims.iat)):
				t.Fatalf("read %d = %+v, the encoding/json reader read %+v", i, got, want)
			}
		}
	})
}

// nopStore is a replay store the readers never reach.
type nopStore struct{}

func (nopStore) Use(context.Context, [32]byte, time.Duration, time.Time) (bool, error) {
	return true, nil
}
