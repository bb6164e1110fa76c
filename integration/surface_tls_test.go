package integration

import (
	"context"
	"crypto/tls"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"

	"github.com/jwksverify/jwksverify/internal/testkeys"
)

// tlsSetup is a test CA, a server pair in dir, and a client CA file.
type tlsSetup struct {
	ca, clientCA              *testkeys.CA
	dir, cert, key, clientPEM string
}

func newTLSSetup(t *testing.T) *tlsSetup {
	t.Helper()
	s := &tlsSetup{ca: testkeys.NewCA("jwksverify test CA"), clientCA: testkeys.NewCA("callers CA"), dir: t.TempDir()}
	s.cert, s.key = s.ca.WriteServer(s.dir, "first")
	s.clientPEM = filepath.Join(s.dir, "clients.pem")
	if err := os.WriteFile(s.clientPEM, s.clientCA.PEM, 0o600); err != nil {
		t.Fatal(err)
	}
	return s
}

// client is an HTTPS client trusting the test CA, presenting cert when set,
// without keep-alive unless keepAlive.
func (s *tlsSetup) client(cert *tls.Certificate, keepAlive bool) *http.Client {
	cfg := &tls.Config{RootCAs: s.ca.Pool}
	if cert != nil {
		cfg.Certificates = []tls.Certificate{*cert}
	}
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg, DisableKeepAlives: !keepAlive}}
}

// TestSurfaceTLS: HTTPS with the test CA verifies a token; a rotated
// certificate is served within seconds of the file change while requests
// keep succeeding; client_auth require refuses a client without a
// certificate at the handshake; gRPC over TLS answers Check.
func TestSurfaceTLS(t *testing.T) {
	s := newTLSSetup(t)
	is := newTestIssuer(t)
	cfg := "listen: 127.0.0.1:0\ngrpc_listen: 127.0.0.1:0\nshutdown_timeout: 1s\n" +
		"tls: {cert_file: " + s.cert + ", key_file: " + s.key + "}\n" +
		"grpc_tls: {cert_file: " + s.cert + ", key_file: " + s.key + "}\n" +
		"issuers:\n" + is.IssuerConfig()
	jv := startJWKSVerifyWith(t, cfg, jwksverifyOptions{Ready: s.client(nil, false), ReadyScheme: "https"})
	base := "https://" + jv.HTTP

	t.Run("https-verify", func(t *testing.T) {
		status, body := post(t, s.client(nil, false), base+"/v1/verify", `{"token":"`+is.Token(nil)+`"}`, nil)
		if status != 200 || !strings.Contains(string(body), `"valid":true`) {
			t.Fatalf("/v1/verify over TLS = %d %s", status, body)
		}
	})
	t.Run("tls-1.1-refused", func(t *testing.T) {
		_, err := tls.Dial("tcp", jv.HTTP, &tls.Config{RootCAs: s.ca.Pool, MaxVersion: tls.VersionTLS11})
		if err == nil {
			t.Fatal("a TLS 1.1 handshake succeeded")
		}
	})
	t.Run("plain-http-refused", func(t *testing.T) {
		if resp, err := httpClient().Get("http://" + jv.HTTP + "/readyz"); err == nil && resp.StatusCode == 200 {
			resp.Body.Close()
			t.Fatal("plain HTTP answered 200 on the TLS listener")
		}
	})
	t.Run("grpc-tls-check", func(t *testing.T) {
		conn, err := grpc.NewClient(jv.GRPC, grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{RootCAs: s.ca.Pool})))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		resp, err := authv3.NewAuthorizationClient(conn).Check(ctx, &authv3.CheckRequest{Attributes: &authv3.AttributeContext{
			Request: &authv3.AttributeContext_Request{Http: &authv3.AttributeContext_HttpRequest{
				Method: "GET", Path: "/orders/7", Host: "app", Headers: map[string]string{"authorization": "Bearer " + is.Token(nil)},
			}},
		}})
		if err != nil || codes.Code(resp.GetStatus().GetCode()) != codes.OK {
			t.Fatalf("Check() over TLS = %v, %v; want OK", resp, err)
		}
	})
	t.Run("rotation-without-failures", func(t *testing.T) {
		var ok, failed atomic.Int64
		var firstErr atomic.Value
		stop := make(chan struct{})
		var wg sync.WaitGroup
		c := s.client(nil, false) // a handshake per request
		for range 2 {
			wg.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					resp, err := c.Get(base + "/healthz")
					if err != nil {
						failed.Add(1)
						firstErr.CompareAndSwap(nil, err.Error())
						continue
					}
					resp.Body.Close()
					ok.Add(1)
				}
			})
		}
		time.Sleep(200 * time.Millisecond) // load before the change
		s.ca.WriteServer(s.dir, "second")
		deadline := time.Now().Add(5 * time.Second)
		served := ""
		for time.Now().Before(deadline) {
			conn, err := tls.Dial("tcp", jv.HTTP, &tls.Config{RootCAs: s.ca.Pool})
			if err == nil {
				served = conn.ConnectionState().PeerCertificates[0].Subject.CommonName
				conn.Close()
				if served == "second" {
					break
				}
			}
			time.Sleep(50 * time.Millisecond)
		}
		close(stop)
		wg.Wait()
		if served != "second" {
			t.Fatalf("served certificate %q 5s after the change, want second", served)
		}
		if failed.Load() != 0 || ok.Load() == 0 {
			t.Fatalf("requests during rotation: %d ok, %d failed (first: %v)", ok.Load(), failed.Load(), firstErr.Load())
		}
		if !strings.Contains(jv.Output(), "TLS certificate reloaded") {
			t.Error("no reload line in the log")
		}
	})
}

