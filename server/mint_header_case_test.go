package server

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	mintpkg "github.com/jwksverify/jwksverify/mint"
)

// TestMintHeaderAuthorizationAnyCase: header names are case-insensitive,
// and config accepts mint.header "authorization" as the Authorization the
// server writes the token into (it canonicalizes it, skips the token-source
// check for it, keeps the caller's on routes that mint nothing). The value
// must then be "Bearer <jwt>" as for "Authorization": the minter wrote the
// bare JWT, so the upstream received Authorization: eyJ… — a credential
// without a scheme, which no Bearer-reading application takes.
func TestMintHeaderAuthorizationAnyCase(t *testing.T) {
	for _, name := range []string{"authorization", "AUTHORIZATION"} {
		t.Run(name, func(t *testing.T) {
			e, _ := newMintEnv(t, func(o *mintpkg.Options) { o.Header = name }, nil)
			w := httptest.NewRecorder()
			e.handler.ServeHTTP(w, nginxAuthz("GET", "/orders/1", tokens()["valid"], nil))
			if w.Code != http.StatusOK {
				t.Fatalf("status = %d", w.Code)
			}
			if got := w.Header().Get("Authorization"); !strings.HasPrefix(got, "Bearer ey") {
				t.Errorf("Authorization = %.30q…, want \"Bearer <minted jwt>\"", got)
			}
		})
	}
}
