package server

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/jwksverify/jwksverify/internal/testkeys"
)

// TestRefusalLogHoldsNoQuery: Middleware mounted behind http.StripPrefix
// cannot know the original request (its r.URL no longer spells the path the
// client sent), and a DPoP proof then fails with a detail quoting
// r.RequestURI whole, in the "token rejected" line: its query too, which
// carries what clients put there (an OAuth code, a signed URL's signature,
// an access_token). The server span names the route and never the query
// for that reason; the line names the path the client sent, without its
// query.
func TestRefusalLogHoldsNoQuery(t *testing.T) {
	const secret = "c2VjcmV0LWF1dGhvcml6YXRpb24tY29kZQ"
	e := newBindEnv(t, ConstraintOptional)
	bound := mint(claims(map[string]any{"cnf": map[string]any{"jkt": jktOf(t, testkeys.EC256B)}}))
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTeapot) })
	h := http.StripPrefix("/api", e.srv.Middleware(next))
	r := httptest.NewRequest(http.MethodGet, "https://api.example.com/api/orders/1?code="+secret, nil)
	r.Header.Set("Authorization", "DPoP "+bound)
	r.Header.Set("DPoP", mintProof(testkeys.EC256B, "ES256", "j1", "GET", "https://api.example.com/api/orders/1", bound))
	w := do(h, r)
	if w.Code != http.StatusUnauthorized {
		t.Fatalf("status %d, want 401 (the path was rewritten before the middleware)", w.Code)
	}
	logs := e.logs.String()
	if !strings.Contains(logs, "token rejected") || !strings.Contains(logs, "/api/orders/1") {
		t.Fatalf("no rejection line naming the path: %s", logs)
	}
	if strings.Contains(logs, secret) {
		t.Errorf("the log holds the request's query:\n%s", logs)
	}
}
