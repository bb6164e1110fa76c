package verify_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/jwksverify/jwksverify/verify"
)

// TestNamesEqualIgnoringCaseAreMalformed: a claims set (or header, or an
// object nested in the claims) with two member names that differ only in
// case is malformed, as one with a name twice is. encoding/json — and with
// it golang-jwt's custom claims and RegisteredClaims — matches an object's
// names to a struct's fields ignoring case (Unicode simple folding: "ſub"
// is "sub"), the last match winning: with {"groups":["users"],
// "Groups":["admins"]} a policy reading groups allowed what the Go
// application behind the proxy, reading the forwarded token, took for an
// admin. Names that only look alike ("sub", "subject") still pass, and so
// does a name in upper case alone.
func TestNamesEqualIgnoringCaseAreMalformed(t *testing.T) {
	v := newVerifier(t, verify.Options{Issuers: []verify.Issuer{issuerA(allKeys(t))}})
	const header = `{"alg":"ES256","kid":"k-ES256"}`
	base := fmt.Sprintf(`"iss":%q,"aud":%q,"exp":%d`, issA, aud, t0.Unix()+3600)
	tests := []struct {
		name, header, claims string
		malformed            bool
	}{
		{"groups-Groups", header, `{` + base + `,"groups":["users"],"Groups":["admins"]}`, true},
		{"sub-SUB", header, `{` + base + `,"sub":"alice","SUB":"bob"}`, true},
		{"sub-long-s", header, `{` + base + `,"ſub":"bob","sub":"alice"}`, true},
		{"kelvin", header, `{` + base + `,"kid_role":"user","\u212aid_role":"admin"}`, true},
		{"nested-roles", header, `{` + base + `,"realm_access":{"roles":["user"],"Roles":["admin"]}}`, true},
		{"header-kid-Kid", `{"alg":"ES256","kid":"k-ES256","Kid":"other"}`, `{` + base + `}`, true},
		{"distinct-names", header, `{` + base + `,"sub":"alice","subject":"bob","Groups":["admins"]}`, false},
		{"upper-case-alone", header, `{` + base + `,"Groups":["admins"],"realm_access":{"Roles":["admin"]}}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !json.Valid([]byte(tt.claims)) {
				t.Fatalf("test claims are not JSON: %s", tt.claims)
			}
			_, err := v.Verify(context.Background(), signRaw(t, "ES256", tt.header, tt.claims))
			switch {
			case tt.malformed && !errors.Is(err, verify.ErrMalformed):
				t.Errorf("Verify() = %v, want malformed: names equal ignoring case read differently by encoding/json", err)
			case !tt.malformed && err != nil:
				t.Errorf("Verify() = %v, want valid", err)
			}
		})
	}
}
