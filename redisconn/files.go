package redisconn

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/jwksverify/jwksverify/internal/fileread"
	"github.com/jwksverify/jwksverify/internal/filestamp"
)

// passwordFile gives a connection its credentials from a file, read again
// when the file's stamp ([filestamp]) changed since it was last read. It
// is safe for concurrent use.
type passwordFile struct {
	path, user string

	mu       sync.Mutex
	stamp    filestamp.Stamp
	password string
	read     bool
}

// credentials implements go-redis's CredentialsProviderContext. A file that
// cannot be read fails the connection (its callers answer 503): a password
// is never guessed.
func (p *passwordFile) credentials(context.Context) (string, string, error) {
	fi, err := os.Stat(p.path)
	if err != nil {
		return "", "", fmt.Errorf("%w: %w", ErrCredentials, err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if st := filestamp.Of(fi); !p.read || !st.Equal(p.stamp) {
		pw, err := readPassword(p.path)
		if err != nil {
			return "", "", fmt.Errorf("%w: %w", ErrCredentials, err)
		}
		p.password, p.stamp, p.read = pw, st, true
	}
	return p.user, p.password, nil
}

// readPassword reads a password file: its bytes without one trailing
// newline ("\n" or "\r\n"), at most MaxPasswordBytes, not empty.
func readPassword(path string) (string, error) {
	b, err := readFile(path, MaxPasswordBytes)
	if err != nil {
		return "", err
	}
	pw := strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
	if pw == "" {
		return "", fmt.Errorf("%s is empty", path)
	}
	return pw, nil
}

// readFile reads the file at path, refusing one larger than limit bytes.
func readFile(path string, limit int64) ([]byte, error) {
	b, _, err := fileread.Regular(path, limit)
	return b, err
}

// maxPEMBytes bounds a CA, certificate or key file.
const maxPEMBytes = 1 << 20

// config builds the TLS configuration of t: the CA file's roots (or the
// system's), the client certificate read again when its files change.
// The server name is the dialed host's (crypto/tls sets it when empty).
func (t TLS) config() (*tls.Config, error) {
	conf := &tls.Config{MinVersion: tls.VersionTLS12}
	if t.CAFile != "" {
		pem, err := readFile(t.CAFile, maxPEMBytes)
		if err != nil {
			return nil, invalidOption("TLS.CAFile", "%w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, invalidOption("TLS.CAFile", "%s holds no PEM certificate", t.CAFile)
		}
		conf.RootCAs = pool
	}
	if t.CertFile != "" {
		kp := &keyPair{cert: t.CertFile, key: t.KeyFile}
		if _, err := kp.get(); err != nil {
			return nil, invalidOption("TLS.CertFile", "%w", err)
		}
		conf.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return kp.get() }
	}
	return conf, nil
}

// keyPair is a client certificate loaded from its files and loaded again
// when either file's stamp ([filestamp]) changes; a pair that fails
// to load keeps the last good one (a rotation writes two files, not at
// once). It is safe for concurrent use.
type keyPair struct {
	cert, key string

	mu    sync.Mutex
	stamp [2]filestamp.Stamp
	pair  *tls.Certificate
}

// get returns the current pair.
func (k *keyPair) get() (*tls.Certificate, error) {
	cs, cerr := filestamp.Stat(k.cert)
	ks, kerr := filestamp.Stat(k.key)
	k.mu.Lock()
	defer k.mu.Unlock()
	if err := errors.Join(cerr, kerr); err != nil {
		if k.pair != nil {
			return k.pair, nil
		}
		return nil, err
	}
	if k.pair != nil && k.stamp[0].Equal(cs) && k.stamp[1].Equal(ks) {
		return k.pair, nil
	}
	certPEM, err := readFile(k.cert, maxPEMBytes)
	if err != nil {
		return k.last(err)
	}
	keyPEM, err := readFile(k.key, maxPEMBytes)
	if err != nil {
		return k.last(err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return k.last(fmt.Errorf("%s and %s: %w", k.cert, k.key, err))
	}
	k.pair, k.stamp = &pair, [2]filestamp.Stamp{cs, ks}
	return k.pair, nil
}

// last is the last good pair, or err when there is none. k.mu is held.
func (k *keyPair) last(err error) (*tls.Certificate, error) {
	if k.pair != nil {
		return k.pair, nil
	}
	return nil, err
}
