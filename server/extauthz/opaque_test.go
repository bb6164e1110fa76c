package extauthz

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	rpccode "google.golang.org/genproto/googleapis/rpc/code"

	"github.com/jwksverify/jwksverify/cache"
	"github.com/jwksverify/jwksverify/introspect"
	"github.com/jwksverify/jwksverify/server"
	"github.com/jwksverify/jwksverify/verify"
)

// TestGRPCCheckOpaque: Check answers an opaque token from the issuer's
// introspection endpoint (a real introspect.Client against a loopback RFC
// 7662 server): active is OK, inactive is DENIED 401 "inactive".
func TestGRPCCheckOpaque(t *testing.T) {
	as := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		if r.PostForm.Get("token") == "opaque-ok" {
			io.WriteString(w, `{"active":true,"sub":"svc","exp":4102444800}`)
			return
		}
		io.WriteString(w, `{"active":false}`)
	}))
	defer as.Close()
	c, err := introspect.New(introspect.Options{Issuer: "https://as.example.com/", URL: as.URL})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	v, err := verify.New(verify.Options{Issuers: []verify.Issuer{{Issuer: "https://as.example.com/", Keys: &cache.Keys{}, Introspector: c}}})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Options{Verifier: v, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	g := startGRPC(t, &env{srv: srv})
	for _, tt := range []struct {
		name, token string
		want        rpccode.Code
		class       string
	}{
		{"active", "opaque-ok", rpccode.Code_OK, ""},
		{"inactive", "opaque-revoked", rpccode.Code_UNAUTHENTICATED, "inactive"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := g.authz.Check(t.Context(), envoyRequest("GET", "/", bearer(tt.token)))
			if err != nil {
				t.Fatalf("Check() = %v", err)
			}
			if got := rpccode.Code(resp.GetStatus().GetCode()); got != tt.want {
				t.Fatalf("Check() status = %v, want %v", got, tt.want)
			}
			if tt.class != "" {
				found := false
				for _, h := range resp.GetDeniedResponse().GetHeaders() {
					if strings.EqualFold(h.GetHeader().GetKey(), "www-authenticate") && strings.Contains(h.GetHeader().GetValue(), `error_description="`+tt.class+`"`) {
						found = true
					}
				}
				if !found || resp.GetDeniedResponse().GetStatus().GetCode() != 401 {
					t.Errorf("denied response = %v, want 401 with error_description %q", resp.GetDeniedResponse(), tt.class)
				}
			}
		})
	}
}
