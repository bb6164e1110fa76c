package mint

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/jwksverify/jwksverify/internal/testkeys"
)

// TestReloadWarnsOfAKidNamingAnotherKey: a keys file whose kid now names
// another key (other key material, or the same key under another alg) is
// taken — the key the operator removed, perhaps a leaked one, must stop
// signing — and says, once per such kid, that consumers holding the
// published set refuse the new key's tokens until they fetch it again (a
// known kid triggers no refresh). Adding, keeping or removing keys says
// nothing.
func TestReloadWarnsOfAKidNamingAnotherKey(t *testing.T) {
	const warning = "a kid now names another key"
	for _, tc := range []struct {
		name  string
		start []testkeys.JWK // ecA, ecB when nil
		next  []testkeys.JWK
		want  []string // kids warned of
	}{
		{"new-key-new-kid", nil, []testkeys.JWK{ecA, ecB, {Key: testkeys.Private(testkeys.Ed25519A), Kid: "k3"}}, nil},
		{"key-removed", nil, []testkeys.JWK{ecA}, nil},
		{"same-keys-reordered", nil, []testkeys.JWK{ecB, ecA}, nil},
		{"other-key-same-kid", nil, []testkeys.JWK{ecA, {Key: testkeys.Private(testkeys.Ed25519B), Kid: "k2"}}, []string{"k2"}},
		{"same-key-other-alg", []testkeys.JWK{ecA, rsaA}, []testkeys.JWK{ecA, {Key: rsaA.Key, Kid: rsaA.Kid, Alg: "RS256"}}, []string{"rsa"}},
		{"signing-kid-rekeyed", nil, []testkeys.JWK{{Key: testkeys.Private(testkeys.EC256B), Kid: "k1"}}, []string{"k1"}},
		{"keys-swapped", nil, []testkeys.JWK{{Key: testkeys.Private(testkeys.EC256B), Kid: "k1"}, {Key: testkeys.Private(testkeys.EC256A), Kid: "k2"}}, []string{"k1", "k2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := tc.start
			if start == nil {
				start = []testkeys.JWK{ecA, ecB}
			}
			path := keysFile(t, start...)
			var logs bytes.Buffer
			m, err := New(Options{KeysFile: path, SigningKid: "k1", Issuer: "https://jwksverify.internal",
				Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = m.Close() })
			writeKeys(t, path, tc.next...)
			if changed, err := m.Reload(); !changed || err != nil {
				t.Fatalf("Reload() = %v, %v; want true, nil (taken)", changed, err)
			}
			var got []string
			for line := range strings.Lines(logs.String()) {
				if !strings.Contains(line, warning) {
					continue
				}
				if !strings.Contains(line, "level=WARN") {
					t.Errorf("not a warning: %s", line)
				}
				_, kid, _ := strings.Cut(line, " kid=")
				got = append(got, strings.TrimSpace(kid))
			}
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("warned of kids %q, want %q\n%s", got, tc.want, logs.String())
			}
		})
	}
}
