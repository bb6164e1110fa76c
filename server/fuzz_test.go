package server

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// checkFuzzResponse asserts what holds for any request body: no 5xx other
// than a 503 keys_unavailable, and a JSON answer.
func checkFuzzResponse(t *testing.T, w *httptest.ResponseRecorder) {
	t.Helper()
	if w.Code >= 500 && !(w.Code == http.StatusServiceUnavailable && strings.Contains(w.Body.String(), `"keys_unavailable"`)) {
		t.Fatalf("status = %d, body %s", w.Code, w.Body)
	}
	if ct := w.Header().Get("Content-Type"); ct != "application/json; charset=utf-8" {
		t.Fatalf("Content-Type = %q", ct)
	}
}

func FuzzVerifyBody(f *testing.F) {
	toks := tokens()
	for _, n := range []string{"valid", "expired", "keys-unavailable", "unknown-issuer"} {
		f.Add([]byte(`{"token":` + jsonString(toks[n]) + `}`))
	}
	f.Add([]byte(`{"token":42}`))
	f.Add([]byte(`{"tokens":["a"]}`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`{"token":"\u0000.\u00ff.e30"}`))
	// The members past "token" (a request override, a policy, a proof, a
	// certificate, an ID token's), a member twice or in another case, and
	// a batch of two, so that the fuzzer starts at their branches.
	v := jsonString(toks["valid"])
	for _, s := range []string{`{"token":` + v + `,"request":{"method":"GET","scheme":"https","host":"api.example.com","path":"/orders/1"}}`,
		`{"token":` + v + `,"request":{"path":"/a/../b","PATH":"/b"}}`, `{"token":` + v + `,"policy":"x"}`, `{"token":` + v + `,"TOKEN":"x"}`,
		`{"token":` + v + `,"dpop":"e30.e30.x","request":{"method":"POST"}}`, `{"token":` + v + `,"client_cert":"x"}`,
		`{"token":` + v + `,"kind":"id_token","nonce":"n","max_age":60,"acr_values":"a"}`, `{"token":` + v + `,"token":"x"}`,
		`{"tokens":[` + v + `,` + jsonString(toks["expired"]) + `]}`, `{"tokens":[` + v + `],"policy":"x"}`} {
		f.Add([]byte(s))
	}
	e := newEnv(f, envConfig{})
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, path := range []string{"/v1/verify", "/v1/verify/batch"} {
			w := do(e.handler, httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body)))
			checkFuzzResponse(t, w)
		}
	})
}

func FuzzIntrospectBody(f *testing.F) {
	toks := tokens()
	for _, n := range []string{"valid", "expired", "keys-unavailable"} {
		f.Add([]byte("token=" + toks[n]))
	}
	f.Add([]byte("token=a&token=b"))
	f.Add([]byte("token=%zz"))
	f.Add([]byte("token_type_hint=x"))
	e := newEnv(f, envConfig{})
	f.Fuzz(func(t *testing.T, body []byte) {
		w := do(e.handler, introspectRequest(string(body), "gateway", "gateway-secret-value"))
		checkFuzzResponse(t, w)
		if w.Code == http.StatusOK && !bytes.HasPrefix(w.Body.Bytes(), []byte(`{"active":`)) {
			t.Fatalf("200 body %s is no introspection answer", w.Body)
		}
	})
}
