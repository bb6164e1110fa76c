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
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/golang-jwt/jwt/v5"

	"github.com/jwksverify/jwksverify/config"
)

// The demo issuer's token policy.
const (
	demoAudience   = "jwksverify-demo"
	demoSubject    = "demo-user"
	demoScope      = "demo:read demo:write"
	demoTokenTTL   = time.Hour
	demoJWKSMaxAge = 300 // seconds, Cache-Control on /jwks.json
	demoMaxParam   = 256 // bytes of sub, aud or scope
	// demoMaxOffset bounds exp and nbf, seconds from now (either way).
	demoMaxOffset = 7 * 24 * 3600
)

// demoRequest is what /token was asked to mint, validated.
type demoRequest struct {
	sub, aud, scope, alg string
	exp                  time.Duration // from now; negative: already expired
	nbf                  time.Duration // from now; positive: not yet valid
}

// parseDemoRequest reads and validates the parameters of /token: sub, aud
// and scope (printable ASCII, at most demoMaxParam bytes; scope as RFC 6749
// §3.3 scope tokens), alg (RS256 or ES256), exp and nbf (integer seconds
// from now, within ±demoMaxOffset).
func parseDemoRequest(form url.Values) (demoRequest, error) {
	req := demoRequest{exp: demoTokenTTL, alg: cmp.Or(strings.ToUpper(form.Get("alg")), "RS256")}
	for _, p := range []struct {
		name string
		v    *string
		def  string
	}{{"sub", &req.sub, demoSubject}, {"aud", &req.aud, demoAudience}, {"scope", &req.scope, demoScope}} {
		v := form.Get(p.name)
		if len(v) > demoMaxParam {
			return req, fmt.Errorf("%s is limited to %d bytes", p.name, demoMaxParam)
		}
		for _, c := range []byte(v) {
			if c < 0x20 || c > 0x7e || (p.name == "scope" && (c == '"' || c == '\\')) {
				return req, fmt.Errorf("%s: printable ASCII only", p.name)
			}
		}
		*p.v = cmp.Or(v, p.def)
	}
	if _, ok := demoAlgs[req.alg]; !ok {
		return req, errors.New("alg must be RS256 or ES256")
	}
	for _, p := range []struct {
		name string
		d    *time.Duration
	}{{"exp", &req.exp}, {"nbf", &req.nbf}} {
		v := form.Get(p.name)
		if v == "" {
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < -demoMaxOffset || n > demoMaxOffset {
			return req, fmt.Errorf("%s: integer seconds from now, within ±%d (exp=-60: expired a minute ago)", p.name, demoMaxOffset)
		}
		*p.d = time.Duration(n) * time.Second
	}
	return req, nil
}

// demoAlgs are the algorithms the demo issuer signs with.
var demoAlgs = map[string]jwt.SigningMethod{"RS256": jwt.SigningMethodRS256, "ES256": jwt.SigningMethodES256}

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

// defaultDemoIssuer is the address of the demo issuer: fixed, so that its
// URL (the iss of its tokens) is the same on every start.
const defaultDemoIssuer = "127.0.0.1:8081"

// startDemoIssuer generates the keys and starts serving on addr, which must
// be a loopback host:port (the issuer mints tokens for anyone who asks;
// port 0 picks a free one). The caller must Close it.
func startDemoIssuer(logger *slog.Logger, addr string) (*demoIssuer, error) {
	if !isLoopback(addr) {
		return nil, fmt.Errorf("demo: --demo-issuer %q: want a loopback host:port such as %s (the demo issuer signs tokens for anyone)", addr, defaultDemoIssuer)
	}
	rk, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, fmt.Errorf("demo: RSA key: %w", err)
	}
	ek, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("demo: EC key: %w", err)
	}
	d := &demoIssuer{done: make(chan struct{}), keys: map[string]demoKey{
		"RS256": {"demo-rs256-" + randomID(6), demoAlgs["RS256"], rk},
		"ES256": {"demo-es256-" + randomID(6), demoAlgs["ES256"], ek},
	}}
	for alg, k := range d.keys {
		meta := jwkset.JWKMetadataOptions{ALG: jwkset.ALG(alg), KID: k.kid, USE: jwkset.UseSig}
		jwk, err := jwkset.NewJWKFromKey(k.priv.Public(), jwkset.JWKOptions{Metadata: meta})
		if err != nil {
			return nil, fmt.Errorf("demo: %s JWK: %w", alg, err)
		}
		d.jwks.Keys = append(d.jwks.Keys, jwk.Marshal())
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("demo: issuer listen: %w (choose another address with --demo-issuer, e.g. 127.0.0.1:0 for any free port)", err)
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
		ErrorLog:          slog.NewLogLogger(limitedHandler(logger.Handler()), slog.LevelWarn),
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

// serveToken mints a token (query or form): sub, aud, scope, alg
// (RS256|ES256), exp and nbf in seconds from now (exp=-60: expired);
// format=jwt answers the bare token as text, else JSON.
func (d *demoIssuer) serveToken(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 4096)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad form", http.StatusBadRequest)
		return
	}
	req, err := parseDemoRequest(r.Form)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	tok, err := d.mint(req, time.Now())
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	if r.Form.Get("format") == "jwt" {
		// The bare token, without a trailing newline: what is saved or
		// piped is exactly a compact JWS (verify.Verify refuses more).
		w.Header().Set("Content-Type", "application/jwt")
		_, _ = io.WriteString(w, tok)
		return
	}
	writeDemoJSON(w, map[string]any{"access_token": tok, "token_type": "Bearer", "expires_in": int(req.exp / time.Second)})
}

