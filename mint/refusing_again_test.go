package mint

import (
	"os"
	"testing"

	"github.com/jwksverify/jwksverify/internal/testkeys"
)

// TestRefusingAgainAfterATakenContent: a keys file whose content was
// refused, then replaced (by the keys signing, or by new keys taken), and
// then given that refused content again is refused again, and Stats says so
// (mint_keys_last_reload_successful, the JWKSVerifyMintKeysRefused alert):
// the watch tells the content refused last by its sum and does not parse it
// again, and that shortcut left Refusing false while the file on disk was
// refused.
func TestRefusingAgainAfterATakenContent(t *testing.T) {
	bad := []byte(`{"keys":[]}`)
	for _, tc := range []struct {
		name    string
		between []testkeys.JWK // the keys written between the two refusals
	}{
		{"back-to-the-keys-signing", []testkeys.JWK{ecA, ecB}},
		{"new-keys-taken", []testkeys.JWK{ecA}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := keysFile(t, ecA, ecB)
			m := newMinter(t, Options{KeysFile: path, SigningKid: "k1"})
			refuse := func(step string) {
				t.Helper()
				if err := os.WriteFile(path, bad, 0o600); err != nil {
					t.Fatal(err)
				}
				if changed, err := m.Reload(); changed || err == nil {
					t.Fatalf("%s: Reload() = %v, %v; want false, an error", step, changed, err)
				}
				if !m.Stats().Refusing {
					t.Errorf("%s: Stats().Refusing = false while the keys file is refused", step)
				}
			}
			refuse("first")
			writeKeys(t, path, tc.between...)
			if _, err := m.Reload(); err != nil {
				t.Fatalf("Reload() of a good content = %v", err)
			}
			if m.Stats().Refusing {
				t.Fatal("Stats().Refusing after a good content")
			}
			refuse("again")
		})
	}
}
