package testkeys

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"
)

// CA is a test certificate authority, made fresh for each test. Its
// certificates are for loopback only and protect nothing.
type CA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	// PEM is the CA certificate, PEM-encoded.
	PEM []byte
	// Pool holds the CA certificate.
	Pool *x509.CertPool
}

var serial atomic.Int64

// NewCA makes a CA named name.
func NewCA(name string) *CA {
	key := must(ecdsa.GenerateKey(elliptic.P256(), rand.Reader))
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(serial.Add(1)),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	der := must(x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key))
	ca := &CA{cert: must(x509.ParseCertificate(der)), key: key, PEM: pemBlock("CERTIFICATE", der), Pool: x509.NewCertPool()}
	ca.Pool.AddCert(ca.cert)
	return ca
}

// Issue returns a certificate (PEM) and its key (PEM) for cn: a server
// certificate for 127.0.0.1, ::1 and localhost, or a client certificate.
func (ca *CA) Issue(cn string, client bool) (certPEM, keyPEM []byte) {
	key := must(ecdsa.GenerateKey(elliptic.P256(), rand.Reader))
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial.Add(1)),
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if client {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	} else {
		tmpl.DNSNames = []string{"localhost"}
		tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}
	}
	der := must(x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key))
	return pemBlock("CERTIFICATE", der), pemBlock("PRIVATE KEY", must(x509.MarshalPKCS8PrivateKey(key)))
}

// ClientCert returns a client certificate for cn, for tls.Config.Certificates.
func (ca *CA) ClientCert(cn string) tls.Certificate {
	c, k := ca.Issue(cn, true)
	return must(tls.X509KeyPair(c, k))
}

// WriteServer writes a server certificate for cn and its key as cert.pem
// and key.pem in dir (atomically: a reader sees the old or the new file),
// and returns their paths.
func (ca *CA) WriteServer(dir, cn string) (certFile, keyFile string) {
	c, k := ca.Issue(cn, false)
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	writeAtomic(keyFile, k)
	writeAtomic(certFile, c)
	return certFile, keyFile
}

func writeAtomic(path string, data []byte) {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		panic(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		panic(err)
	}
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
