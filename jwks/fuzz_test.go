package jwks

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/jwksverify/jwksverify/cache"
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
