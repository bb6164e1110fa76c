package extauthz

import (
	"encoding/json"
	"testing"

	"github.com/jwksverify/jwksverify/server"
	"github.com/jwksverify/jwksverify/verify"
)

// TestDynamicMetadataIntegerSpelledWithFraction: an integer beyond 2^53
// reaches Envoy as the string of its literal whatever its spelling, so
// that it never becomes its neighbour's id: 9007199254740993.0 (a
// BigDecimal's scale, Python's Decimal) and 9.007199254740993e15 are
// 9007199254740993, which a double holds as 9007199254740992 — an Envoy
// RBAC metadata matcher on that id matched the other user's token.
// jwksverify's own matchers compare by JSON value, exactly. Numbers a
// double holds exactly keep being numbers.
func TestDynamicMetadataIntegerSpelledWithFraction(t *testing.T) {
	a := &authzGRPC{}
	for _, tt := range []struct {
		literal string
		str     bool // reaches Envoy as the string of the literal
		num     float64
	}{
		{"9007199254740993.0", true, 0},
		{"9.007199254740993e15", true, 0},
		{"9007199254740993e0", true, 0},
		{"-9.007199254740993E+15", true, 0},
		{"1152921504606846977.000", true, 0},
		{"9007199254740992.0", false, 9007199254740992}, // held exactly
		{"9.007199254740992e15", false, 9007199254740992},
		{"2e3", false, 2000},
		{"1.5", false, 1.5},
		{"0.1", false, 0.1}, // not an integer: a double, as before
	} {
		t.Run(tt.literal, func(t *testing.T) {
			res := &verify.Result{Issuer: "https://idp.example.com/", Claims: json.RawMessage(`{"uid":` + tt.literal + `}`)}
			md := decodeMetadata(t, a.dynamicMetadata(server.Decision{Result: res}))
			uid := md["claims"].GetStructValue().GetFields()["uid"]
			if tt.str {
				if uid.GetStringValue() != tt.literal {
					t.Errorf("uid %s reaches Envoy as %v, want the string %q (a double would be %v)", tt.literal, uid, tt.literal, uid.GetNumberValue())
				}
				return
			}
			if uid.GetNumberValue() != tt.num {
				t.Errorf("uid %s reaches Envoy as %v, want the number %v", tt.literal, uid, tt.num)
			}
		})
	}
}
