package mint

import (
	"encoding/base64"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/verify"
)

// TestSourceClaimsCannotRewriteTheMintedToken (red team, minted tokens):
// a source token's own iss, aud, exp, nbf, iat, jti, typ, cnf, act, scope
// and nested objects never reach the minted token unless a mapping copies
// them, and then only under the mapped name; the minted token's registered
// claims are always the minter's. A source already past its exp (within the
// verifier's leeway) mints a token that expires no later, handed out once.
func TestSourceClaimsCannotRewriteTheMintedToken(t *testing.T) {
	m := newMinter(t, Options{KeysFile: keysFile(t, ecA), SigningKid: "k1", TTL: 5 * time.Minute})
	p, err := NewPolicy(PolicySpec{Audience: "orders-service", Claims: map[string]string{"tenant": "tid", "actor": "act"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		claims  string
		exp     time.Time
		want    map[string]string // claim -> its JSON in the minted token
		wantExp int64
		reused  bool
	}{
		{name: "registered-claims-of-the-source",
			claims: `{"iss":"https://idp","sub":"alice","aud":["orders-service","admin"],"exp":4102444800,"nbf":0,"iat":1,"jti":"j","typ":"id+jwt","cnf":{"jkt":"x"},"scope":"admin","nonce":"n"}`,
			exp:    t0.Add(time.Hour), wantExp: t0.Add(5 * time.Minute).Unix(), reused: true,
			want: map[string]string{"sub": `"alice"`}},
		{name: "mapped-nested-objects-stay-under-their-name",
			claims: `{"sub":"alice","tid":{"iss":"https://evil","aud":"admin","exp":4102444800},"act":{"sub":"admin","act":{"sub":"root"}}}`,
			exp:    t0.Add(time.Hour), wantExp: t0.Add(5 * time.Minute).Unix(), reused: true,
			want: map[string]string{"sub": `"alice"`, "tenant": `{"iss":"https://evil","aud":"admin","exp":4102444800}`, "actor": `{"sub":"admin","act":{"sub":"root"}}`}},
		{name: "source-expired-within-leeway",
			claims: `{"sub":"alice"}`,
			exp:    t0.Add(-20 * time.Second), wantExp: t0.Add(-20 * time.Second).Unix(), reused: false,
			want: map[string]string{"sub": `"alice"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := &verify.Result{Claims: json.RawMessage(tc.claims), ExpiresAt: tc.exp}
			tok, err := m.Mint(tc.name, src, p, t0)
			if err != nil {
				t.Fatal(err)
			}
			payload, err := base64.RawURLEncoding.DecodeString(strings.Split(tok.JWT, ".")[1])
			if err != nil {
				t.Fatal(err)
			}
			var got map[string]json.RawMessage
			if err := json.Unmarshal(payload, &got); err != nil {
				t.Fatal(err)
			}
			fixed := map[string]string{"iss": `"https://jwksverify.internal"`, "aud": `"orders-service"`, "iat": "1796450400"}
			for k, v := range fixed {
				if string(got[k]) != v {
					t.Errorf("%s = %s, want %s", k, got[k], v)
				}
			}
			var exp int64
			if err := json.Unmarshal(got["exp"], &exp); err != nil || exp != tc.wantExp || !tok.ExpiresAt.Equal(time.Unix(tc.wantExp, 0)) {
				t.Errorf("exp = %s (ExpiresAt %s), want %d", got["exp"], tok.ExpiresAt, tc.wantExp)
			}
			var jti string
			if err := json.Unmarshal(got["jti"], &jti); err != nil || jti == "j" || len(jti) < 20 {
				t.Errorf("jti = %s, want a fresh random one", got["jti"])
			}
			names := slices.Sorted(maps.Keys(got))
			wantNames := slices.Sorted(func(yield func(string) bool) {
				for _, k := range []string{"iss", "aud", "iat", "exp", "jti"} {
					yield(k)
				}
				for k := range tc.want {
					yield(k)
				}
			})
			if !slices.Equal(names, wantNames) {
				t.Errorf("claims %v, want %v", names, wantNames)
			}
			for k, v := range tc.want {
				if string(got[k]) != v {
					t.Errorf("%s = %s, want %s", k, got[k], v)
				}
			}
			again, err := m.Mint(tc.name, src, p, t0.Add(time.Second))
			if err != nil {
				t.Fatal(err)
			}
			if (again.JWT == tok.JWT) != tc.reused {
				t.Errorf("handed out again = %v, want %v", again.JWT == tok.JWT, tc.reused)
			}
		})
	}
}
