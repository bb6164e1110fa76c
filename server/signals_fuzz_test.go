package server

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"golang.org/x/net/http/httpguts"
)

// leaked reports the first part of secret (the whole, or a dot-separated
// segment of 16 bytes or more) that body holds.
func leaked(body, secret string) (string, bool) {
	for _, s := range append([]string{secret}, strings.Split(secret, ".")...) {
		if len(s) >= 16 && strings.Contains(body, s) {
			return s, true
		}
	}
	return "", false
}

// FuzzLogoutBody posts arbitrary forms to the back-channel logout
// endpoint: the answer is 200 (stored), 400 invalid_request or 503
// temporarily_unavailable, never cached; 200 only for a form that
// url.ParseQuery reads with exactly one logout_token, whose entry was
// stored, and the same form again is no 200 (its jti is used); a refusal
// stores nothing; and no answer echoes the token.
func FuzzLogoutBody(f *testing.F) {
	tok := logoutToken(nil)
	for _, s := range []string{
		url.Values{"logout_token": {tok}}.Encode(),
		url.Values{"logout_token": {logoutToken(map[string]any{"jti": "lt-2", "aud": "other"})}}.Encode(),
		"logout_token=" + logoutToken(map[string]any{"jti": "lt-3"}) + "&x=1",
		"logout_token=a&logout_token=b", "logout%5Ftoken=" + logoutToken(map[string]any{"jti": "lt-4"}), "logout_token=%zz", "a=1;logout_token=x",
		"logout_token=" + logoutToken(map[string]any{"jti": "lt-5", "sid": nil, "sub": "bob"}),
	} {
		f.Add(s)
	}
	se := newSignalEnv(f)
	f.Fuzz(func(t *testing.T, body string) {
		before := se.store.count()
		w := do(se.srv.Handler(), logoutRequest(body))
		stored := se.store.count() - before
		if cc := w.Header().Get("Cache-Control"); cc != "no-store" {
			t.Fatalf("Cache-Control = %q", cc)
		}
		form, perr := url.ParseQuery(body)
		for _, v := range form["logout_token"] {
			if s, ok := leaked(w.Body.String(), v); ok {
				t.Fatalf("answer %d %s echoes the token's %q", w.Code, w.Body, s)
			}
		}
		switch w.Code {
		case http.StatusOK:
			if perr != nil || len(form["logout_token"]) != 1 || stored != 1 {
				t.Fatalf("POST %q = 200; url.ParseQuery reads %v, %v; stored %d", body, form, perr, stored)
			}
			if again := do(se.srv.Handler(), logoutRequest(body)); again.Code == http.StatusOK {
				t.Fatalf("POST %q again = 200: the jti was not used", body)
			}
			return
		case http.StatusBadRequest, http.StatusServiceUnavailable:
		default:
			t.Fatalf("POST %q = %d %s", body, w.Code, w.Body)
		}
		if stored != 0 {
			t.Fatalf("POST %q = %d and stored %d entries", body, w.Code, stored)
		}
		var e logoutError
		if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil || (e.Error != "invalid_request" && e.Error != "temporarily_unavailable") {
			t.Fatalf("POST %q = %d %s: not a logout error (%v)", body, w.Code, w.Body, err)
		}
	})
}

// FuzzSSFPush posts arbitrary SETs with arbitrary Authorization and
// Content-Type headers to the push endpoint: 401 with a challenge for
// anything but one Bearer credential equal to a push bearer token, whose
// body is never read; 202 (stored) only with that credential and a
// Content-Type application/secevent+jwt; otherwise 400 or 503 with an
// RFC 8935 error; a refusal stores nothing; and no answer echoes the
// bearer token or the SET.
func FuzzSSFPush(f *testing.F) {
	set := setToken(nil)
	f.Add(set, "Bearer "+pushBearer, "application/secevent+jwt")
	f.Add(setToken(map[string]any{"jti": "set-2"}), "bearer "+pushBearer, "application/secevent+jwt; charset=utf-8")
	f.Add(setToken(map[string]any{"jti": "set-3"}), "Bearer  "+pushBearer, "application/secevent+jwt")
	f.Add(setToken(map[string]any{"jti": "set-4"}), "Basic "+pushBearer, "application/secevent+jwt")
	f.Add(setToken(map[string]any{"jti": "set-5", "aud": "other"}), "Bearer "+pushBearer, "application/jwt")
	f.Add("a.b.c", "Bearer "+pushBearer, "application/secevent+jwt")
	se := newSignalEnv(f)
	f.Fuzz(func(t *testing.T, body, authorization, contentType string) {
		if !httpguts.ValidHeaderFieldValue(authorization) || !httpguts.ValidHeaderFieldValue(contentType) {
			return // net/http's server refuses such a header
		}
		// net/http's server hands a handler values without leading and
		// trailing blanks.
		authorization, contentType = strings.Trim(authorization, " \t"), strings.Trim(contentType, " \t")
		before := se.store.count()
		w := do(se.srv.Handler(), pushRequest(body, authorization, contentType))
		stored := se.store.count() - before
		for _, secret := range []string{pushBearer, body} {
			if s, ok := leaked(w.Body.String(), secret); ok {
				t.Fatalf("answer %d %s echoes %q", w.Code, w.Body, s)
			}
		}
		scheme, cred, _ := strings.Cut(authorization, " ")
		authorized := strings.EqualFold(scheme, "Bearer") && cred == pushBearer
		var e setError
		if w.Code != http.StatusAccepted {
			if stored != 0 {
				t.Fatalf("push = %d and stored %d entries", w.Code, stored)
			}
			if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil || e.Err == "" {
				t.Fatalf("push = %d %s: not an RFC 8935 error (%v)", w.Code, w.Body, err)
			}
		}
		switch w.Code {
		case http.StatusUnauthorized:
			if authorized || w.Header().Get("WWW-Authenticate") == "" {
				t.Fatalf("push with %q = 401 (challenge %q)", authorization, w.Header().Get("WWW-Authenticate"))
			}
		case http.StatusAccepted:
			mt, _, _ := strings.Cut(contentType, ";")
			if !authorized || !strings.EqualFold(strings.TrimSpace(mt), "application/secevent+jwt") || stored == 0 || w.Body.Len() != 0 {
				t.Fatalf("push with %q, %q = 202 %q, stored %d", authorization, contentType, w.Body, stored)
			}
		case http.StatusBadRequest, http.StatusServiceUnavailable:
			if !authorized {
				t.Fatalf("push with %q = %d, want 401", authorization, w.Code)
			}
		default:
			t.Fatalf("push = %d %s", w.Code, w.Body)
		}
	})
}
