package mint

import (
	"errors"
	"strings"
	"testing"
)

// TestPolicyRefusesClaimNamesEqualIgnoringCase: a mapped claim whose name
// equals a reserved claim's, or another mapped claim's, ignoring case is
// refused. encoding/json (and every Go upstream that decodes claims into a
// struct, golang-jwt's RegisteredClaims among them) matches names ignoring
// case, the last one winning: {"sub":"alice",…,"Sub":"<the source's
// email>"} is subject alice to jwksverify and subject <email> to such an
// upstream, and jwksverify's own verifier refuses the minted token as a
// duplicate (a mesh's next hop).
func TestPolicyRefusesClaimNamesEqualIgnoringCase(t *testing.T) {
	for _, tc := range []struct {
		name   string
		claims map[string]string
	}{
		{"Sub", map[string]string{"Sub": "email"}},
		{"ISS", map[string]string{"ISS": "iss"}},
		{"Aud", map[string]string{"Aud": "groups"}},
		{"EXP", map[string]string{"EXP": "exp"}},
		{"Client_ID", map[string]string{"Client_ID": "azp"}},
		{"long-s-sub", map[string]string{"\u017fub": "email"}}, // ſ folds to s, as encoding/json folds
		{"Jti", map[string]string{"Jti": "jti"}},
		{"two-mapped", map[string]string{"tenant": "tid", "Tenant": "org"}},
		{"not-utf8", map[string]string{"a\xff": "x", "a\xfe": "y"}}, // both would be "a\ufffd"
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewPolicy(PolicySpec{Audience: "a", Claims: tc.claims})
			var oe *OptionError
			if !errors.As(err, &oe) || !strings.HasPrefix(oe.Field, "Claims[") || !errors.Is(err, ErrInvalidOptions) {
				t.Errorf("NewPolicy(%v) = %v, want an OptionError of Claims[…]", tc.claims, err)
			}
		})
	}
}
