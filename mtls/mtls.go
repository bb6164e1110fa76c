// Package mtls reads the client certificate that a TLS-terminating proxy
// forwards to jwksverify, and computes its RFC 8705 §3.1 thumbprint: the
// value a certificate-bound access token carries in cnf["x5t#S256"].
//
// A proxy forwards the certificate in one of three forms, each read only
// where the configuration says the proxy puts it: a request header holding
// the PEM (nginx $ssl_client_escaped_cert: URL-escaped PEM; Caddy's
// {http.request.tls.client.certificate_pem}; Traefik passTLSClientCert: the
// base64 DER, URL-escaped), Envoy's x-forwarded-client-cert (XFCC) element
// with its Hash, or gRPC ext_authz's attributes.source.certificate
// (URL-escaped PEM). The package does no I/O and holds no state.
package mtls

import (
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"net/url"
	"strings"

	"github.com/jwksverify/jwksverify/internal/asciifold"
)

// MaxCertBytes bounds a forwarded certificate, in any of its forms.
const MaxCertBytes = 16 << 10

// Thumbprint returns the x5t#S256 of a DER certificate: base64url (no
// padding) of its SHA-256 (RFC 8705 §3.1).
func Thumbprint(der []byte) string {
	sum := sha256.Sum256(der)
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// ParseForwarded returns the DER of a certificate as a proxy forwards it:
// URL-escaped or plain PEM (one CERTIFICATE block, nothing else), or standard or
// URL-safe base64 of the DER (URL-escaped or not). The result is parsed by
// crypto/x509, so that only a certificate is ever hashed. An empty value is
// [ErrNoCertificate]; anything else unreadable is [ErrMalformed].
func ParseForwarded(v string) ([]byte, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return nil, ErrNoCertificate
	}
	if len(v) > MaxCertBytes {
		return nil, fmt.Errorf("%w: %d bytes, limit %d", ErrMalformed, len(v), MaxCertBytes)
	}
	if strings.Contains(v, "%") {
		// Path escaping (nginx, Envoy: a space is %20, a '+' of base64
		// stays '+'), unless the armor shows query escaping (a space is '+',
		// and a '+' of base64 was escaped as %2B).
		unescape := url.PathUnescape
		if strings.HasPrefix(v, "-----BEGIN+") {
			unescape = url.QueryUnescape
		}
		u, err := unescape(v)
		if err != nil {
			return nil, fmt.Errorf("%w: bad URL escape", ErrMalformed)
		}
		v = strings.TrimSpace(u)
	}
	var der []byte
	if strings.HasPrefix(v, "-----BEGIN") {
		// Exactly one block, and nothing after it: two certificates (a
		// repeated header joined with ',', as Envoy's CheckRequest headers
		// map does) are not one client certificate, and the first of them
		// is the client's own when a proxy appends.
		b, rest := pem.Decode([]byte(v))
		if b == nil || b.Type != "CERTIFICATE" {
			return nil, fmt.Errorf("%w: no PEM CERTIFICATE block", ErrMalformed)
		}
		if strings.Count(v, "-----BEGIN") != 1 || len(strings.TrimSpace(string(rest))) != 0 {
			return nil, fmt.Errorf("%w: more than one PEM block, or data after it", ErrMalformed)
		}
		der = b.Bytes
	} else {
		s := strings.TrimRight(v, "=")
		var err error
		if der, err = base64.RawStdEncoding.DecodeString(s); err != nil {
			if der, err = base64.RawURLEncoding.DecodeString(s); err != nil {
				return nil, fmt.Errorf("%w: neither PEM nor base64 DER", ErrMalformed)
			}
		}
	}
	if _, err := x509.ParseCertificate(der); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	return der, nil
}

// ThumbprintForwarded is [Thumbprint] of [ParseForwarded].
func ThumbprintForwarded(v string) (string, error) {
	der, err := ParseForwarded(v)
	if err != nil {
		return "", err
	}
	return Thumbprint(der), nil
}

// ThumbprintXFCC returns the x5t#S256 of the client certificate that an
// Envoy x-forwarded-client-cert header describes: the Hash key of its one
// element (hex SHA-256 of the DER, which Envoy computes). A header with
// several elements (several proxies appended theirs) is [ErrMalformed]:
// which one is the client's depends on the proxies' configuration, so
// configure Envoy with forward_client_cert_details: SANITIZE_SET.
func ThumbprintXFCC(v string) (string, error) {
	if strings.TrimSpace(v) == "" {
		return "", ErrNoCertificate
	}
	if len(v) > MaxCertBytes*4 {
		return "", fmt.Errorf("%w: XFCC of %d bytes", ErrMalformed, len(v))
	}
	elems, err := splitQuoted(v, ',')
	if err != nil {
		return "", err
	}
	if len(elems) != 1 {
		return "", fmt.Errorf("%w: XFCC has %d elements, want 1 (forward_client_cert_details: SANITIZE_SET)", ErrMalformed, len(elems))
	}
	pairs, err := splitQuoted(elems[0], ';')
	if err != nil {
		return "", err
	}
	hash := ""
	for _, p := range pairs {
		k, val, ok := strings.Cut(p, "=")
		if !ok {
			continue
		}
		if k = strings.TrimSpace(k); asciifold.Disagree(k, "Hash") {
			// "Haſh" (U+017F): Hash to a reader folding Unicode
			// (Java's equalsIgnoreCase), another key to Envoy's.
			return "", fmt.Errorf("%w: XFCC key %q is Hash only to Unicode case folding", ErrMalformed, k)
		}
		if !asciifold.EqualFold(k, "Hash") {
			continue
		}
		if hash != "" {
			return "", fmt.Errorf("%w: XFCC element has two Hash keys", ErrMalformed)
		}
		hash = strings.Trim(strings.TrimSpace(val), `"`)
		if hash == "" {
			return "", fmt.Errorf("%w: empty XFCC Hash", ErrMalformed)
		}
	}
	if hash == "" {
		return "", ErrNoCertificate
	}
	sum, err := hex.DecodeString(hash)
	if err != nil || len(sum) != sha256.Size {
		return "", fmt.Errorf("%w: XFCC Hash is not hex SHA-256", ErrMalformed)
	}
	return base64.RawURLEncoding.EncodeToString(sum), nil
}

// splitQuoted splits s at sep outside double quotes (XFCC values such as
// Subject may be quoted and hold ',' or ';'; '\' escapes inside quotes).
func splitQuoted(s string, sep byte) ([]string, error) {
	var out []string
	quoted, start := false, 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\' && quoted:
			i++
		case c == '"':
			quoted = !quoted
		case c == sep && !quoted:
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	if quoted {
		return nil, fmt.Errorf("%w: unterminated quote in XFCC", ErrMalformed)
	}
	return append(out, s[start:]), nil
}
