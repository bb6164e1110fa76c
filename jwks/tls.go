package jwks

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"strings"
)

// maxCAFileBytes bounds a CA file.
const maxCAFileBytes = 1 << 20

// maxBearerTokenBytes bounds a bearer token file (a Kubernetes projected
// token is about 1 KiB).
const maxBearerTokenBytes = 64 << 10

// TLSConfig returns a client TLS configuration trusting the PEM roots in
// caFile (TLS 1.2 minimum), or nil for caFile "" (the system roots), read
// once. The error wraps [ErrInvalidOptions] when the file cannot be read or
// holds no certificate. The issuer's own calls use a [Transport], which
// reads the file again when it changes; TLSConfig checks a file as they
// read it.
func TLSConfig(caFile string) (*tls.Config, error) {
	if caFile == "" {
		return nil, nil
	}
	pool, _, _, err := readRoots(caFile)
	if err != nil {
		return nil, err
	}
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, nil
}

// readRoots reads the PEM roots of caFile: the pool, the content and its
// file's information. The error wraps [ErrInvalidOptions] when the file
// cannot be read or holds no certificate.
func readRoots(caFile string) (*x509.CertPool, []byte, os.FileInfo, error) {
	pem, fi, err := readFile(caFile, maxCAFileBytes)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("%w: CAFile: %w", ErrInvalidOptions, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, nil, nil, fmt.Errorf("%w: CAFile %s holds no PEM certificate", ErrInvalidOptions, caFile)
	}
	return pool, pem, fi, nil
}

// ReadBearerToken reads a bearer token file: at most 64 KiB, trimmed of
// white space, not empty, a single line. The error never holds the content.
func ReadBearerToken(path string) (string, error) {
	b, _, err := readFile(path, maxBearerTokenBytes)
	if err != nil {
		return "", fmt.Errorf("bearer token file: %w", err)
	}
	tok := strings.TrimSpace(string(b))
	switch {
	case tok == "":
		return "", fmt.Errorf("bearer token file %s is empty", path)
	case strings.ContainsAny(tok, "\r\n\x00"):
		return "", fmt.Errorf("bearer token file %s holds more than one line", path)
	}
	return tok, nil
}
