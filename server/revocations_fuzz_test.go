package server

import (
	"encoding/json"
	"net/http"
	"slices"
	"testing"

	"github.com/jwksverify/jwksverify/internal/jsonscan"
	"github.com/jwksverify/jwksverify/revoke"
)

// FuzzRevocationsBody checks POST /v1/revocations on any body: no 5xx, and
// an entry stored (201) only for a body that a strict reader (jsonscan:
// RFC 8259, UTF-8, every name once) reads as that entry: its members
// named exactly, the kind member's string the entry's value, no kind
// member an issuer entry.
func FuzzRevocationsBody(f *testing.F) {
	for _, s := range []string{`{"issuer":"` + issuerA + `","jti":"x"}`, `{"issuer":"` + issuerA + `"}`,
		`{"issuer":"` + issuerA + `","sub":"a\u00e9","issued_before":"2020-01-01T00:00:00Z"}`, `{"issuer":"` + issuerA + `","jti":"a","JTI":"b"}`,
		`{"issuer":"` + issuerA + `","client_id":null}`, `{"issuer":"` + issuerA + `","sid":"\ud800"}`,
		`{"issuer":"` + issuerA + `","sub":"` + "\x97" + `"}`} {
		f.Add(s)
	}
	e := newEnv(f, envConfig{revocations: true})
	admin := e.srv.AdminHandler()
	kinds := map[string]revoke.Kind{"jti": revoke.KindJTI, "sid": revoke.KindSID, "sub": revoke.KindSub, "client_id": revoke.KindClientID}
	f.Fuzz(func(t *testing.T, body string) {
		w := do(admin, adminRequest(http.MethodPost, revocationsPath, body))
		if w.Code >= 500 {
			t.Fatalf("POST %q = %d %s", body, w.Code, w.Body)
		}
		if w.Code != http.StatusCreated {
			return
		}
		var got revoke.Entry
		if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil {
			t.Fatal(err)
		}
		// Lift it again, so that the store does not fill.
		defer do(admin, adminRequest(http.MethodDelete, revocationsPath+"/"+got.ID, ""))
		m, err := jsonscan.NewMembers(body)
		if err != nil {
			t.Fatalf("POST %q = 201 %+v; a strict reader: %v", body, got, err)
		}
		var names []string
		wantKind, wantValue, issuer := revoke.KindIssuer, "", ""
		for {
			mb, ok, err := m.Next()
			if err != nil {
				t.Fatalf("POST %q = 201 %+v; a strict reader: %v", body, got, err)
			}
			if !ok {
				break
			}
			if slices.Contains(names, mb.Name) {
				t.Fatalf("POST %q = 201 %+v; member %q twice", body, got, mb.Name)
			}
			names = append(names, mb.Name)
			if !slices.Contains(revocationMembers, mb.Name) {
				t.Fatalf("POST %q = 201 %+v; member %q is none of the API's", body, got, mb.Name)
			}
			v, isStr := jsonscan.String(body[mb.Start:mb.End])
			if k, ok := kinds[mb.Name]; ok {
				if !isStr {
					t.Fatalf("POST %q = 201 %+v; %s is no string", body, got, mb.Name)
				}
				wantKind, wantValue = k, v
			}
			if mb.Name == "issuer" {
				issuer = v
			}
		}
		if got.Kind != wantKind || got.Value != wantValue || got.Issuer != issuer {
			t.Fatalf("POST %q = 201 %s %q of %q; a strict reader reads %s %q of %q", body, got.Kind, got.Value, got.Issuer, wantKind, wantValue, issuer)
		}
	})
}
