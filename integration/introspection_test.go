package integration

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/internal/testkeys"
)

// asServer is a real loopback RFC 7662 introspection endpoint whose answers
// the test sets; tokens named "hang-…" are held until released.
type asServer struct {
	URL     string
	ts      *httptest.Server // closed by the test to take the endpoint down
	calls   atomic.Int64
	mu      sync.Mutex
	answers map[string]map[string]any // token -> the answer's members besides active
	arrived chan string
	release chan struct{}
	once    sync.Once
}

func startASServer(t *testing.T) *asServer {
	t.Helper()
	a := &asServer{answers: map[string]map[string]any{}, arrived: make(chan string, 64), release: make(chan struct{})}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.calls.Add(1)
		if err := r.ParseForm(); err != nil || r.Method != http.MethodPost {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		tok := r.PostForm.Get("token")
		if strings.HasPrefix(tok, "hang-") {
			a.arrived <- tok
			select {
			case <-a.release:
			case <-r.Context().Done():
				return
			}
		}
		a.mu.Lock()
		ans := map[string]any{"active": false}
		if m, ok := a.answers[tok]; ok {
			ans = map[string]any{"active": true, "sub": "svc", "iat": time.Now().Unix(), "exp": time.Now().Add(time.Hour).Unix()}
			for k, v := range m {
				ans[k] = v
			}
		}
		a.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(ans)
	}))
	t.Cleanup(ts.Close)
	t.Cleanup(a.unblock) // before ts.Close
	a.URL, a.ts = ts.URL+"/introspect", ts
	return a
}

func (a *asServer) set(token string, members map[string]any) {
	a.mu.Lock()
	a.answers[token] = members
	a.mu.Unlock()
}

func (a *asServer) unblock() { a.once.Do(func() { close(a.release) }) }

// clientCert is a self-signed client certificate and its RFC 8705
// x5t#S256 thumbprint.
type clientCert struct {
	pem, x5t string
}

func newClientCert(t *testing.T, cn string) clientCert {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(der)
	return clientCert{
		pem: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})),
		x5t: base64.RawURLEncoding.EncodeToString(sum[:]),
	}
}

// forwardAuth asks /v1/authz as nginx does for POST
// https://api.example.com/orders/1, with the Authorization scheme, an
// optional DPoP proof and client certificate, and returns the status and
// the body's error class.
func forwardAuth(t *testing.T, base, scheme, token, proof, cert string) (int, string) {
	t.Helper()
	code, class, err := forwardAuthErr(httpClient(), base, scheme, token, proof, cert)
	if err != nil {
		t.Fatal(err)
	}
	return code, class
}

