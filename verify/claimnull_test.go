package verify_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/verify"
)

// TestExtractedNullIsNoValue: a claim whose value is JSON null names no
// value, and its header says so as an absent claim's does (empty). It was
// sent as the four letters "null", the header of a token whose claim is
// the string "null": an application reading X-Auth-Org for every user the
// IdP writes "org": null for read the organization a user had named
// "null", and could not tell "no value" from that value. The string
// "null" is still sent as it is.
func TestExtractedNullIsNoValue(t *testing.T) {
	v := newVerifier(t, verify.Options{Issuers: []verify.Issuer{{Issuer: issA, Keys: allKeys(t), ExtractClaims: []string{"org"}}}})
	for _, tc := range []struct {
		name, org string // the claim's JSON text; "" absent
		want      string
		present   bool
	}{
		{"null", `null`, "", true},
		{"null-spaced", ` null `, "", true},
		{"string-null", `"null"`, "null", true},
		{"absent", ``, "", false},
		{"array-holding-null", `["a",null]`, `["a",null]`, true},
		{"object-holding-null", `{"id":null}`, `{"id":null}`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			payload := `{"iss":"` + issA + `","exp":` + fmt.Sprint(t0.Add(time.Hour).Unix()) + `,"sub":"bob"`
			if tc.org != "" {
				payload += `,"org":` + tc.org
			}
			res, err := v.Verify(context.Background(), signRaw(t, "EdDSA", `{"alg":"EdDSA","kid":"k-EdDSA"}`, payload+`}`))
			if err != nil {
				t.Fatalf("Verify() = %v, want nil", err)
			}
			got, ok := res.Extracted["org"]
			if got != tc.want || ok != tc.present {
				t.Errorf("Extracted[org] of %s = %q, %v; want %q, %v", tc.org, got, ok, tc.want, tc.present)
			}
		})
	}
}