// mint signs the token req asks for at now. A token that expires within
// the hour was issued an hour before its exp (an expired one was valid
// once); nbf is the issue time unless req moves it.
func (d *demoIssuer) mint(req demoRequest, now time.Time) (string, error) {
	k := d.keys[req.alg]
	exp := now.Add(req.exp)
	iat := now
	if exp.Before(now.Add(demoTokenTTL)) {
		iat = exp.Add(-demoTokenTTL)
	}
	nbf := iat
	if req.nbf != 0 {
		nbf = now.Add(req.nbf)
	}
	t := jwt.NewWithClaims(k.method, jwt.MapClaims{
		"iss": d.url, "sub": req.sub, "aud": req.aud, "scope": req.scope,
		"iat": iat.Unix(), "nbf": nbf.Unix(), "exp": exp.Unix(), "jti": randomID(12),
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
func (a *app) serveDemo(ctx context.Context, ov config.Overrides, issuerAddr string) int {
	bootLog := newLogger(a.stderr, slog.LevelInfo, "text")
	d, err := startDemoIssuer(bootLog, issuerAddr)
	if err != nil {
		fmt.Fprintf(a.stderr, "jwksverify serve --demo: %v\n", err)
		return exitUsage
	}
	defer d.Close()
	plan, err := config.Parse([]byte(fmt.Sprintf(demoConfig, d.url, demoAudience)), "", ov, a.lookupEnv)
	if err != nil {
		fmt.Fprintf(a.stderr, "jwksverify serve --demo: %v\n", err)
		return exitUsage
	}
	return a.runService(ctx, plan, newLogger(a.stderr, plan.LogLevel, plan.LogFormat), nil, func(ctx context.Context, base string) error {
		tok, err := d.mint(demoRequest{sub: demoSubject, aud: demoAudience, scope: demoScope, alg: "RS256", exp: demoTokenTTL}, time.Now())
		if err != nil {
			return fmt.Errorf("demo: mint: %w", err)
		}
		fmt.Fprint(a.stdout, demoTour(base, d.url, tok, selfCommand()))
		return nil
	})
}

// demoTour is what `serve --demo` prints once the service is ready; self is
// the command that runs this binary as the user started it (selfCommand).
// The first curl line verifies a fresh token; tests parse it, and run every
// indented command line as printed.
func demoTour(base, issuer, tok, self string) string {
	return fmt.Sprintf(`jwksverify demo is ready. Its issuer %[2]s signs tokens for audience %[4]q, valid for 1h.

Verify a freshly minted token:

  curl -s -X POST %[1]s/v1/verify -d '{"token":"%[3]s"}'

Forward-auth, as nginx auth_request, Traefik, Caddy or Envoy would call it (200 + X-Auth-Subject):

  curl -si %[1]s/v1/authz -H 'Authorization: Bearer %[3]s'

Rejections: 401 with the class in WWW-Authenticate (expired; wrong_audience):

  curl -si %[1]s/v1/authz -H "Authorization: Bearer $(curl -s '%[2]s/token?exp=-60&format=jwt')"
  curl -si %[1]s/v1/authz -H "Authorization: Bearer $(curl -s '%[2]s/token?aud=someone-else&format=jwt')"

The CLI against this issuer (exit 0 valid, 1 rejected, 3 keys unavailable; README, "A 60-second tour"):

  ISSUER=%[2]s
  %[5]s verify --discovery "$ISSUER" --audience %[4]s "$(curl -s "$ISSUER/token?format=jwt")"  # exit 0
  %[5]s verify --discovery "$ISSUER" --explain "$(curl -s "$ISSUER/token?exp=-60&format=jwt")"  # exit 1: expired

Issuers and key status:   curl -s %[1]s/v1/issuers
Metrics:                  curl -s %[1]s/metrics
Mint more tokens:         curl -s -X POST '%[2]s/token?sub=alice&aud=%[4]s&scope=orders:read&alg=ES256'
                          (also exp=SECONDS and nbf=SECONDS from now, format=jwt for the bare token)
Stop with Ctrl-C.
`, base, issuer, tok, demoAudience, self)
}

// selfCommand is the command line that runs this program again, for the
// commands the demo prints: "go run ./cmd/jwksverify" when `go run` built
// it (the executable is in the go-build cache; from the module root), "go
// run MODULE/cmd/jwksverify@VERSION" from elsewhere, "jwksverify" when the
// name it was started by finds it on PATH, else the path it was started by.
func selfCommand() string {
	exe, _ := os.Executable()
	cwd, _ := os.Getwd()
	version := ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		version = bi.Main.Version
	}
	_, statErr := os.Stat(filepath.Join(cwd, "cmd", "jwksverify", "main.go"))
	onPath, _ := exec.LookPath(filepath.Base(os.Args[0]))
	return selfCommandFor(os.Args[0], exe, onPath, version, statErr == nil)
}

// selfCommandFor is selfCommand of its inputs: arg0 as the program was
// started, exe its executable, onPath what PATH finds for arg0's base name
// ("" when nothing), version the main module's, inModuleRoot whether the
// working directory holds ./cmd/jwksverify.
func selfCommandFor(arg0, exe, onPath, version string, inModuleRoot bool) string {
	if strings.Contains(filepath.ToSlash(exe), "/go-build") {
		if inModuleRoot {
			return "go run ./cmd/jwksverify"
		}
		if version == "" || version == "(devel)" {
			version = "latest"
		}
		return "go run github.com/jwksverify/jwksverify/cmd/jwksverify@" + version
	}
	if !strings.ContainsRune(arg0, '/') && onPath != "" && sameFile(onPath, exe) {
		return filepath.Base(arg0)
	}
	path := arg0
	if !strings.ContainsRune(arg0, '/') || exe != "" && !sameFile(arg0, exe) {
		path = exe
	}
	return shellWord(path)
}

// sameFile reports whether a and b name the same existing file.
func sameFile(a, b string) bool {
	fa, err := os.Stat(a)
	if err != nil {
		return false
	}
	fb, err := os.Stat(b)
	return err == nil && os.SameFile(fa, fb)
}

// shellWord quotes s for a POSIX shell when it needs quoting.
func shellWord(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+:@%,=") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