// forwardAuthErr is forwardAuth with client c, for another goroutine than
// the test's.
func forwardAuthErr(c *http.Client, base, scheme, token, proof, cert string) (int, string, error) {
	req, _ := http.NewRequest(http.MethodGet, "http://"+base+"/v1/authz", nil)
	req.Header.Set("X-Original-Method", "POST")
	req.Header.Set("X-Original-Uri", "/orders/1")
	req.Header.Set("X-Original-Host", "api.example.com")
	req.Header.Set("X-Original-Proto", "https")
	req.Header.Set("Authorization", scheme+" "+token)
	if proof != "" {
		req.Header.Set("DPoP", proof)
	}
	if cert != "" {
		req.Header.Set("X-Client-Cert", url.QueryEscape(cert))
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	var body struct{ Error string }
	_ = json.Unmarshal(b, &body)
	return resp.StatusCode, body.Error, nil
}

// TestIntrospectedTokenConfirmation: an introspection answer's cnf binds the
// opaque token as a JWT's own cnf binds it (RFC 9449 §6.2, RFC 8705 §3.2).
// With the issuer's sender_constraint on, a DPoP-bound opaque token without
// a proof is invalid_dpop_proof (binding_mismatch as a bearer token), with
// its key's proof allowed, with another key's proof binding_mismatch; a
// certificate-bound one is allowed with its certificate only. The answer is asked once and cached: the binding is
// checked on every request, cached or not.
func TestIntrospectedTokenConfirmation(t *testing.T) {
	as := startASServer(t)
	is := newTestIssuer(t)
	bound, other := newDPoPClient(t, testkeys.EC256B), newDPoPClient(t, testkeys.EC256A)
	cert, otherCert := newClientCert(t, "bound"), newClientCert(t, "other")
	as.set("opaque-dpop-bound", map[string]any{"aud": is.Audience, "cnf": map[string]any{"jkt": bound.jkt}})
	as.set("opaque-cert-bound", map[string]any{"aud": is.Audience, "cnf": map[string]any{"x5t#S256": cert.x5t}})
	as.set("opaque-bearer", map[string]any{"aud": is.Audience})
	j := startJWKSVerify(t, fmt.Sprintf(`listen: 127.0.0.1:0
shutdown_timeout: 1s
forward_auth: {proxy: nginx}
mtls: {client_cert_header: X-Client-Cert}
issuers:
%s    introspection: {url: %q}
    sender_constraint: {dpop: optional, mtls: optional}
`, is.IssuerConfig(), as.URL))

	var jti atomic.Int64
	proof := func(c *dpopClient, token string) string { return c.proof(fmt.Sprintf("jti-%d", jti.Add(1)), token) }
	const dpopTok, certTok = "opaque-dpop-bound", "opaque-cert-bound"
	tests := []struct {
		name, scheme, token, proof, cert string
		wantStatus                       int
		wantClass                        string
	}{
		{"dpop-bound-no-proof", "DPoP", dpopTok, "", "", http.StatusUnauthorized, "invalid_dpop_proof"},
		// As for a JWT with cnf.jkt (server/binding.go): a bound token sent
		// as a bearer token is a binding mismatch.
		{"dpop-bound-as-bearer", "Bearer", dpopTok, "", "", http.StatusUnauthorized, "binding_mismatch"},
		{"dpop-bound-its-proof", "DPoP", dpopTok, proof(bound, dpopTok), "", http.StatusOK, ""},
		{"dpop-bound-its-proof-again", "DPoP", dpopTok, proof(bound, dpopTok), "", http.StatusOK, ""},
		{"dpop-bound-other-keys-proof", "DPoP", dpopTok, proof(other, dpopTok), "", http.StatusUnauthorized, "binding_mismatch"},
		{"dpop-bound-its-proof-as-bearer", "Bearer", dpopTok, proof(bound, dpopTok), "", http.StatusUnauthorized, "binding_mismatch"},
		{"cert-bound-no-cert", "Bearer", certTok, "", "", http.StatusUnauthorized, "binding_mismatch"},
		{"cert-bound-its-cert", "Bearer", certTok, "", cert.pem, http.StatusOK, ""},
		{"cert-bound-other-cert", "Bearer", certTok, "", otherCert.pem, http.StatusUnauthorized, "binding_mismatch"},
		{"unbound-bearer", "Bearer", "opaque-bearer", "", "", http.StatusOK, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, class := forwardAuth(t, j.HTTP, tc.scheme, tc.token, tc.proof, tc.cert)
			if code != tc.wantStatus || class != tc.wantClass {
				t.Errorf("/v1/authz = %d %q, want %d %q", code, class, tc.wantStatus, tc.wantClass)
			}
		})
	}
	if n := as.calls.Load(); n != 3 {
		t.Errorf("introspection calls = %d, want 3 (one per token; the other requests use the cached answer)", n)
	}
}

