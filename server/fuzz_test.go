package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/jwksverify/jwksverify/internal/jsonscan"
	"github.com/jwksverify/jwksverify/verify"
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

// FuzzVerifyBody posts fuzzed bodies to /v1/verify and /v1/verify/batch.
// Beyond checkFuzzResponse, /v1/verify is held to two independent readings
// (checkVerifyBody): a body it accepts is one whose "token" every JSON
// reader reads alike (encoding/json into a struct, and the one top-level
// member an exact-name reader takes), and a body that names nothing but
// the token gets the verdict of a direct call of the verifier on it.
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
	// Spellings another reader takes apart: a name escaped, in another
	// case or folded (ſ, the Kelvin sign), bytes that are not UTF-8, an
	// empty token, unknown members beside it.
	for _, s := range []string{`{"\u0074oken":` + v + `}`, `{"Token":` + v + `}`, `{"toKen":` + v + `}`, `{"\u212aind":"id_token","token":` + v + `}`,
		`{"token":` + v + `,"ſ":1}`, `{"token":"` + "\xff" + `"}`, `{"token":""}`, `{"token":` + v + `,"x":{"token":"y"}}`, ` {"token":` + v + `} `} {
		f.Add([]byte(s))
	}
	e := newEnv(f, envConfig{})
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, path := range []string{"/v1/verify", "/v1/verify/batch"} {
			w := do(e.handler, httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body)))
			checkFuzzResponse(t, w)
			if path == "/v1/verify" {
				checkVerifyBody(t, e, body, w)
			}
		}
	})
}

// checkVerifyBody holds /v1/verify's answer w to body to independent
// readings: encoding/json's, an exact-name reader's, and the verifier's.
func checkVerifyBody(t *testing.T, e *env, body []byte, w *httptest.ResponseRecorder) {
	t.Helper()
	if int64(len(body)) > e.srv.maxBody {
		if w.Code != http.StatusRequestEntityTooLarge {
			t.Fatalf("/v1/verify answered %d to a body of %d bytes, over %d", w.Code, len(body), e.srv.maxBody)
		}
		return // never read
	}
	members, jsonErr := topLevel(body)
	var tokens []string // the names of the members named "token" in any case
	for _, m := range members {
		if strings.EqualFold(m.name, "token") {
			tokens = append(tokens, m.name)
		}
	}
	var lib struct {
		Token *string `json:"token"`
	}
	libErr := json.Unmarshal(body, &lib)
	if w.Code == http.StatusBadRequest {
		// Refused: never a body that names a token string and nothing
		// else, plainly (UTF-8, one member spelled "token").
		if jsonErr == nil && libErr == nil && lib.Token != nil && len(members) == 1 && members[0].name == "token" &&
			utf8.Valid(body) && !jsonscan.LoneSurrogate(string(body)) {
			t.Fatalf("/v1/verify refused a plain body %q: %s", body, w.Body)
		}
		return
	}
	// Accepted: every reader reads the one token.
	if jsonErr != nil || libErr != nil || lib.Token == nil {
		t.Fatalf("/v1/verify answered %d to %q, which encoding/json reads as no token (%v, %v)", w.Code, body, jsonErr, libErr)
	}
	if !utf8.Valid(body) {
		t.Fatalf("/v1/verify answered %d to %q, which is not UTF-8 (encoding/json reads U+FFFD)", w.Code, body)
	}
	if len(tokens) != 1 || tokens[0] != "token" {
		t.Fatalf("/v1/verify answered %d to %q, whose members named token in any case are %q", w.Code, body, tokens)
	}
	var exact string
	for _, m := range members {
		if m.name == "token" {
			if err := json.Unmarshal(m.raw, &exact); err != nil {
				t.Fatalf("/v1/verify answered %d to %q, whose token %s is no string", w.Code, body, m.raw)
			}
		}
	}
	if exact != *lib.Token {
		t.Fatalf("/v1/verify read %q: encoding/json's token %q, the exact member's %q", body, *lib.Token, exact)
	}
	for _, m := range members {
		for _, n := range verifyMembers {
			if strings.EqualFold(m.name, n) && n != "token" {
				return // the verdict depends on more than the token
			}
		}
	}
	// The verdict is the verifier's, called directly on the token.
	var got struct {
		Valid *bool  `json:"valid"`
		Error string `json:"error"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil || got.Valid == nil {
		t.Fatalf("/v1/verify answered %d %s: no verdict", w.Code, w.Body)
	}
	wantCode, wantValid, wantClass := http.StatusOK, false, verify.Class(errNoToken)
	if exact != "" {
		_, err := e.v.VerifyAt(context.Background(), exact, e.clock.Now())
		wantValid, wantClass = err == nil, verify.Class(err)
		switch {
		case err == nil:
		case errors.Is(err, verify.ErrUnavailable):
			wantCode = http.StatusServiceUnavailable
		case errors.Is(err, verify.ErrTokenTooLarge):
			wantCode = http.StatusRequestEntityTooLarge
		}
	}
	if w.Code != wantCode || *got.Valid != wantValid || got.Error != wantClass {
		t.Fatalf("/v1/verify of %q = %d valid %v %q; Verify: %d valid %v %q", body, w.Code, *got.Valid, got.Error, wantCode, wantValid, wantClass)
	}
}

// member is one top-level member of a JSON object as encoding/json's
// tokens read it: the name, and the raw value.
type member struct {
	name string
	raw  json.RawMessage
}

// topLevel returns the top-level members of the JSON object body in order,
// every one (a name twice is there twice), or an error when body is not
// one JSON object.
func topLevel(body []byte) ([]member, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, errors.New("not an object")
	}
	var out []member
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, err
		}
		out = append(out, member{tok.(string), raw})
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("data after the object")
	}
	return out, nil
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
