package jwks

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/internal/testkeys"
)

// tlsServer serves "ok" over TLS with a certificate of ca for 127.0.0.1.
func tlsServer(t *testing.T, ca *testkeys.CA) *httptest.Server {
	t.Helper()
	certPEM, keyPEM := ca.Issue("127.0.0.1", false)
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "ok")
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

// fakeClock is a clock tests move by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// get reports whether a GET of url through tr was answered.
func get(tr http.RoundTripper, url string) error {
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := tr.RoundTrip(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	return nil
}

// writeCAFile writes data at path with modification time mod (so that a
// rewrite within the file system's time granularity is still a change).
func writeCAFile(t *testing.T, path string, data []byte, mod time.Time) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, mod, mod); err != nil {
		t.Fatal(err)
	}
}

// TestTransportReadsRotatedCAFile: an issuer's CA file rotated in place
// (cert-manager and trust-manager rewrite the bundle a pod mounts) is
// trusted from the first call a second after the change, without a restart
// or a reload; a content without a certificate keeps the roots in use.
func TestTransportReadsRotatedCAFile(t *testing.T) {
	oldCA, newCA := testkeys.NewCA("old"), testkeys.NewCA("new")
	oldSrv, newSrv := tlsServer(t, oldCA), tlsServer(t, newCA)
	path := filepath.Join(t.TempDir(), "ca.pem")
	mod := time.Now().Add(-time.Hour)
	writeCAFile(t, path, oldCA.PEM, mod)
	clock := &fakeClock{t: time.Unix(1_000_000, 0)}
	tr, err := newTransport(path, 64<<10, clock.now)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.CloseIdleConnections()
	step := func(name string, oldOK, newOK bool) {
		t.Helper()
		if err := get(tr, oldSrv.URL); (err == nil) != oldOK {
			t.Errorf("%s: the old CA's server: %v, want answered %v", name, err, oldOK)
		}
		if err := get(tr, newSrv.URL); (err == nil) != newOK {
			t.Errorf("%s: the new CA's server: %v, want answered %v", name, err, newOK)
		}
	}
	step("start", true, false)

	writeCAFile(t, path, newCA.PEM, mod.Add(time.Minute))
	step("changed within the second", true, false)
	clock.add(caCheckInterval)
	step("a second later", false, true)
	if tr.Reloads() != 1 {
		t.Errorf("Reloads() = %d, want 1", tr.Reloads())
	}

	writeCAFile(t, path, []byte("half written\n"), mod.Add(2*time.Minute))
	clock.add(caCheckInterval)
	step("no certificate", false, true)

	writeCAFile(t, path, append(append([]byte{}, oldCA.PEM...), newCA.PEM...), mod.Add(3*time.Minute))
	clock.add(caCheckInterval)
	step("both", true, true)
	if tr.Reloads() != 2 {
		t.Errorf("Reloads() = %d, want 2", tr.Reloads())
	}
}

// TestTransportChecksTheServerName: the roots are swapped, not the
// verification: a certificate of the trusted CA for another name is
// refused.
func TestTransportChecksTheServerName(t *testing.T) {
	ca := testkeys.NewCA("ca")
	srv := tlsServer(t, ca)
	path := filepath.Join(t.TempDir(), "ca.pem")
	writeCAFile(t, path, ca.PEM, time.Now())
	tr, err := NewTransport(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.CloseIdleConnections()
	tr.cur.Load().TLSClientConfig.ServerName = "idp.example.com"
	var verr *tls.CertificateVerificationError
	if err := get(tr, srv.URL); !errors.As(err, &verr) {
		t.Fatalf("a certificate for 127.0.0.1 asked for idp.example.com: %v, want a verification error", err)
	}
}

// TestNewTransportRefusesBadCAFile: a CA file that cannot be read or holds
// no certificate is an option error at the start.
func TestNewTransportRefusesBadCAFile(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.pem")
	writeCAFile(t, empty, []byte("nothing\n"), time.Now())
	for _, path := range []string{filepath.Join(dir, "missing.pem"), empty} {
		if _, err := NewTransport(path, 0); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("NewTransport(%s) = %v, want %v", filepath.Base(path), err, ErrInvalidOptions)
		}
	}
}
