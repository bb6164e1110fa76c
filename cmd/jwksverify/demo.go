package main

import (
	"cmp"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/golang-jwt/jwt/v5"

	"github.com/jwksverify/jwksverify/cmd/jwksverify/internal/config"
)

// The demo issuer's token policy.
const (
	demoAudience   = "jwksverify-demo"
	demoSubject    = "demo-user"
	demoScope      = "demo:read demo:write"
	demoTokenTTL   = time.Hour
	demoJWKSMaxAge = 300 // seconds, Cache-Control on /jwks.json
	demoMaxParam   = 256 // bytes of sub or aud
)

// demoIssuer is an OIDC-shaped token issuer on loopback: discovery, a JWKS
// and a token endpoint that mints RS256 or ES256 tokens for anyone who asks.
// Its keys are generated at start and live only in memory. It exists for
// `serve --demo` and protects nothing.
type demoIssuer struct {
	url  string
	srv  *http.Server
	done chan struct{}
	keys map[string]demoKey // by alg
	jwks jwkset.JWKSMarshal // the public keys
}

// demoKey is one signing key of the demo issuer.
type demoKey struct {
	kid    string
	method jwt.SigningMethod
	priv   crypto.Signer
}

// startDemoIssuer generates the keys and starts serving on 127.0.0.1:0. The
// caller must Close it.
func startDemoIssuer(logger *slog.Logger) (*demoIssuer, error) {
	rk, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, fmt.Errorf("demo: RSA key: %w", err)
	}
	ek, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("demo: EC key: %w", err)
	}
	d := &demoIssuer{done: make(chan struct{}), keys: map[string]demoKey{
		"RS256": {"demo-rs256-" + randomID(6), jwt.SigningMethodRS256, rk},
		"ES256": {"demo-es256-" + randomID(6), jwt.SigningMethodES256, ek},
	}}
	for alg, k := range d.keys {
		meta := jwkset.JWKMetadataOptions{ALG: jwkset.ALG(alg), KID: k.kid, USE: jwkset.UseSig}
		jwk, err := jwkset.NewJWKFromKey(k.priv.Public(), jwkset.JWKOptions{Metadata: meta})
		if err != nil {
			return nil, fmt.Errorf("demo: %s JWK: %w", alg, err)
		}
		d.jwks.Keys = append(d.jwks.Keys, jwk.Marshal())
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("demo: listen: %w", err)
	}
	d.url = "http://" + ln.Addr().String()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		writeDemoJSON(w, map[string]any{
			"issuer": d.url, "jwks_uri": d.url + "/jwks.json", "token_endpoint": d.url + "/token",
			"id_token_signing_alg_values_supported": []string{"RS256", "ES256"},
			"response_types_supported":              []string{"token"}, "subject_types_supported": []string{"public"},
		})
	})
	mux.HandleFunc("GET /jwks.json", d.serveJWKS)
	mux.HandleFunc("GET /token", d.serveToken)
	mux.HandleFunc("POST /token", d.serveToken)
	d.srv = &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      10 * time.Second,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	go func() {
		defer close(d.done)
		_ = d.srv.Serve(ln)
	}()
	return d, nil
}

// Close stops the demo issuer and waits for its goroutine.
func (d *demoIssuer) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := d.srv.Shutdown(ctx)
	<-d.done
	return err
}

func (d *demoIssuer) serveJWKS(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", fmt.Sprintf("public, max-age=%d", demoJWKSMaxAge))
	writeDemoJSON(w, d.jwks)
}

// serveToken mints a token: ?sub=...&aud=...&alg=RS256|ES256 (query or form).
func (d *demoIssuer) serveToken(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 4096)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad form", http.StatusBadRequest)
		return
	}
	sub, aud := r.Form.Get("sub"), r.Form.Get("aud")
	if len(sub) > demoMaxParam || len(aud) > demoMaxParam {
		http.Error(w, fmt.Sprintf("sub and aud are limited to %d bytes", demoMaxParam), http.StatusBadRequest)
		return
	}
	tok, err := d.mint(sub, aud, r.Form.Get("alg"))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeDemoJSON(w, map[string]any{"access_token": tok, "token_type": "Bearer", "expires_in": int(demoTokenTTL / time.Second)})
}