// TestSurfaceClientAuthAndAPIAuth: client_auth require refuses a client
// without a certificate at the handshake; with api_auth.required a verified
// client certificate or an introspection client's credentials admit
// /v1/verify; forward-auth is unaffected.
func TestSurfaceClientAuthAndAPIAuth(t *testing.T) {
	s := newTLSSetup(t)
	is := newTestIssuer(t)
	caller := s.clientCA.ClientCert("orders-service")
	t.Run("require", func(t *testing.T) {
		cfg := "listen: 127.0.0.1:0\nshutdown_timeout: 1s\n" +
			"tls: {cert_file: " + s.cert + ", key_file: " + s.key + ", client_ca_file: " + s.clientPEM + ", client_auth: require}\n" +
			"issuers:\n" + is.IssuerConfig()
		jv := startJWKSVerifyWith(t, cfg, jwksverifyOptions{Ready: s.client(&caller, false), ReadyScheme: "https"})
		conn, err := tls.Dial("tcp", jv.HTTP, &tls.Config{RootCAs: s.ca.Pool})
		if err == nil {
			// TLS 1.3: the server's refusal arrives with the first read.
			_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
			_, err = conn.Write([]byte("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"))
			if err == nil {
				_, err = conn.Read(make([]byte, 1))
			}
			conn.Close()
		}
		if err == nil || !strings.Contains(err.Error(), "certificate") {
			t.Fatalf("a client without a certificate: %v, want a handshake refusal", err)
		}
		if status, _ := post(t, s.client(&caller, false), "https://"+jv.HTTP+"/v1/verify", `{"token":"`+is.Token(nil)+`"}`, nil); status != 200 {
			t.Fatalf("with a client certificate: /v1/verify = %d, want 200", status)
		}
	})
	t.Run("api-auth", func(t *testing.T) {
		cfg := "listen: 127.0.0.1:0\nshutdown_timeout: 1s\n" +
			"tls: {cert_file: " + s.cert + ", key_file: " + s.key + ", client_ca_file: " + s.clientPEM + ", client_auth: request}\n" +
			"api_auth: {required: true}\nintrospection: {clients: [{id: gateway, secret_env: JV_TEST_SECRET}]}\n" +
			"issuers:\n" + is.IssuerConfig()
		t.Setenv("JV_TEST_SECRET", "a-secret-of-enough-bytes")
		jv := startJWKSVerifyWith(t, cfg, jwksverifyOptions{Ready: s.client(nil, false), ReadyScheme: "https"})
		base := "https://" + jv.HTTP
		body := `{"token":"` + is.Token(nil) + `"}`
		for _, tc := range []struct {
			name    string
			client  *http.Client
			path    string
			headers map[string]string
			want    int
		}{
			{"no-credentials", s.client(nil, false), "/v1/verify", nil, 401},
			{"no-credentials-batch", s.client(nil, false), "/v1/verify/batch", nil, 401},
			{"wrong-secret", s.client(nil, false), "/v1/verify", map[string]string{"Authorization": "Bearer nope-nope-nope-nope"}, 401},
			{"bearer-secret", s.client(nil, false), "/v1/verify", map[string]string{"Authorization": "Bearer a-secret-of-enough-bytes"}, 200},
			{"client-certificate", s.client(&caller, false), "/v1/verify", nil, 200},
		} {
			t.Run(tc.name, func(t *testing.T) {
				b := body
				if strings.HasSuffix(tc.path, "batch") {
					b = `{"tokens":["` + is.Token(nil) + `"]}`
				}
				if status, out := post(t, tc.client, base+tc.path, b, tc.headers); status != tc.want {
					t.Fatalf("%s = %d %s, want %d", tc.path, status, out, tc.want)
				}
			})
		}
		t.Run("authz-unaffected", func(t *testing.T) {
			status, _, _ := get(t, s.client(nil, false), base+"/v1/authz", map[string]string{"Authorization": "Bearer " + is.Token(nil)})
			if status != 200 {
				t.Fatalf("/v1/authz = %d, want 200", status)
			}
		})
	})
}

