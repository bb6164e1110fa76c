package jwks

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/jwksverify/jwksverify/cache"
	"github.com/jwksverify/jwksverify/internal/testkeys"
)

// FuzzParseBundle feeds arbitrary documents to the SPIFFE bundle reader
// (what a trust domain's bundle endpoint serves): no panic; a refusal
// leaves nothing; an accepted bundle has at most maxKeys keys, each a
// public key of use jwt-svid (never a secret, never a weak RSA key), in
// kid order, each kid once, each the kid of an entry that encoding/json
// reads as a jwt-svid authority; and a bundle with member names that
// collide ignoring case, its own or a key's ("use" and "USE"), is
// refused: go-jose reads the last of them, another reader the first.
func FuzzParseBundle(f *testing.F) {
	svid := func(k testkeys.JWK, extra map[string]any) json.RawMessage {
		return jwkWith(k, mergeMembers(map[string]any{"use": "jwt-svid", "alg": nil}, extra))
	}
	for _, keys := range [][]json.RawMessage{
		{svid(keyB, nil), jwkWith(keyA, nil)},
		{svid(keyA, nil), svid(keyB, map[string]any{"kid": "b2"}), svid(keyC, nil)},
		{svid(keyB, map[string]any{"USE": "x509-svid"})},
		{svid(keyB, map[string]any{"use": "x509-svid", "Use": "jwt-svid"})},
		{svid(keyB, map[string]any{"KID": "other"})},
		{svid(keyB, nil), svid(keyB, nil)},
		{svid(testkeys.JWK{Key: testkeys.Public(testkeys.RSA1024), Kid: "weak"}, nil)},
		{svid(keyB, map[string]any{"kty": "oct", "k": "c2VjcmV0"})},
	} {
		b, _ := json.Marshal(map[string]any{"keys": keys, "spiffe_refresh_hint": 7, "spiffe_sequence": 3})
		f.Add(b)
	}
	f.Add([]byte(`{"keys":[],"spiffe_refresh_hint":-5}`))
	f.Add([]byte(`{"keys":[{"kty":"EC","use":"jwt-svid"}],"keys":[]}`))
	const maxKeys = 4
	f.Fuzz(func(t *testing.T, data []byte) {
		doc, err := parseBundle(data, "example.org", maxKeys, nil)
		if err != nil {
			if doc.keys != nil || doc.skipped != nil || doc.hint != 0 {
				t.Fatalf("parseBundle() = %+v with error %v, want nothing", doc, err)
			}
			return
		}
		if len(doc.keys) > maxKeys || doc.hint < 0 {
			t.Fatalf("parseBundle() = %d keys, hint %v", len(doc.keys), doc.hint)
		}
		var std struct {
			Keys []json.RawMessage `json:"keys"`
		}
		if err := json.Unmarshal(data, &std); err != nil {
			t.Fatalf("parseBundle() accepted what encoding/json refuses: %v", err)
		}
		if name, dup := collidingMember(data); dup {
			t.Fatalf("parseBundle() accepted a bundle with member %q twice", name)
		}
		authorities := map[string]bool{}
		for _, raw := range std.Keys {
			if name, dup := collidingMember(raw); dup {
				t.Fatalf("parseBundle() accepted a bundle with a key with member %q twice", name)
			}
			var k struct{ Kid, Use string }
			if json.Unmarshal(raw, &k) == nil && k.Use == UseJWTSVID {
				authorities[k.Kid] = true
			}
		}
		var kids []string
		for _, k := range doc.keys {
			switch {
			case k == nil || k.Public == nil || k.Thumbprint == "":
				t.Fatalf("parseBundle() returned an incomplete key %+v", k)
			case k.Use != UseJWTSVID || k.Local:
				t.Fatalf("parseBundle() key %q use %q local %v", k.Kid, k.Use, k.Local)
			case k.Kty == "oct" || (k.Kty == "RSA" && k.Size < cache.MinRSABits):
				t.Fatalf("parseBundle() returned a %s key of %d bits", k.Kty, k.Size)
			case !authorities[k.Kid]:
				t.Fatalf("parseBundle() key %q is no jwt-svid entry encoding/json reads", k.Kid)
			}
			kids = append(kids, k.Kid)
		}
		if !slices.IsSorted(kids) || len(slices.Compact(slices.Clone(kids))) != len(kids) {
			t.Fatalf("parseBundle() kids %q: not sorted, or one twice", kids)
		}
		for _, s := range doc.skipped {
			if len(s.Reason) == 0 || len(s.Kid) > maxReported+len("…") {
				t.Fatalf("parseBundle() skipped entry %+v: empty reason or unbounded kid", s)
			}
		}
	})
}

// mergeMembers returns a with b's members set over it.
func mergeMembers(a, b map[string]any) map[string]any {
	for k, v := range b {
		a[k] = v
	}
	return a
}
