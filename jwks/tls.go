package jwks

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"strings"
)

// maxCAFileBytes bounds a CA file.
const maxCAFileBytes = 1 << 20

// maxBearerTokenBytes bounds a bearer token file (a Kubernetes projected
// token is about 1 KiB).
const maxBearerTokenBytes = 64 << 10

// TLSConfig returns the client TLS configuration of an issuer whose fetches
// trust the PEM roots in caFile (TLS 1.2 minimum), or nil for caFile "" (the
// system roots). The error wraps [ErrInvalidOptions] when the file cannot be
// read or holds no certificate. Introspection (package introspect) uses it
// too, so that one ca_file covers every connection to the issuer.
func TLSConfig(caFile string) (*tls.Config, error) {
	if caFile == "" {
		return nil, nil
	}
	pem, _, err := readFile(caFile, maxCAFileBytes)
	if err != nil {
		return nil, fmt.Errorf("%w: CAFile: %w", ErrInvalidOptions, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%w: CAFile %s holds no PEM certificate", ErrInvalidOptions, caFile)
	}
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, nil
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
