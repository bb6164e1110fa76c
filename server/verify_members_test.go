package server

import (
	"encoding/json"
	"testing"
)

// TestVerifyDuplicateAndCaseFoldedMembers: /v1/verify decodes with
// encoding/json, where member names match in any case and a repeated
// member's last value wins: "TOKEN" replaced "token", and a second "token"
// the first, while a gateway or a log may read the first. Such a body is
// now 400, as /v1/verify/batch refuses a repeated "tokens"; so is a body
// that is not UTF-8, whose bytes encoding/json reads as U+FFFD.
func TestVerifyDuplicateAndCaseFoldedMembers(t *testing.T) {
	e := newEnv(t, envConfig{maxTokenSize: 4096})
	toks := tokens()
	for _, body := range []string{
		`{"token":"not.a.jwt","TOKEN":` + jsonString(toks["valid"]) + `}`,
		`{"token":"not.a.jwt","token":` + jsonString(toks["valid"]) + `}`,
		`{"token":` + jsonString(toks["valid"]) + `,"policy":"x","POLICY":null}`,
		`{"token":` + jsonString(toks["valid"]) + `,"request":{"path":"/admin","PATH":"/public"}}`,
		`{"token":` + jsonString(toks["valid"]) + `,"request":{"path":"/a","path":"/b"}}`,
		// Not UTF-8: encoding/json decides on "/adm\uFFFDn".
		`{"token":` + jsonString(toks["valid"]) + `,"request":{"path":"/adm` + "\x97" + `n"}}`,
	} {
		w := do(e.handler, postJSON("/v1/verify", body))
		var got struct {
			Valid bool   `json:"valid"`
			Error string `json:"error"`
		}
		_ = json.Unmarshal(w.Body.Bytes(), &got)
		if w.Code != 400 {
			t.Errorf("body %.40s…: status %d valid=%v error=%q; another reader of the body reads other members or values than the ones decided", body, w.Code, got.Valid, got.Error)
		}
	}
}

// TestVerifyOtherMembersIgnored: a member /v1/verify does not read, in any
// case, is still ignored.
func TestVerifyOtherMembersIgnored(t *testing.T) {
	e := newEnv(t, envConfig{maxTokenSize: 4096})
	body := `{"token":` + jsonString(tokens()["valid"]) + `,"note":"x","NOTE":"y","request":{"method":"GET","extra":1}}`
	if w := do(e.handler, postJSON("/v1/verify", body)); w.Code != 200 {
		t.Errorf("status %d, want 200: %s", w.Code, w.Body)
	}
}
