package server

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/MicahParks/keyfunc/v3"
	"github.com/golang-jwt/jwt/v5"
	"github.com/jwksverify/jwksverify/internal/jsonscan"
	"github.com/jwksverify/jwksverify/introspect"
)

// TestIntrospectAnswerNamesOnceIgnoringCase: a token whose claims name
// "active" or "token_type" in another case (Active, TOKEN_TYPE) made an
// answer holding both spellings, {"Active":false,"active":true,...}:
// names equal ignoring case, which encoding/json reads as one member (the
// last winning) and the project's own reader of introspection answers
// (introspect.Decode, jsonscan.Names) refuses as duplicates. A jwksverify
// chained behind this one answered keys_unavailable for a valid token, and
// a reader keeping the first of the two saw active false or the token's own
// token_type. The answer's own members are spelled once, the JSON and the
// RFC 9701 answer alike.
func TestIntrospectAnswerNamesOnceIgnoringCase(t *testing.T) {
	e, m := newMintEnv(t, nil, func(o *Options) {
		o.IntrospectionClients = []IntrospectionClient{{ID: "gateway", Secret: "gateway-secret-value"}}
	})
	kf, err := keyfunc.NewJWKSetJSON(m.JWKS())
	if err != nil {
		t.Fatal(err)
	}
	for name, over := range map[string]map[string]any{
		"Active":                  {"Active": false},
		"ACTIVE":                  {"ACTIVE": "no"},
		"Token_Type":              {"Token_Type": "DPoP"},
		"token_type-and-ACTIVE":   {"token_type": "DPoP", "ACTIVE": false},
		"TOKEN_TYPE":              {"TOKEN_TYPE": "x"},
		"exact-active-overridden": {"active": false},
	} {
		t.Run(name, func(t *testing.T) {
			tok := mint(claims(over))
			for _, jwtAnswer := range []bool{false, true} {
				body, _, compact := introspectAnswer(t, e.handler, tok, jwtAnswer)
				if jwtAnswer {
					var c jwt.MapClaims
					if _, err := jwt.ParseWithClaims(compact, &c, kf.Keyfunc, jwt.WithoutClaimsValidation()); err != nil {
						t.Fatalf("the RFC 9701 answer does not verify: %v", err)
					}
				}
				if dup := duplicateNameIgnoringCase(t, body); dup != "" {
					t.Errorf("jwt=%v: the answer names %q twice ignoring case: %s", jwtAnswer, dup, body)
				}
				a, err := introspect.Decode(body)
				if err != nil || !a.Active {
					t.Errorf("jwt=%v: introspect.Decode(answer) = %+v, %v; want an active answer: %s", jwtAnswer, a, err, body)
				}
				var got map[string]any
				if err := json.Unmarshal(body, &got); err != nil {
					t.Fatal(err)
				}
				if got["active"] != true || got["sub"] != "alice" {
					t.Errorf("jwt=%v: answer %s, want active true and sub alice", jwtAnswer, body)
				}
			}
		})
	}
}

// duplicateNameIgnoringCase returns the first top-level member name of the
// JSON object b that an earlier one equals ignoring case, "" when none.
func duplicateNameIgnoringCase(t *testing.T, b []byte) string {
	t.Helper()
	it, err := jsonscan.NewMembers(string(b))
	if err != nil {
		t.Fatalf("not a JSON object: %v: %s", err, b)
	}
	var names jsonscan.Names
	for {
		mb, ok, err := it.Next()
		if err != nil {
			t.Fatalf("%v: %s", err, b)
		}
		if !ok {
			return ""
		}
		if !names.Add(mb.Name) {
			return mb.Name
		}
	}
}

// introspectAnswer posts tok to h's /introspect as the client "gateway"
// and returns the JSON answer as sent: the body, or with jwtAnswer (Accept:
// RFC 9701) the signed payload's token_introspection member (a map would
// keep one of two names), with the payload and the compact JWT.
func introspectAnswer(t *testing.T, h http.Handler, tok string, jwtAnswer bool) (answer, payload []byte, compact string) {
	t.Helper()
	r := httptest.NewRequest(http.MethodPost, "/introspect", strings.NewReader("token="+tok))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	r.SetBasicAuth("gateway", "gateway-secret-value")
	if jwtAnswer {
		r.Header.Set("Accept", introspectionJWT)
	}
	w := do(h, r)
	if w.Code != http.StatusOK {
		t.Fatalf("status = %d: %s", w.Code, w.Body)
	}
	if !jwtAnswer {
		return w.Body.Bytes(), nil, ""
	}
	compact = w.Body.String()
	parts := strings.Split(compact, ".")
	if len(parts) != 3 {
		t.Fatalf("the RFC 9701 answer is no compact JWS: %s", compact)
	}
	payload, err := jwt.NewParser().DecodeSegment(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(payload, &raw); err != nil {
		t.Fatal(err)
	}
	return raw["token_introspection"], payload, compact
}
