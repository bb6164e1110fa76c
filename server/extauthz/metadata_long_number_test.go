package extauthz

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/jwksverify/jwksverify/server"
	"github.com/jwksverify/jwksverify/verify"
)

// TestDynamicMetadataLongNumberAsText: a claim number longer than
// jsonscan.MaxFloatLiteral reaches Envoy as the string of its literal, as
// one beyond a double's range does, not as the number strconv.ParseFloat
// makes of it: it counts at most 800 digits, so 1000 spelled "1" + 2000
// zeros + "e-1997" reached an Envoy RBAC metadata matcher as a number near
// 0. A literal of 800 characters is still a number.
func TestDynamicMetadataLongNumberAsText(t *testing.T) {
	a := &authzGRPC{}
	for _, tt := range []struct {
		name, literal string
		str           bool
		num           float64
	}{
		{"long-1000", "1" + strings.Repeat("0", 2000) + "e-1997", true, 0},
		{"long-fraction", "0." + strings.Repeat("0", 900) + "1e901", true, 0},
		{"exactly-800", "1." + strings.Repeat("0", 798), false, 1},
		{"short", "1e3", false, 1000},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := &verify.Result{Issuer: "https://idp.example.com/", Claims: json.RawMessage(`{"risk":` + tt.literal + `}`)}
			md := decodeMetadata(t, a.dynamicMetadata(server.Decision{Result: res}))
			risk := md["claims"].GetStructValue().GetFields()["risk"]
			if tt.str {
				if risk.GetStringValue() != tt.literal {
					t.Errorf("risk reaches Envoy as %v, want the string of its %d-byte literal", risk.GetNumberValue(), len(tt.literal))
				}
				return
			}
			if risk.GetNumberValue() != tt.num {
				t.Errorf("risk %s reaches Envoy as %v, want the number %v", tt.literal, risk, tt.num)
			}
		})
	}
}