// mint signs a token for sub and aud ("" = the demo defaults) with alg
// ("" = RS256), valid for demoTokenTTL.
func (d *demoIssuer) mint(sub, aud, alg string) (string, error) {
	k, ok := d.keys[cmp.Or(strings.ToUpper(alg), "RS256")]
	if !ok {
		return "", errors.New("alg must be RS256 or ES256")
	}
	now := time.Now()
	t := jwt.NewWithClaims(k.method, jwt.MapClaims{
		"iss": d.url, "sub": cmp.Or(sub, demoSubject), "aud": cmp.Or(aud, demoAudience), "scope": demoScope,
		"iat": now.Unix(), "nbf": now.Unix(), "exp": now.Add(demoTokenTTL).Unix(), "jti": randomID(12),
	})
	t.Header["kid"] = k.kid
	return t.SignedString(k.priv)
}

func writeDemoJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

func randomID(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return base64.RawURLEncoding.EncodeToString(b)
}

// demoConfig is the configuration of `serve --demo`: one issuer, the demo
// issuer, through the real discovery path; the defaults elsewhere.
const demoConfig = `
issuers:
  - issuer: %q
    discovery: true
    audiences: [%q]
    algorithms: [RS256, ES256]
    claims_to_headers: {sub: X-Auth-Subject, scope: X-Auth-Scope}
log: {format: text}
`

// serveDemo runs the service against an embedded demo issuer and, once
// ready, prints a ready-to-paste curl line and a short tour on stdout.
func (a *app) serveDemo(ctx context.Context, ov config.Overrides) int {
	bootLog := newLogger(a.stderr, slog.LevelInfo, "text")
	d, err := startDemoIssuer(bootLog)
	if err != nil {
		fmt.Fprintf(a.stderr, "jwksverify serve --demo: %v\n", err)
		return exitFailure
	}
	defer d.Close()
	plan, err := config.Parse([]byte(fmt.Sprintf(demoConfig, d.url, demoAudience)), "", ov, a.lookupEnv)
	if err != nil {
		fmt.Fprintf(a.stderr, "jwksverify serve --demo: %v\n", err)
		return exitUsage
	}
	return a.runService(ctx, plan, newLogger(a.stderr, plan.LogLevel, plan.LogFormat), nil, func(ctx context.Context, base string) error {
		tok, err := d.mint("", "", "")
		if err != nil {
			return fmt.Errorf("demo: mint: %w", err)
		}
		fmt.Fprint(a.stdout, demoTour(base, d.url, tok))
		return nil
	})
}

// demoTour is what `serve --demo` prints once the service is ready. The first
// curl line verifies a fresh token; tests parse it.
func demoTour(base, issuer, tok string) string {
	return fmt.Sprintf(`jwksverify demo is ready. Its issuer %[2]s signs tokens for audience %[4]q, valid for 1h.

Verify a freshly minted token:

  curl -s -X POST %[1]s/v1/verify -d '{"token":"%[3]s"}'

Forward-auth, as nginx auth_request, Traefik, Caddy or Envoy would call it (200 + X-Auth-Subject):

  curl -si %[1]s/v1/authz -H 'Authorization: Bearer %[3]s'

Issuers and key status:   curl -s %[1]s/v1/issuers
Metrics:                  curl -s %[1]s/metrics
Mint more tokens:         curl -s -X POST '%[2]s/token?sub=alice&aud=%[4]s&alg=ES256'
Stop with Ctrl-C.
`, base, issuer, tok, demoAudience)
}
