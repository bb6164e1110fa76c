package server

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"testing"
	"time"
)

// TestFractionalIatJustBeforeCutoffRevoked: a token's iat
// 2030-01-02T03:04:04.999999999Z (written 1893553444.999999999, RFC 7519
// allows fractions) is before an entry's issued_before of
// 2030-01-02T03:04:05Z, so SPEC says it matches. verify reads NumericDate
// through a float64 and rounds the nanoseconds: the iat becomes
// 03:04:05.000000000, equal to the cut-off, and "equal is not before"
// lets the token through. (The rounding moves any fractional iat by up to
// ~120 ns either way around 2030.)
func TestFractionalIatJustBeforeCutoffRevoked(t *testing.T) {
	e := newEnv(t, envConfig{revocations: true, noDown: true})
	iat := json.Number(strconv.FormatInt(epoch.Unix()-1, 10) + ".999999999")
	tok := mint(claims(map[string]any{"iat": iat, "nbf": epoch.Unix() - 1, "exp": epoch.Add(time.Hour).Unix()}))
	if d := e.srv.Decide(context.Background(), &Call{Endpoint: EndpointAuthz, Token: tok}); !d.Allowed() {
		t.Fatalf("before the revocation: Decide = %d %q, want allowed", d.Status, d.Class)
	}
	e.clock.Add(time.Minute)
	revokeVia(t, e.srv, `{"issuer":"`+issuerA+`","sub":"alice","issued_before":"`+epoch.Format(time.RFC3339Nano)+`"}`)
	d := e.srv.Decide(context.Background(), &Call{Endpoint: EndpointAuthz, Token: tok})
	if d.Status != http.StatusUnauthorized || d.Class != "revoked" {
		t.Errorf("iat %s, sub revoked issued_before %s: Decide = %d %q, want 401 revoked",
			iat, epoch.Format(time.RFC3339Nano), d.Status, d.Class)
	}
}
