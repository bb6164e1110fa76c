package server

import (
	"net/http"
	"strings"
	"testing"
)

// TestJSONBodyLoneSurrogate: a JSON body holding a \u escape of a lone
// UTF-16 surrogate is 400, as a body that is not UTF-8 is. encoding/json
// decodes "\ud800" (and "\udfff", "\ud800\u0041") to U+FFFD, the character
// "\ufffd" is: {"sub":"bob\ud800"} revoked the subject "bob\uFFFD" and
// answered 201 with that value, another string than the one sent to
// Python's and JavaScript's JSON (which keep the surrogate), and a
// request.path was decided with a character no gateway sent.
func TestJSONBodyLoneSurrogate(t *testing.T) {
	for _, sub := range []string{`bob\ud800`, `bob\udfff`, `bob\ud800\u0041`, `\uDBFF`} {
		e := newEnv(t, envConfig{revocations: true})
		w := do(e.srv.AdminHandler(), adminRequest(http.MethodPost, revocationsPath, `{"issuer":"`+issuerA+`","sub":"`+sub+`"}`))
		if w.Code != http.StatusBadRequest {
			t.Errorf("POST {\"sub\":%q} = %d %s, want 400", sub, w.Code, strings.TrimSpace(w.Body.String()))
		}
	}
	// A surrogate pair is one character: kept.
	e := newEnv(t, envConfig{revocations: true})
	if w := do(e.srv.AdminHandler(), adminRequest(http.MethodPost, revocationsPath, `{"issuer":"`+issuerA+`","sub":"bob\ud83d\ude00"}`)); w.Code != http.StatusCreated || !strings.Contains(w.Body.String(), "bob\U0001F600") {
		t.Errorf("control: POST {\"sub\":\"bob\\ud83d\\ude00\"} = %d %s, want 201 with the character", w.Code, strings.TrimSpace(w.Body.String()))
	}

	ev := newEnv(t, envConfig{maxTokenSize: 4096})
	toks := tokens()
	for _, path := range []string{`/adm\ud800n`, `/a\\ud800`} {
		w := do(ev.handler, postJSON("/v1/verify", `{"token":`+jsonString(toks["valid"])+`,"request":{"path":"`+path+`"}}`))
		want := http.StatusBadRequest
		if path == `/a\\ud800` {
			want = http.StatusOK // an escaped backslash, then text: no escape of a surrogate
		}
		if w.Code != want {
			t.Errorf("/v1/verify request.path %s = %d %s, want %d", path, w.Code, strings.TrimSpace(w.Body.String()), want)
		}
	}
}