// TestIntrospectionFlood: with introspection.max_concurrent calls held by a
// hanging authorization server, a request with another unknown opaque token
// waits max_wait and is answered 503 keys_unavailable (never an allow, and
// never an upstream call), a token with a cached answer still gets 200, and
// the refusals are counted in jwksverify_introspection_overloaded_total.
func TestIntrospectionFlood(t *testing.T) {
	as := startASServer(t)
	is := newTestIssuer(t)
	for _, tok := range []string{"cached", "hang-0", "hang-1"} {
		as.set(tok, map[string]any{"aud": is.Audience})
	}
	const maxWait = 100 * time.Millisecond
	j := startJWKSVerify(t, fmt.Sprintf(`listen: 127.0.0.1:0
shutdown_timeout: 1s
forward_auth: {proxy: nginx}
issuers:
%s    introspection: {url: %q, max_concurrent: 2, max_wait: 100ms}
`, is.IssuerConfig(), as.URL))
	if code, class := forwardAuth(t, j.HTTP, "Bearer", "cached", "", ""); code != http.StatusOK {
		t.Fatalf("cached token = %d %s, want 200", code, class)
	}

	var wg sync.WaitGroup
	held := make([]int, 2)
	for i := range held {
		wg.Go(func() {
			held[i], _, _ = forwardAuthErr(httpClient(), j.HTTP, "Bearer", fmt.Sprintf("hang-%d", i), "", "")
		})
	}
	for range held {
		select {
		case <-as.arrived:
		case <-time.After(startTimeout):
			t.Fatal("the held introspection calls did not arrive")
		}
	}
	before := as.calls.Load()

	const flood = 20
	var refused, other atomic.Int64
	var fw sync.WaitGroup
	start := time.Now()
	for i := range flood {
		fw.Go(func() {
			code, class, err := forwardAuthErr(httpClient(), j.HTTP, "Bearer", fmt.Sprintf("random-%d-%d", i, time.Now().UnixNano()), "", "")
			if err != nil {
				other.Add(1)
				t.Error(err)
			} else if code == http.StatusServiceUnavailable && class == "keys_unavailable" {
				refused.Add(1)
			} else {
				other.Add(1)
				t.Errorf("flood token = %d %q, want 503 keys_unavailable", code, class)
			}
		})
	}
	fw.Wait()
	took := time.Since(start)
	if refused.Load() != flood {
		t.Errorf("%d of %d flood tokens refused 503, %d otherwise", refused.Load(), flood, other.Load())
	}
	if took < maxWait || took > maxWait+4*time.Second {
		t.Errorf("the flood was answered after %v, want after max_wait (%v) and soon after", took, maxWait)
	}
	if code, class := forwardAuth(t, j.HTTP, "Bearer", "cached", "", ""); code != http.StatusOK {
		t.Errorf("cached token during the flood = %d %s, want 200", code, class)
	}
	if n := as.calls.Load() - before; n != 0 {
		t.Errorf("the flood made %d introspection calls, want 0 while max_concurrent calls are in flight", n)
	}
	m := rhMetrics(t, httpClient(), "http://"+j.HTTP)
	label := fmt.Sprintf(`{issuer=%q}`, is.Issuer)
	if got := m["jwksverify_introspection_overloaded_total"+label]; got != flood {
		t.Errorf("jwksverify_introspection_overloaded_total%s = %v, want %d", label, got, flood)
	}
	if got := m["jwksverify_introspection_calls_in_flight"+label]; got != 2 {
		t.Errorf("jwksverify_introspection_calls_in_flight%s = %v, want 2", label, got)
	}
	resp, err := httpClient().Get("http://" + j.HTTP + "/v1/issuers")
	if err != nil {
		t.Fatal(err)
	}
	var status struct {
		Issuers []struct {
			Issuer        string `json:"issuer"`
			Introspection *struct {
				Overloaded int `json:"overloaded"`
				InFlight   int `json:"in_flight"`
			} `json:"introspection"`
		} `json:"issuers"`
	}
	err = json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&status)
	resp.Body.Close()
	if err != nil || len(status.Issuers) != 1 || status.Issuers[0].Introspection == nil ||
		status.Issuers[0].Introspection.Overloaded != flood || status.Issuers[0].Introspection.InFlight != 2 {
		t.Errorf("/v1/issuers = %+v (%v), want introspection overloaded %d, in_flight 2", status, err, flood)
	}

	as.unblock()
	wg.Wait()
	for i, code := range held {
		if code != http.StatusOK {
			t.Errorf("hang-%d once the server answered = %d, want 200", i, code)
		}
	}
	if code, class := forwardAuth(t, j.HTTP, "Bearer", "random-after", "", ""); code != http.StatusUnauthorized || class != "inactive" {
		t.Errorf("a new token once the calls ended = %d %q, want 401 inactive (asked and answered)", code, class)
	}
}
