package service_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/jwksverify/jwksverify/config"
	"github.com/jwksverify/jwksverify/service"
)

// The whole service embedded from a YAML configuration: one issuer whose
// key set is a local file, forward-auth served on a test listener.
func Example() {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	dir, _ := os.MkdirTemp("", "jwksverify-example")
	defer os.RemoveAll(dir)
	_ = os.WriteFile(filepath.Join(dir, "jwks.json"), jwksOf(&key.PublicKey, "k1"), 0o600)

	plan, err := config.Parse([]byte(`
issuers:
  - issuer: https://idp.example/
    jwks_file: jwks.json
    audiences: [orders]
`), dir, config.Overrides{}, func(string) (string, bool) { return "", false })
	if err != nil {
		fmt.Println(err)
		return
	}
	svc, err := service.New(plan, service.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer svc.Close()
	_ = svc.Ready(context.Background())
	srv := httptest.NewServer(svc.Handler())
	defer srv.Close()

	for _, aud := range []string{"orders", "billing"} {
		tok := jwt.NewWithClaims(jwt.SigningMethodES256, jwt.MapClaims{
			"iss": "https://idp.example/", "aud": aud, "sub": "alice", "exp": time.Now().Add(time.Hour).Unix(),
		})
		tok.Header["kid"] = "k1"
		signed, _ := tok.SignedString(key)
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/v1/authz", nil)
		req.Header.Set("Authorization", "Bearer "+signed)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			fmt.Println(err)
			return
		}
		resp.Body.Close()
		fmt.Println(strings.TrimSpace(fmt.Sprintln(aud, resp.StatusCode, resp.Header.Get("WWW-Authenticate"))))
	}
	// Output:
	// orders 200
	// billing 401 Bearer error="invalid_token", error_description="wrong_audience"
}

// jwksOf is the JWKS document of one P-256 public key.
func jwksOf(pub *ecdsa.PublicKey, kid string) []byte {
	b, _ := pub.Bytes() // 0x04 || X || Y
	enc := base64.RawURLEncoding.EncodeToString
	return fmt.Appendf(nil, `{"keys":[{"kty":"EC","crv":"P-256","kid":%q,"alg":"ES256","use":"sig","x":%q,"y":%q}]}`,
		kid, enc(b[1:33]), enc(b[33:]))
}
