// Package tlsfiles serves a listener's TLS certificate, key and client CAs
// from files, reloaded when the files change without a restart: a
// [Reloader] checks the files at most once per [Options.CheckEvery], on the
// handshakes themselves, and swaps in a new pair only once it loads; until
// then the last good one serves. It holds no goroutine and needs no Close,
// so a configuration reload can keep one as it is (or build another) while
// connections keep being accepted.
package tlsfiles

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jwksverify/jwksverify/internal/fileread"
	"github.com/jwksverify/jwksverify/internal/filestamp"
)

// DefaultCheckEvery is how often the files are looked at by default.
const DefaultCheckEvery = time.Second

// maxFileBytes bounds each PEM file.
const maxFileBytes = 1 << 20

// ClientAuth is the client_auth setting: none, request or require.
type ClientAuth string

// The client_auth values.
const (
	ClientAuthNone    ClientAuth = "none"
	ClientAuthRequest ClientAuth = "request" // a certificate, when sent, must verify
	ClientAuthRequire ClientAuth = "require" // a verified certificate is required at the handshake
)

// ParseClientAuth returns the client_auth value s ("" is none).
func ParseClientAuth(s string) (ClientAuth, error) {
	switch c := ClientAuth(s); c {
	case "", ClientAuthNone:
		return ClientAuthNone, nil
	case ClientAuthRequest, ClientAuthRequire:
		return c, nil
	}
	return "", fmt.Errorf("%q is not one of none, request, require", s)
}

// Options configure a [Reloader].
type Options struct {
	// CertFile and KeyFile hold the PEM certificate chain and its private
	// key. Both required.
	CertFile, KeyFile string
	// ClientCAFile holds the PEM CAs that client certificates are verified
	// against. Required when ClientAuth is request or require; empty means
	// no client certificates are asked for.
	ClientCAFile string
	// ClientAuth says whether client certificates are asked for. Zero
	// means none.
	ClientAuth ClientAuth
	// NextProtos are the ALPN protocols offered ("h2", "http/1.1"). Nil
	// means none.
	NextProtos []string
	// CheckEvery is how often, at most, the files are checked for a change.
	// Zero means [DefaultCheckEvery].
	CheckEvery time.Duration
	// Now returns the current time. Nil means time.Now.
	Now func() time.Time
	// Logger receives a line for each pair loaded after the first, and for
	// each change that did not load. Nil means slog.Default().
	Logger *slog.Logger
}

// Reloader serves TLS from files. Build it with [New]. It is safe for
// concurrent use.
type Reloader struct {
	opts Options
	cur  atomic.Pointer[snapshot]
	// next is the earliest time of the next check, in UnixNano.
	next atomic.Int64
	mu   sync.Mutex // one check at a time
	// seen is what the files looked like at the last load attempt.
	seen [3]filestamp.Stamp
	// loads counts pairs loaded (the first included); failures counts
	// changes that did not load.
	loads, failures atomic.Int64
}

// snapshot is one loaded pair with the config that serves it.
type snapshot struct {
	cfg *tls.Config
}

