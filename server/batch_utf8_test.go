package server

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/cache"
	"github.com/jwksverify/jwksverify/introspect"
	"github.com/jwksverify/jwksverify/verify"
)

// TestBatchBodyNotUTF8: /v1/verify/batch refuses (400) a body that is not
// UTF-8 or holds a lone surrogate escape, as /v1/verify does: encoding/json
// reads each as U+FFFD, so the batch decided (and an authorization server
// was asked about) another token than the one the caller holds:
// "opaque\ud800" and "opaque\x97" were both answered valid because
// "opaque\uFFFD" is active.
func TestBatchBodyNotUTF8(t *testing.T) {
	as := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		if r.PostForm.Get("token") != "opaque\uFFFD" {
			io.WriteString(w, `{"active":false}`)
			return
		}
		io.WriteString(w, `{"active":true,"sub":"alice","exp":`+jsonNumber(time.Now().Add(time.Hour).Unix())+`}`)
	}))
	defer as.Close()
	const iss = "https://as.example.com/"
	ic, err := introspect.New(introspect.Options{Issuer: iss, URL: as.URL, InsecureAllowHTTP: true, MaxTTL: time.Minute, StaleFor: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer ic.Close()
	v, err := verify.New(verify.Options{Issuers: []verify.Issuer{{Issuer: iss, Keys: &cache.Keys{}, Introspector: ic, RequiredClaims: []string{}}}})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(Options{Verifier: v, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	h := srv.Handler()
	for _, tok := range []string{`"opaque\ud800"`, "\"opaque\x97\""} {
		if w := do(h, postJSON("/v1/verify", `{"token":`+tok+`}`)); w.Code != http.StatusBadRequest {
			t.Errorf("/v1/verify {\"token\":%s} = %d %s, want 400", tok, w.Code, strings.TrimSpace(w.Body.String()))
		}
		if w := do(h, postJSON("/v1/verify/batch", `{"tokens":[`+tok+`]}`)); w.Code != http.StatusBadRequest {
			t.Errorf("/v1/verify/batch {\"tokens\":[%s]} = %d %s, want 400", tok, w.Code, strings.TrimSpace(w.Body.String()))
		}
	}
	// Control: the token itself, and an escaped pair, are read.
	if w := do(h, postJSON("/v1/verify/batch", `{"tokens":["opaque\ufffd","x\ud83d\ude00"]}`)); w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `"valid":true`) {
		t.Errorf("control: /v1/verify/batch = %d %s, want 200 with the first valid", w.Code, strings.TrimSpace(w.Body.String()))
	}
}
