package redistest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/jwksverify/jwksverify/internal/testkeys"
)

// TLSFiles are PEM files for a TLS Redis on 127.0.0.1: a CA, a server
// certificate it signed (for 127.0.0.1), a client certificate it signed,
// and OtherCA, a CA that signed neither.
type TLSFiles struct {
	CA, ServerCert, ServerKey, ClientCert, ClientKey, OtherCA string
}

// NewTLSFiles writes fresh TLSFiles into a temporary directory of t.
func NewTLSFiles(t testing.TB) TLSFiles {
	t.Helper()
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ca := testkeys.NewCA("redistest CA")
	srvCert, srvKey := ca.Issue("127.0.0.1", false)
	cliCert, cliKey := ca.Issue("jwksverify", true)
	return TLSFiles{
		CA: write("ca.pem", ca.PEM), OtherCA: write("other-ca.pem", testkeys.NewCA("redistest other CA").PEM),
		ServerCert: write("server.pem", srvCert), ServerKey: write("server-key.pem", srvKey),
		ClientCert: write("client.pem", cliCert), ClientKey: write("client-key.pem", cliKey),
	}
}
