package extauthz

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/pem"
	"log/slog"
	"net/url"
	"testing"

	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	"google.golang.org/grpc/codes"

	"github.com/jwksverify/jwksverify/cache"
	"github.com/jwksverify/jwksverify/dpop"
	"github.com/jwksverify/jwksverify/internal/testkeys"
	"github.com/jwksverify/jwksverify/mtls"
	"github.com/jwksverify/jwksverify/replay"
	"github.com/jwksverify/jwksverify/server"
	"github.com/jwksverify/jwksverify/server/internal/servertest"
)

// TestCheckBinding: gRPC Check reads the DPoP proof from the headers, the
// original request from attributes.request.http and the client certificate
// from attributes.source.certificate.
func TestCheckBinding(t *testing.T) {
	ve := servertest.NewEnv(t, servertest.Config{NoDown: true})
	store, _ := replay.NewMemory(100)
	checker, err := dpop.New(dpop.Options{Replay: store})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Options{
		Verifier:          ve.V,
		SenderConstraints: map[string]server.SenderConstraint{servertest.IssuerA: {DPoP: server.ConstraintOptional, MTLS: server.ConstraintOptional}},
		DPoP:              checker,
		Logger:            slog.New(slog.DiscardHandler),
		Now:               ve.Clock.Now,
	})
	if err != nil {
		t.Fatal(err)
	}
	a := newAuthzGRPC(srv)

	k, _ := cache.NewKey(testkeys.Public(testkeys.EC256B), cache.KeyMeta{})
	bound := mint(claims(map[string]any{"cnf": map[string]any{"jkt": k.Thumbprint}}))
	sum := sha256.Sum256([]byte(bound))
	proof := func(htu string) string {
		return testkeys.Mint("ES256", testkeys.Private(testkeys.EC256B),
			map[string]any{"typ": "dpop+jwt", "jwk": testkeys.JWKJSON(testkeys.JWK{Key: testkeys.Public(testkeys.EC256B)})},
			map[string]any{"jti": htu, "htm": "GET", "htu": htu, "iat": servertest.Epoch.Unix(), "ath": base64.RawURLEncoding.EncodeToString(sum[:])})
	}
	der := servertest.ClientCert(t, "c")
	certBound := mint(claims(map[string]any{"cnf": map[string]any{"x5t#S256": mtls.Thumbprint(der)}}))
	escapedPEM := url.QueryEscape(string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})))

	tests := []struct {
		name string
		req  func() *authv3.CheckRequest
		want codes.Code
	}{
		{"dpop-valid", func() *authv3.CheckRequest {
			return envoyRequest("GET", "/orders?x=1", map[string]string{"authorization": "DPoP " + bound, "dpop": proof("http://app.example.com/orders")})
		}, codes.OK},
		{"dpop-htu-other", func() *authv3.CheckRequest {
			return envoyRequest("GET", "/orders", map[string]string{"authorization": "DPoP " + bound, "dpop": proof("http://app.example.com/other")})
		}, codes.Unauthenticated},
		{"dpop-bound-as-bearer", func() *authv3.CheckRequest {
			return envoyRequest("GET", "/orders", map[string]string{"authorization": "Bearer " + bound})
		}, codes.Unauthenticated},
		{"cert-from-source", func() *authv3.CheckRequest {
			r := envoyRequest("GET", "/orders", map[string]string{"authorization": "Bearer " + certBound})
			r.Attributes.Source.Certificate = escapedPEM
			return r
		}, codes.OK},
		{"cert-missing", func() *authv3.CheckRequest {
			return envoyRequest("GET", "/orders", map[string]string{"authorization": "Bearer " + certBound})
		}, codes.Unauthenticated},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := a.Check(context.Background(), tt.req())
			if err != nil {
				t.Fatal(err)
			}
			if got := codes.Code(resp.GetStatus().GetCode()); got != tt.want {
				t.Errorf("Check() status = %v (%s), want %v", got, resp.GetStatus().GetMessage(), tt.want)
			}
		})
	}
}
