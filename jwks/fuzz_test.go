package jwks

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/cache"
	"github.com/jwksverify/jwksverify/internal/testkeys"
)

// FuzzParse feeds arbitrary documents to Parse: it must never panic, never
// return a remote oct key or a weak RSA key, and account for every key it
// read. Seeds: the real IdP documents and testdata/fuzz/FuzzParse.
func FuzzParse(f *testing.F) {
	seeds, err := filepath.Glob("../testdata/idp-jwks/*.jwks.json")
	if err != nil || len(seeds) == 0 {
		f.Fatalf("no IdP seeds: %v", err)
	}
	for _, p := range seeds {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, false)
	}
	f.Add(doc(jwkWith(keyA, nil), jwkWith(keyB, nil), jwkWith(keyC, nil)), true)
	// Small documents of one key each, remote, and one per check of
	// parseKey (metadata, use, alg, key_ops, x5c, private members, the
	// OKP curve, a weak RSA key), so that the fuzzer mutates one key's
	// members rather than the large IdP documents.
	for _, k := range []json.RawMessage{jwkWith(keyB, nil), jwkWith(keyC, nil), jwkWith(keyA, nil),
		jwkWith(keyB, map[string]any{"use": "enc"}), jwkWith(keyB, map[string]any{"alg": "RSA-OAEP"}),
		jwkWith(keyB, map[string]any{"key_ops": []string{"verify"}}), jwkWith(keyB, map[string]any{"key_ops": []string{"sign", "encrypt"}}),
		jwkWith(keyB, map[string]any{"x5c": []string{"AAAA"}}), jwkWith(keyB, map[string]any{"d": "AAAA"}),
		jwkWith(keyC, map[string]any{"crv": "X25519"}), jwkWith(keyB, map[string]any{"kid": 1, "issuer": "https://i"}),
		jwkWith(testkeys.JWK{Key: testkeys.Public(testkeys.RSA1024), Kid: "weak"}, nil)} {
		f.Add(doc(k), false)
	}
	f.Fuzz(func(t *testing.T, data []byte, local bool) {
		const maxKeys = 8
		keys, skipped, err := Parse(data, ParseOptions{Local: local, MaxKeys: maxKeys})
		if err != nil {
			if keys != nil || skipped != nil {
				t.Fatalf("Parse() = %d keys, %d skipped with error %v, want nothing", len(keys), len(skipped), err)
			}
			return
		}
		if len(keys)+len(skipped) > maxKeys+1 {
			t.Fatalf("Parse() = %d keys + %d skipped, want at most %d entries", len(keys), len(skipped), maxKeys+1)
		}
		for _, k := range keys {
			switch {
			case k == nil || k.Public == nil || k.Thumbprint == "":
				t.Fatalf("Parse() returned an incomplete key %+v", k)
			case k.Kty == "oct" && !local:
				t.Fatalf("Parse() returned a remote oct key %q", k.Kid)
			case k.Kty == "RSA" && k.Size < cache.MinRSABits:
				t.Fatalf("Parse() returned a %d-bit RSA key", k.Size)
			case k.Local != local:
				t.Fatalf("Parse() key Local = %v, want %v", k.Local, local)
			}
		}
		for _, s := range skipped {
			if len(s.Reason) == 0 || len(s.Kid) > maxReported+len("…") {
				t.Fatalf("Parse() skipped entry %+v: empty reason or unbounded kid", s)
			}
		}
	})
}

// FuzzParseDiscovery feeds arbitrary discovery documents to parseDiscovery:
// it must never panic, and it may return a jwks_uri only when the document's
// issuer is exactly the configured one and the URI passes the URL rule.
// Seeds: the real Google and Entra documents.
func FuzzParseDiscovery(f *testing.F) {
	seeds, err := filepath.Glob("../testdata/idp-jwks/*.openid-configuration.json")
	if err != nil || len(seeds) == 0 {
		f.Fatalf("no discovery seeds: %v", err)
	}
	for _, p := range seeds {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, "https://accounts.google.com")
	}
	f.Add([]byte(`{"issuer":"https://idp.example.com","jwks_uri":"https://idp.example.com/keys"}`), "https://idp.example.com")
	f.Add([]byte(`{"issuer":"https://idp.example.com","jwks_uri":"http://evil.example/keys"}`), "https://idp.example.com")
	f.Fuzz(func(t *testing.T, body []byte, issuer string) {
		d, err := parseDiscovery(body, issuer, false)
		uri := d.jwksURI
		if err != nil {
			if d != (discovery{}) {
				t.Fatalf("parseDiscovery() = %+v with error %v, want nothing", d, err)
			}
			return
		}
		if ie := d.introspectionEndpoint; ie != "" {
			if _, perr := parseURL(ie, false); perr != nil {
				t.Fatalf("parseDiscovery() introspection endpoint %q, which the URL rule refuses: %v", ie, perr)
			}
		}
		// Members are matched exactly, as parseDiscovery does (a struct
		// would match "ISSUER" too).
		var doc map[string]json.RawMessage
		var got string
		if jerr := json.Unmarshal(body, &doc); jerr != nil || json.Unmarshal(doc["issuer"], &got) != nil || got != issuer {
			t.Fatalf("parseDiscovery() accepted a document whose issuer is not %q", issuer)
		}
		if _, perr := parseURL(uri, false); perr != nil {
			t.Fatalf("parseDiscovery() = %q, which the URL rule refuses: %v", uri, perr)
		}
	})
}

// FuzzCacheLifetime feeds arbitrary caching headers to cacheLifetime: it must
// never panic and always return a lifetime within [0, maxCacheAge].
func FuzzCacheLifetime(f *testing.F) {
	f.Add("max-age=300", "", "", "")
	f.Add("public, max-age=\"86400\", must-revalidate", "12", "", "")
	f.Add("no-cache", "", "", "")
	f.Add("", "", "Wed, 21 Oct 2015 07:28:00 GMT", "Wed, 21 Oct 2015 07:00:00 GMT")
	f.Add("max-age=99999999999999999999", "-5", "garbage", "")
	f.Fuzz(func(t *testing.T, cc, age, expires, date string) {
		h := http.Header{}
		for k, v := range map[string]string{"Cache-Control": cc, "Age": age, "Expires": expires, "Date": date} {
			if v != "" {
				h.Set(k, v)
			}
		}
		d, _ := cacheLifetime(h, time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
		if d < 0 || d > maxCacheAge {
			t.Fatalf("cacheLifetime(%q, age %q, expires %q, date %q) = %v, want within [0, %v]", cc, age, expires, date, d, maxCacheAge)
		}
	})
}
