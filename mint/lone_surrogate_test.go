package mint

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/verify"
)

// TestMintCopiesClaimsAsRead: a source claim holding a \u escape of a lone
// UTF-16 surrogate is minted as the verifier read it (U+FFFD), not copied
// as signed: Python and JavaScript would keep the surrogate and Rust's
// serde_json refuse the token, while the policies, claim headers and
// revocation decided on U+FFFD. Numbers keep their spelling.
func TestMintCopiesClaimsAsRead(t *testing.T) {
	m := newMinter(t, Options{KeysFile: keysFile(t, ecA), SigningKid: "k1", TTL: time.Minute})
	p, err := NewPolicy(PolicySpec{Audience: "a", Claims: map[string]string{"name": "name", "org": "org", "uid": "uid"}})
	if err != nil {
		t.Fatal(err)
	}
	src := `{"sub":"bob\ud800","azp":"web\udc00x","name":"Bob \ud83d\ude00","org":{"n":"\ud800","id":12345678901234567890},"uid":9007199254740993}`
	tok, err := m.Mint("t", &verify.Result{Claims: json.RawMessage(src), ExpiresAt: t0.Add(time.Hour)}, p, t0)
	if err != nil {
		t.Fatal(err)
	}
	payload, err := base64.RawURLEncoding.DecodeString(strings.Split(tok.JWT, ".")[1])
	if err != nil {
		t.Fatal(err)
	}
	body := string(payload)
	for _, lone := range []string{`\ud800`, `\udc00`} {
		if strings.Contains(strings.ToLower(body), lone) {
			t.Errorf("the minted claims hold %s: %s", lone, body)
		}
	}
	for _, want := range []string{`"sub":"bob` + "\uFFFD" + `"`, `"client_id":"web` + "\uFFFDx" + `"`,
		`"name":"Bob \ud83d\ude00"`, `"id":12345678901234567890`, `"uid":9007199254740993`} {
		if !strings.Contains(body, want) {
			t.Errorf("the minted claims lack %s: %s", want, body)
		}
	}
	parse(t, m, tok.JWT) // and it verifies
}
