package jwks

import (
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/internal/testkeys"
)

// roundTripperFunc is an http.RoundTripper of a function.
type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestTransportRotationWithWrappedDefaultTransport: a program that wraps
// http.DefaultTransport once its services are built (an instrumentation
// library: otelhttp.NewTransport(http.DefaultTransport)) is a Go program
// like any other. A Transport built before that read net/http's default
// transport again at each CA rotation, as a *http.Transport: the rotation
// panicked inside RoundTrip, in the fetcher's goroutine, ending the
// process. The transport a Transport clones is the one it started with.
func TestTransportRotationWithWrappedDefaultTransport(t *testing.T) {
	ca, other := testkeys.NewCA("ca"), testkeys.NewCA("other")
	srv := tlsServer(t, ca)
	path := filepath.Join(t.TempDir(), "ca.pem")
	mod := time.Now().Add(-time.Hour)
	writeCAFile(t, path, ca.PEM, mod)
	clock := &fakeClock{t: time.Unix(1_000_000, 0)}
	tr, err := newTransport(path, 0, clock.now)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.CloseIdleConnections()

	saved := http.DefaultTransport
	http.DefaultTransport = roundTripperFunc(saved.RoundTrip) // wrapped, as instrumentation does
	defer func() { http.DefaultTransport = saved }()

	writeCAFile(t, path, append(append([]byte{}, ca.PEM...), other.PEM...), mod.Add(time.Minute))
	clock.add(caCheckInterval)
	func() {
		defer func() {
			if r := recover(); r != nil {
				t.Fatalf("a call after the CA file's rotation panicked: %v", r)
			}
		}()
		if err := get(tr, srv.URL); err != nil {
			t.Errorf("a call after the CA file's rotation: %v, want answered", err)
		}
	}()
	if tr.Reloads() != 1 {
		t.Errorf("Reloads() = %d, want 1", tr.Reloads())
	}
	// Made while it is wrapped (an SSF poller's own client was net/http's
	// default client, whatever the program made of it).
	func() {
		defer func() {
			if r := recover(); r != nil {
				t.Fatalf("NewTransport() with http.DefaultTransport wrapped panicked: %v", r)
			}
		}()
		tr2, err := NewTransport(path, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer tr2.CloseIdleConnections()
		if err := get(tr2, srv.URL); err != nil {
			t.Errorf("a Transport made with http.DefaultTransport wrapped: %v, want answered", err)
		}
	}()
}
