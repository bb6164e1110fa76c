package server

import (
	"net/http"
	"net/url"
	"testing"
)

// TestBodyCharsetExtendedRefused: a charset given as an RFC 2231 extended
// parameter (charset*) is refused as a charset other than UTF-8 is, whatever
// it says: mime.ParseMediaType drops one whose own charset it cannot decode
// (an ISO-8859-1 encoded charset* naming latin1 read as no charset, and
// beside charset=utf-8 as utf-8), so the body was read as UTF-8 here while a
// reader honouring RFC 2231 reads it as Latin-1.
func TestBodyCharsetExtendedRefused(t *testing.T) {
	e := newEnv(t, envConfig{revocations: true})
	for _, params := range []string{
		"; charset*=iso-8859-1''latin1",
		"; charset=utf-8; charset*=iso-8859-1''latin1",
		"; charset*=iso-8859-1''latin1; charset=utf-8",
		"; CHARSET*=iso-8859-1''latin1",
		"; charset*=utf-8''utf-8",
	} {
		t.Run(params, func(t *testing.T) {
			r := adminRequest(http.MethodPost, revocationsPath, `{"issuer":"`+issuerA+`","sub":"é"}`)
			r.Header.Set("Content-Type", "application/json"+params)
			if w := do(e.srv.AdminHandler(), r); w.Code != http.StatusUnsupportedMediaType {
				t.Errorf("POST %s with Content-Type parameters %q = %d %s, want 415", revocationsPath, params, w.Code, w.Body)
			}
			r = introspectRequest("token="+url.QueryEscape(tokens()["valid"]), "gateway", "gateway-secret-value")
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded"+params)
			if w := do(e.handler, r); w.Code != http.StatusBadRequest {
				t.Errorf("/introspect with Content-Type parameters %q = %d %.60s…, want 400 invalid_request", params, w.Code, w.Body)
			}
		})
	}
}