// TestSurfaceAdminListen: with admin_listen, /metrics, /v1/issuers,
// /healthz and /readyz answer 404 on the main listener and 200 on the admin
// one; the API stays on the main listener only.
func TestSurfaceAdminListen(t *testing.T) {
	is := newTestIssuer(t)
	jv := startJWKSVerify(t, "listen: 127.0.0.1:0\nadmin_listen: 127.0.0.1:0\nshutdown_timeout: 1s\nissuers:\n"+is.IssuerConfig())
	if jv.Admin == "" {
		t.Fatal("no admin address in the listening line")
	}
	c := httpClient()
	for _, path := range []string{"/metrics", "/v1/issuers", "/healthz", "/readyz"} {
		if status, _, _ := get(t, c, "http://"+jv.HTTP+path, nil); status != 404 {
			t.Errorf("main %s = %d, want 404", path, status)
		}
		if status, _, _ := get(t, c, "http://"+jv.Admin+path, nil); status != 200 {
			t.Errorf("admin %s = %d, want 200", path, status)
		}
	}
	if status, _, _ := get(t, c, "http://"+jv.Admin+"/v1/authz", map[string]string{"Authorization": "Bearer " + is.Token(nil)}); status != 404 {
		t.Errorf("admin /v1/authz = %d, want 404", status)
	}
	if status, _, _ := get(t, c, "http://"+jv.HTTP+"/v1/authz", map[string]string{"Authorization": "Bearer " + is.Token(nil)}); status != 200 {
		t.Errorf("main /v1/authz = %d, want 200", status)
	}
}

// TestSurfacePlaintextWarning: a plaintext listener on a non-loopback
// address logs a warning; on loopback it does not.
func TestSurfacePlaintextWarning(t *testing.T) {
	is := newTestIssuer(t)
	const warning = "plaintext listener on a non-loopback address"
	loop := startJWKSVerify(t, "listen: 127.0.0.1:0\nshutdown_timeout: 1s\nissuers:\n"+is.IssuerConfig())
	if strings.Contains(loop.Output(), warning) {
		t.Error("a loopback listener logged the plaintext warning")
	}
	wide := startJWKSVerifyWith(t, "listen: 0.0.0.0:0\nshutdown_timeout: 1s\nissuers:\n"+is.IssuerConfig(), jwksverifyOptions{})
	if !strings.Contains(wide.Output(), warning) {
		t.Errorf("a 0.0.0.0 plaintext listener logged no warning:\n%s", wide.Output())
	}
}