// New loads the files and returns a Reloader, or an error matching
// [ErrInvalid] naming the file that does not load.
func New(opts Options) (*Reloader, error) {
	if opts.CertFile == "" || opts.KeyFile == "" {
		return nil, fmt.Errorf("%w: cert_file and key_file are both required", ErrInvalid)
	}
	if opts.ClientAuth == "" {
		opts.ClientAuth = ClientAuthNone
	}
	if _, err := ParseClientAuth(string(opts.ClientAuth)); err != nil {
		return nil, fmt.Errorf("%w: client_auth: %w", ErrInvalid, err)
	}
	if opts.ClientAuth != ClientAuthNone && opts.ClientCAFile == "" {
		return nil, fmt.Errorf("%w: client_auth %s needs client_ca_file to verify client certificates against", ErrInvalid, opts.ClientAuth)
	}
	if opts.CheckEvery <= 0 {
		opts.CheckEvery = DefaultCheckEvery
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	r := &Reloader{opts: opts}
	r.seen = r.stamps()
	s, err := r.load()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	r.cur.Store(s)
	r.loads.Add(1)
	r.next.Store(opts.Now().Add(opts.CheckEvery).UnixNano())
	return r, nil
}

// Config returns the listener's TLS configuration: TLS 1.2 minimum, each
// handshake served by the current pair (and client CAs). It is the same
// for the Reloader's life; use it with tls.NewListener or gRPC's
// credentials.NewTLS.
func (r *Reloader) Config() *tls.Config {
	return &tls.Config{
		MinVersion:         tls.VersionTLS12,
		NextProtos:         r.opts.NextProtos,
		GetConfigForClient: r.getConfigForClient,
	}
}

// Loads returns how many pairs have been loaded (the first included), and
// how many changes of the files did not load.
func (r *Reloader) Loads() (loaded, failed int64) { return r.loads.Load(), r.failures.Load() }

func (r *Reloader) getConfigForClient(*tls.ClientHelloInfo) (*tls.Config, error) {
	r.maybeReload()
	return r.cur.Load().cfg, nil
}

// maybeReload checks the files when a check is due, and loads them when
// they changed. A handshake that finds another check running does not
// wait for it.
func (r *Reloader) maybeReload() {
	now := r.opts.Now()
	if now.UnixNano() < r.next.Load() || !r.mu.TryLock() {
		return
	}
	defer r.mu.Unlock()
	r.next.Store(now.Add(r.opts.CheckEvery).UnixNano())
	st := r.stamps()
	if st[0].Equal(r.seen[0]) && st[1].Equal(r.seen[1]) && st[2].Equal(r.seen[2]) {
		return
	}
	r.seen = st
	s, err := r.load()
	if err != nil {
		r.failures.Add(1)
		r.opts.Logger.Warn("TLS files changed but do not load; the previous certificate keeps serving",
			"cert_file", r.opts.CertFile, "err", err)
		return
	}
	r.cur.Store(s)
	r.loads.Add(1)
	r.opts.Logger.Info("TLS certificate reloaded", "cert_file", r.opts.CertFile)
}

// stamps looks at the three files.
func (r *Reloader) stamps() [3]filestamp.Stamp {
	var out [3]filestamp.Stamp
	for i, p := range []string{r.opts.CertFile, r.opts.KeyFile, r.opts.ClientCAFile} {
		if p == "" {
			continue
		}
		if fi, err := os.Stat(p); err == nil {
			out[i] = filestamp.Of(fi)
		}
	}
	return out
}

// load reads the files into a snapshot.
func (r *Reloader) load() (*snapshot, error) {
	certPEM, err := readFile(r.opts.CertFile)
	if err != nil {
		return nil, err
	}
	keyPEM, err := readFile(r.opts.KeyFile)
	if err != nil {
		return nil, err
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("%s and %s: %w", r.opts.CertFile, r.opts.KeyFile, err)
	}
	cfg := &tls.Config{
		MinVersion:   tls.VersionTLS12,
		NextProtos:   r.opts.NextProtos,
		Certificates: []tls.Certificate{pair},
	}
	if r.opts.ClientCAFile != "" {
		caPEM, err := readFile(r.opts.ClientCAFile)
		if err != nil {
			return nil, err
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(caPEM) {
			return nil, fmt.Errorf("%s holds no PEM certificate", r.opts.ClientCAFile)
		}
		cfg.ClientCAs = pool
	}
	switch r.opts.ClientAuth {
	case ClientAuthRequest:
		cfg.ClientAuth = tls.VerifyClientCertIfGiven
	case ClientAuthRequire:
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return &snapshot{cfg: cfg}, nil
}

// readFile reads a PEM file, bounded.
func readFile(path string) ([]byte, error) {
	b, _, err := fileread.Regular(path, maxFileBytes)
	return b, err
}
