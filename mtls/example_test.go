package mtls_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net/url"
	"time"

	"github.com/jwksverify/jwksverify/mtls"
)

// A certificate-bound token (RFC 8705) carries cnf.x5t#S256, the thumbprint
// of the client certificate it was issued to. The thumbprint of the
// certificate a request came with must equal it: from the TLS connection
// (Thumbprint of its DER) or from a proxy that terminated TLS and forwarded
// the certificate URL-encoded in PEM (ThumbprintForwarded: nginx's
// $ssl_client_escaped_cert, Caddy's, Traefik's) or in Envoy's
// x-forwarded-client-cert (ThumbprintXFCC).
func ExampleThumbprint() {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "orders-client"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		panic(err)
	}

	fromTLS := mtls.Thumbprint(der) // r.TLS.PeerCertificates[0].Raw
	forwarded := url.QueryEscape(string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})))
	fromProxy, err := mtls.ThumbprintForwarded(forwarded)
	fmt.Println(len(fromTLS), fromTLS == fromProxy, err)
	// Output: 43 true <nil>
}
