package server

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
)

// TestScopeStringSplitsAtApplication: a space-separated scope
// string is a list both to the policy (RFC 6749 §3.3: split at U+0020
// only) and to the application reading the scope header. An array element
// that an application's list split cuts in two empties the header
// (TestExtractedListElementsReadAsOne); a scope string holding the same
// bytes between two tokens is sent as it is. "orders:read
// orders:write\u00a0admin" grants orders:read and the single token
// "orders:write\u00a0admin" here, and the application reading X-Auth-Scope
// with str.split() (Latin-1: 0xA0 is white space), strings.Fields or /\s+/
// gets orders:write and admin, which the policy refuses.
func TestScopeStringSplitsAtApplication(t *testing.T) {
	e := newPolicyEnv(t, nil)
	fieldsLatin1 := func(v string) []string {
		var b strings.Builder
		for i := 0; i < len(v); i++ {
			b.WriteRune(rune(v[i])) // Latin-1: one rune per byte
		}
		return strings.FieldsFunc(b.String(), func(r rune) bool {
			return r == ' ' || r == '\t' || r == '\n' || r == '\v' || r == '\f' || r == '\r' || r == 0x85 || r == 0xa0 || (r >= 0x1c && r <= 0x1f)
		})
	}
	for _, scope := range []string{
		"orders:read orders:write\u00a0admin",
		"orders:read orders:write\u2003admin",
		"orders:read orders:write\u3000admin",
		"orders:read orders:write\u00e0admin", // à is C3 A0: Latin-1 readers split at A0
	} {
		t.Run(scope, func(t *testing.T) {
			tok := mint(claims(map[string]any{"scope": scope}))
			// The policy refuses the write scope: POST is orders-write's.
			rec := httptest.NewRecorder()
			e.handler.ServeHTTP(rec, nginxAuthz("POST", "/orders", tok, nil))
			if rec.Code != http.StatusForbidden {
				t.Fatalf("POST /orders = %d, want 403 (the token has no orders:write)", rec.Code)
			}
			// GET is allowed (orders:read), with the scope header.
			rec = httptest.NewRecorder()
			e.handler.ServeHTTP(rec, nginxAuthz("GET", "/orders/1", tok, nil))
			if rec.Code != http.StatusOK {
				t.Fatalf("GET /orders/1 = %d, want 200", rec.Code)
			}
			h := rec.Header().Get("X-Auth-Scope")
			for reader, fields := range map[string]func(string) []string{"utf-8 strings.Fields": strings.Fields, "latin-1 str.split()": fieldsLatin1} {
				if got := fields(h); slices.Contains(got, "orders:write") || slices.Contains(got, "admin") {
					t.Errorf("X-Auth-Scope %q: a %s reads %q, scopes the policy does not grant", h, reader, got)
				}
			}
		})
	}
}
