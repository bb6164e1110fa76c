package integration

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// verifyBody posts body (a JSON object) to /v1/verify.
func verifyBody(t *testing.T, j *jwksverifyProc, body map[string]any) verdict {
	t.Helper()
	b, _ := json.Marshal(body)
	resp, err := httpClient().Post("http://"+j.HTTP+"/v1/verify", "application/json", strings.NewReader(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	v := verdict{status: resp.StatusCode}
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("/v1/verify body %q: %v", out, err)
	}
	return v
}

// TestHydraIDToken is issue 29's acceptance against a real Ory Hydra: the
// authorization-code flow (login and consent accepted through the admin
// API) yields an ID token that verifies through the binary's /v1/verify
// with its nonce and access token; a wrong nonce is wrong_nonce, another
// access token wrong_hash, and the ID token is never an access token.
func TestHydraIDToken(t *testing.T) {
	h := startHydra(t)
	const nonce = "hydra-nonce-3b1f2c"
	const acr = "urn:jwksverify:test:silver"
	f := h.codeFlow(t, "opaque", "openid offline_access", nonce, acr)
	if strings.Count(f.idTk, ".") != 2 {
		t.Fatalf("Hydra returned no ID token (%d bytes)", len(f.idTk))
	}
	j := startJWKSVerify(t, fmt.Sprintf(`
listen: 127.0.0.1:0
issuers:
  - issuer: %q
    discovery: true
    audiences: [api://not-the-client]
    id_token: {client_ids: [%q]}
`, h.issuer, f.clientID))

	// What Hydra v2.3.0 puts in its ID tokens (docs/API.md states it).
	payload, err := base64.RawURLEncoding.DecodeString(strings.Split(f.idTk, ".")[1])
	if err != nil {
		t.Fatal(err)
	}
	var claims map[string]any
	if err := json.Unmarshal(payload, &claims); err != nil {
		t.Fatal(err)
	}
	names := make([]string, 0, len(claims))
	for k := range claims {
		names = append(names, k)
	}
	t.Logf("Hydra's ID token claims: %v", names)
	for _, c := range []string{"iss", "sub", "aud", "exp", "iat", "nonce", "at_hash", "auth_time", "sid", "acr"} {
		if _, ok := claims[c]; !ok {
			t.Errorf("Hydra's ID token has no %s (claims %v)", c, names)
		}
	}

	tests := []struct {
		name      string
		body      map[string]any
		wantValid bool
		wantError string
	}{
		{"nonce-and-access-token", map[string]any{"nonce": nonce, "access_token": f.access}, true, ""},
		{"every-input", map[string]any{"nonce": nonce, "access_token": f.access, "max_age": 600, "acr_values": []string{acr}}, true, ""},
		{"wrong-nonce", map[string]any{"nonce": "another-nonce", "access_token": f.access}, false, "wrong_nonce"},
		{"other-access-token", map[string]any{"nonce": nonce, "access_token": f.refresh}, false, "wrong_hash"},
		{"wrong-acr", map[string]any{"acr_values": []string{"urn:jwksverify:test:gold"}}, false, "wrong_acr"},
		{"code-without-c-hash", map[string]any{"code": "a-code"}, false, "missing_claim"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := map[string]any{"token": f.idTk, "kind": "id_token"}
			for k, v := range tt.body {
				body[k] = v
			}
			v := verifyBody(t, j, body)
			if v.status != http.StatusOK || v.Valid != tt.wantValid || v.Error != tt.wantError {
				t.Fatalf("/v1/verify = %+v, want valid=%v error=%q", v, tt.wantValid, tt.wantError)
			}
			if tt.wantValid && (v.Claims["sub"] != "bob" || v.Claims["nonce"] != nonce) {
				t.Fatalf("claims = %v, want sub bob and the nonce", v.Claims)
			}
		})
	}
	t.Run("id-token-is-not-an-access-token", func(t *testing.T) {
		if v := verifyToken(t, j, f.idTk); v.Valid || v.Error != "wrong_audience" {
			t.Errorf("/v1/verify(ID token as access token) = %+v, want wrong_audience", v)
		}
		if code := authz(t, j, f.idTk); code != http.StatusUnauthorized {
			t.Errorf("/v1/authz(ID token) = %d, want 401", code)
		}
	})
}
