package jwks

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jwksverify/jwksverify/internal/filestamp"
)

// caCheckInterval is how often a [Transport] looks at its CA file: at most
// one stat per interval, made by a call.
const caCheckInterval = time.Second

// Transport is the HTTP transport of an issuer's outbound calls (discovery
// and JWKS fetches, introspection, SSF polls): net/http's default transport
// with a bound on response headers, trusting the PEM roots of a CA file or
// the system's. It reads its CA file again when the file changes, as the
// listeners read their certificate files: at most once a second a call
// looks at the file, and a changed stamp ([filestamp]) reads it; a
// new content with a certificate becomes the roots of the connections made
// from then on, and the idle connections made under the old roots are
// closed. A content that cannot be read or holds no certificate (a file
// being written, a mistake) keeps the roots in use: the identity provider
// stays reachable, and the next change is read again. The certificates are
// verified by crypto/tls as for any transport (the server's name, the chain
// to the roots); only the roots are swapped.
//
// A Transport is safe for concurrent use. Close its idle connections with
// CloseIdleConnections when done.
type Transport struct {
	caFile   string
	maxBytes int64
	now      func() time.Time
	// base is net/http's default transport as it was when the Transport
	// was made, which every transport it builds clones: a program may
	// wrap http.DefaultTransport later (instrumentation), and a rotation
	// must not read it again.
	base *http.Transport

	cur  atomic.Pointer[http.Transport]
	next atomic.Int64 // unix nanoseconds of the next look at caFile

	mu    sync.Mutex // one look at a time; guards the fields below
	pem   []byte     // the content in use
	stamp filestamp.Stamp
	// reloads counts the contents taken after the first.
	reloads atomic.Uint64
}

// NewTransport returns a Transport whose responses' headers are bounded to
// maxHeaderBytes (zero: net/http's default) and which trusts the PEM roots
// in caFile (TLS 1.2 minimum), or the system's roots for caFile "". The file
// is read now: the error wraps [ErrInvalidOptions] when it cannot be read or
// holds no certificate.
func NewTransport(caFile string, maxHeaderBytes int64) (*Transport, error) {
	return newTransport(caFile, maxHeaderBytes, time.Now)
}

func newTransport(caFile string, maxHeaderBytes int64, now func() time.Time) (*Transport, error) {
	t := &Transport{caFile: caFile, maxBytes: maxHeaderBytes, now: now, base: baseTransport()}
	if caFile == "" {
		t.cur.Store(t.build(nil))
		return t, nil
	}
	pool, pem, fi, err := readRoots(caFile)
	if err != nil {
		return nil, err
	}
	t.pem, t.stamp = pem, filestamp.Of(fi)
	t.cur.Store(t.build(pool))
	t.next.Store(now().Add(caCheckInterval).UnixNano())
	return t, nil
}

// baseTransport is a clone of http.DefaultTransport, or a transport with
// net/http's default settings when the program replaced it by another
// RoundTripper (a wrapper).
func baseTransport() *http.Transport {
	if dt, ok := http.DefaultTransport.(*http.Transport); ok {
		return dt.Clone()
	}
	return &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          100,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
}

// build is a transport trusting pool (nil: the system's roots).
func (t *Transport) build(pool *x509.CertPool) *http.Transport {
	tr := t.base.Clone()
	if t.maxBytes > 0 {
		tr.MaxResponseHeaderBytes = t.maxBytes
	}
	if pool != nil {
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	return tr
}

// RoundTrip sends r on the transport of the roots in use, after looking at
// the CA file when a second has passed since the last look.
func (t *Transport) RoundTrip(r *http.Request) (*http.Response, error) {
	if t.caFile != "" && t.now().UnixNano() >= t.next.Load() {
		t.look()
	}
	return t.cur.Load().RoundTrip(r)
}

// CloseIdleConnections closes the idle connections of the transport in use.
func (t *Transport) CloseIdleConnections() { t.cur.Load().CloseIdleConnections() }

// Reloads counts the CA file contents taken after the first.
func (t *Transport) Reloads() uint64 { return t.reloads.Load() }

// look stats the CA file and takes a changed content that holds a
// certificate. One caller looks; the others go on with the roots in use.
func (t *Transport) look() {
	if !t.mu.TryLock() {
		return
	}
	defer t.mu.Unlock()
	now := t.now()
	if now.UnixNano() < t.next.Load() {
		return // another caller looked meanwhile
	}
	t.next.Store(now.Add(caCheckInterval).UnixNano())
	fi, err := os.Stat(t.caFile)
	if err != nil || filestamp.Of(fi).Equal(t.stamp) {
		return
	}
	pool, pem, fi, err := readRoots(t.caFile)
	if err != nil {
		return // being written, or a mistake: the next change is read again
	}
	t.stamp = filestamp.Of(fi)
	if bytes.Equal(pem, t.pem) {
		return // touched, not changed
	}
	t.pem = pem
	old := t.cur.Swap(t.build(pool))
	t.reloads.Add(1)
	old.CloseIdleConnections()
}
