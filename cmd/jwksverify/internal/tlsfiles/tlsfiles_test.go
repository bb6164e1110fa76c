package tlsfiles

import (
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/internal/testkeys"
)

// clock is a settable clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// serve accepts TLS connections on loopback with cfg until the test ends,
// completing each handshake.
func serve(t *testing.T, cfg *tls.Config) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tln := tls.NewListener(ln, cfg)
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := tln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer c.Close()
				_ = c.(*tls.Conn).Handshake()
				_, _ = c.Read(make([]byte, 1)) // until the client closes
			})
		}
	})
	return ln.Addr().String()
}

// dial handshakes with addr and returns the server certificate's CN.
func dial(addr string, cfg *tls.Config) (string, error) {
	c, err := tls.Dial("tcp", addr, cfg)
	if err != nil {
		return "", err
	}
	defer c.Close()
	return c.ConnectionState().PeerCertificates[0].Subject.CommonName, nil
}

func TestReloadOnChange(t *testing.T) {
	ca := testkeys.NewCA("test CA")
	dir := t.TempDir()
	certFile, keyFile := ca.WriteServer(dir, "first")
	clk := &clock{t: time.Unix(1_800_000_000, 0)}
	r, err := New(Options{CertFile: certFile, KeyFile: keyFile, Now: clk.Now, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatalf("New() = %v", err)
	}
	addr := serve(t, r.Config())
	client := &tls.Config{RootCAs: ca.Pool, ServerName: "localhost"}
	step := func(name, wantCN string) {
		t.Helper()
		cn, err := dial(addr, client)
		if err != nil || cn != wantCN {
			t.Fatalf("%s: handshake = %q, %v, want %q", name, cn, err, wantCN)
		}
	}
	step("initial", "first")

	ca.WriteServer(dir, "second")
	step("changed-before-check-due", "first")
	clk.Add(DefaultCheckEvery)
	step("changed-check-due", "second")

	// A key that does not match the certificate: the old pair serves.
	if err := os.WriteFile(keyFile, []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	clk.Add(DefaultCheckEvery)
	step("broken-pair", "second")
	if loaded, failed := r.Loads(); loaded != 2 || failed != 1 {
		t.Errorf("Loads() = %d, %d, want 2, 1", loaded, failed)
	}
	ca.WriteServer(dir, "third")
	clk.Add(DefaultCheckEvery)
	step("repaired", "third")

	if _, err := dial(addr, &tls.Config{RootCAs: ca.Pool, ServerName: "localhost", MaxVersion: tls.VersionTLS11}); err == nil {
		t.Error("a TLS 1.1 handshake succeeded, want TLS 1.2 minimum")
	}
}

func TestClientAuth(t *testing.T) {
	ca, clientCA, otherCA := testkeys.NewCA("server CA"), testkeys.NewCA("client CA"), testkeys.NewCA("other CA")
	dir := t.TempDir()
	certFile, keyFile := ca.WriteServer(dir, "server")
	caFile := filepath.Join(dir, "clients.pem")
	if err := os.WriteFile(caFile, clientCA.PEM, 0o600); err != nil {
		t.Fatal(err)
	}
	good, bad := clientCA.ClientCert("caller"), otherCA.ClientCert("stranger")
	tests := []struct {
		auth   ClientAuth
		cert   *tls.Certificate
		wantOK bool
	}{
		{ClientAuthRequire, &good, true},
		{ClientAuthRequire, nil, false},
		{ClientAuthRequire, &bad, false},
		{ClientAuthRequest, nil, true},
		{ClientAuthRequest, &good, true},
		{ClientAuthRequest, &bad, false},
	}
	for _, tt := range tests {
		name := string(tt.auth) + "-none"
		if tt.cert != nil {
			name = string(tt.auth) + "-" + tt.cert.Leaf.Subject.CommonName
		}
		t.Run(name, func(t *testing.T) {
			r, err := New(Options{CertFile: certFile, KeyFile: keyFile, ClientCAFile: caFile, ClientAuth: tt.auth})
			if err != nil {
				t.Fatal(err)
			}
			addr := serve(t, r.Config())
			cfg := &tls.Config{RootCAs: ca.Pool, ServerName: "localhost"}
			if tt.cert != nil {
				// Sent whatever CAs the server names (crypto/tls would
				// otherwise send none that does not chain to them).
				cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return tt.cert, nil }
			}
			// TLS 1.3 reports a refused client certificate on the first read.
			c, err := tls.Dial("tcp", addr, cfg)
			if err == nil {
				_ = c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
				_, err = c.Read(make([]byte, 1))
				c.Close()
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() {
					err = nil // the server waits for us: accepted
				}
			}
			if (err == nil) != tt.wantOK {
				t.Fatalf("handshake error = %v, want ok %v", err, tt.wantOK)
			}
		})
	}
}

func TestNewRefuses(t *testing.T) {
	ca := testkeys.NewCA("test CA")
	dir := t.TempDir()
	certFile, keyFile := ca.WriteServer(dir, "s")
	for _, tt := range []struct {
		name string
		opts Options
	}{
		{"no-key", Options{CertFile: certFile}},
		{"missing-file", Options{CertFile: certFile, KeyFile: filepath.Join(dir, "absent.pem")}},
		{"swapped", Options{CertFile: keyFile, KeyFile: certFile}},
		{"require-without-ca", Options{CertFile: certFile, KeyFile: keyFile, ClientAuth: ClientAuthRequire}},
		{"ca-not-pem", Options{CertFile: certFile, KeyFile: keyFile, ClientAuth: ClientAuthRequest, ClientCAFile: keyFile}},
		{"bad-client-auth", Options{CertFile: certFile, KeyFile: keyFile, ClientAuth: "maybe"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := New(tt.opts); !errors.Is(err, ErrInvalid) {
				t.Fatalf("New() = %v, want ErrInvalid", err)
			}
		})
	}
}
