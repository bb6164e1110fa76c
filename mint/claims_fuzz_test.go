package mint

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/cache"
	"github.com/jwksverify/jwksverify/internal/jsonscan"
	"github.com/jwksverify/jwksverify/internal/testkeys"
	"github.com/jwksverify/jwksverify/verify"
)

// FuzzMintClaims mints from source tokens whose claims the verifier
// accepted (a fixed iss, aud and exp, then the fuzzed rest): the minted
// claims set is strict JSON (every name once, no lone surrogate escape);
// each claim it copies (sub, client_id from client_id or azp, each policy
// mapping) reads, to encoding/json, as the source claim reads (numbers as
// written); a claim absent in the source is not copied, nor is a null
// sub, client_id or azp (as revocation reads them), while a mapping's null
// is copied as null (the source's value, as CONFIG says: "any JSON value,
// as is"); and its aud is the policy's, its exp never after the source's.
func FuzzMintClaims(f *testing.F) {
	for _, s := range []string{
		`,"sub":"alice","tid":"t-1","scope":"read write","roles":["a",{"b":1}]}`,
		`,"sub":"bob\ud800","azp":"web\udc00x","roles":{"n":"\ud800","id":12345678901234567890},"tid":9007199254740993}`,
		`,"sub":null,"client_id":null,"azp":"web","tid":1e400,"scope":"\u2028<&>"}`,
		`,"sub":{"a":[1.50,-0]},"client_id":"c","tid":"\ud83d\ude00"}`,
		`,"sub":7,"scope":[],"roles":"\u0000"}`,
		`,"sub":"alice","tid":null,"roles":null}`,
	} {
		f.Add(s)
	}
	path := filepath.Join(f.TempDir(), "mint.jwks")
	if err := os.WriteFile(path, testkeys.PrivateJWKS(testkeys.JWK{Key: testkeys.Private(testkeys.EC256A), Kid: "k1"}), 0o600); err != nil {
		f.Fatal(err)
	}
	m, err := New(Options{KeysFile: path, SigningKid: "k1", TTL: time.Hour, Issuer: "https://jwksverify.internal", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = m.Close() })
	mappings := map[string]string{"sub": "sub", "tenant": "tid", "scope": "scope", "groups": "roles"}
	p, err := NewPolicy(PolicySpec{Audience: "orders", Claims: mappings})
	if err != nil {
		f.Fatal(err)
	}
	key, err := cache.NewKey(testkeys.Secret(), cache.KeyMeta{Kid: "hs", Local: true})
	if err != nil {
		f.Fatal(err)
	}
	var keys cache.Keys
	keys.Store(cache.NewSet([]*cache.Key{key}, nil, t0, time.Time{}))
	const iss = "https://idp.example.com/"
	v, err := verify.New(verify.Options{Now: func() time.Time { return t0 },
		Issuers: []verify.Issuer{{Issuer: iss, Keys: &keys, Audiences: []string{"api"}, AllowHMAC: true}}})
	if err != nil {
		f.Fatal(err)
	}
	srcExp := t0.Add(30 * time.Minute).Unix()
	enc := base64.RawURLEncoding
	f.Fuzz(func(t *testing.T, tail string) {
		in := enc.EncodeToString([]byte(`{"alg":"HS256","kid":"hs"}`)) + "." +
			enc.EncodeToString([]byte(`{"iss":"`+iss+`","aud":"api","exp":`+strconv.FormatInt(srcExp, 10)+tail))
		mac := hmac.New(sha256.New, testkeys.Secret())
		mac.Write([]byte(in))
		src, err := v.Verify(context.Background(), in+"."+enc.EncodeToString(mac.Sum(nil)))
		if err != nil {
			return
		}
		tok, err := m.Mint("source", src, p, t0)
		if err != nil {
			t.Fatalf("Mint() = %v", err)
		}
		payload, err := enc.DecodeString(strings.Split(tok.JWT, ".")[1])
		if err != nil {
			t.Fatal(err)
		}
		var names jsonscan.Names
		it, err := jsonscan.NewMembers(string(payload))
		for err == nil {
			mb, ok, nerr := it.Next()
			if err = nerr; !ok || err != nil {
				break
			}
			if !names.Add(mb.Name) {
				t.Fatalf("minted claims %s hold %q twice", payload, mb.Name)
			}
		}
		if err != nil || jsonscan.LoneSurrogate(string(payload)) {
			t.Fatalf("minted claims %s are not strict JSON (%v)", payload, err)
		}
		read := func(b []byte) map[string]any {
			d := json.NewDecoder(strings.NewReader(string(b)))
			d.UseNumber()
			var out map[string]any
			if err := d.Decode(&out); err != nil {
				t.Fatalf("encoding/json refuses %s: %v", b, err)
			}
			return out
		}
		got, want := read(payload), read(src.Claims)
		if exp, err := got["exp"].(json.Number).Int64(); got["aud"] != "orders" || err != nil || exp > src.ExpiresAt.Unix() {
			t.Fatalf("minted aud %v exp %v (source exp %v)", got["aud"], got["exp"], want["exp"])
		}
		cid := want["client_id"]
		if cid == nil {
			cid = want["azp"]
		}
		copies := map[string]any{"client_id": cid}
		nulls := map[string]bool{} // mapped claims null in the source: copied as null
		for to, from := range mappings {
			w, present := want[from]
			copies[to] = w
			nulls[to] = present && w == nil && to != "sub"
		}
		for to, w := range copies {
			g, ok := got[to]
			if nulls[to] {
				if !ok || g != nil {
					t.Fatalf("minted %s = %v, %v; the source's is null (claims %s)", to, g, ok, src.Claims)
				}
				continue
			}
			if w == nil {
				if ok {
					t.Fatalf("minted %s = %v; the source has none (claims %s)", to, g, src.Claims)
				}
				continue
			}
			if !reflect.DeepEqual(g, w) {
				t.Fatalf("minted %s = %#v; the source's reads %#v (claims %s, minted %s)", to, g, w, src.Claims, payload)
			}
		}
	})
}
