package server

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/jwksverify/jwksverify/internal/jsonscan"
)

// TestIntrospectAnswerSaysWhatItDecidedOn: a token whose claims hold a \u
// escape of a lone UTF-16 surrogate ("nick":"bob\ud800") is verified,
// revoked and decided on as encoding/json reads it, "bob\uFFFD". The
// /introspect answer passed the escape on, and the RFC 9701 answer, a JWT
// jwksverify signs, vouched for it: Python's and JavaScript's JSON read a
// value jwksverify never decided on, and Rust's serde_json refused the
// whole answer of a valid token. As a minted token does (mint asRead), the
// answer now says what was decided: each lone surrogate is U+FFFD, numbers
// as written, in the JSON answer and in the JWT's token_introspection.
func TestIntrospectAnswerSaysWhatItDecidedOn(t *testing.T) {
	e, _ := newMintEnv(t, nil, func(o *Options) {
		o.IntrospectionClients = []IntrospectionClient{{ID: "gateway", Secret: "gateway-secret-value"}}
	})
	for name, over := range map[string]map[string]any{
		"top-level":   {"nick": json.RawMessage(`"bob\ud800"`)},
		"nested":      {"profile": json.RawMessage(`{"nick":["x","\udfffy"],"n":1.50}`)},
		"sub-escaped": {"sub": json.RawMessage(`"alice\udbff"`)},
	} {
		for _, jwtAnswer := range []bool{false, true} {
			t.Run(name+map[bool]string{false: "-json", true: "-jwt"}[jwtAnswer], func(t *testing.T) {
				body, payload, _ := introspectAnswer(t, e.handler, mint(claims(over)), jwtAnswer)
				if jsonscan.LoneSurrogate(string(payload)) {
					t.Errorf("the signed answer vouches for a lone surrogate escape: %s", payload)
				}
				if jsonscan.LoneSurrogate(string(body)) {
					t.Errorf("the answer holds a lone surrogate escape: %s", body)
				}
				var got map[string]any
				d := json.NewDecoder(bytes.NewReader(body))
				d.UseNumber()
				if err := d.Decode(&got); err != nil || got["active"] != true {
					t.Fatalf("answer %s (%v), want active", body, err)
				}
				if !strings.Contains(string(body), `"big":123456789012345678901234567890`) {
					t.Errorf("answer %s: a number not as written", body)
				}
			})
		}
	}
}
