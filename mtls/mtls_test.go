package mtls_test

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"math/big"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/mtls"
)

func cert(t testing.TB) []byte {
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "c"},
		NotBefore: time.Unix(0, 0), NotAfter: time.Unix(1<<32, 0)}
	der, err := x509.CreateCertificate(rand.Reader, tpl, tpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	return der
}

func TestThumbprintForwarded(t *testing.T) {
	der := cert(t)
	p := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
	sum := sha256.Sum256(der)
	want := base64.RawURLEncoding.EncodeToString(sum[:])
	tests := []struct {
		name    string
		v       string
		wantErr error
	}{
		{"pem", p, nil},
		{"path-escaped-pem-nginx", url.PathEscape(p), nil},
		{"query-escaped-pem", url.QueryEscape(p), nil},
		{"base64-der-traefik", base64.StdEncoding.EncodeToString(der), nil},
		{"escaped-base64-der", url.QueryEscape(base64.StdEncoding.EncodeToString(der)), nil},
		{"empty", "", mtls.ErrNoCertificate},
		{"garbage", "not a certificate", mtls.ErrMalformed},
		{"other-pem-block", string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})), mtls.ErrMalformed},
		{"der-not-a-cert", base64.StdEncoding.EncodeToString([]byte("abcdefgh")), mtls.ErrMalformed},
		{"too-large", strings.Repeat("A", mtls.MaxCertBytes+1), mtls.ErrMalformed},
		{"bad-escape", "%zz", mtls.ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := mtls.ThumbprintForwarded(tt.v)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Fatalf("ThumbprintForwarded() = %v, want %v", err, tt.wantErr)
			}
			if err == nil && got != want {
				t.Errorf("ThumbprintForwarded() = %s, want %s", got, want)
			}
		})
	}
}

func TestThumbprintXFCC(t *testing.T) {
	der := cert(t)
	sum := sha256.Sum256(der)
	h := hex.EncodeToString(sum[:])
	want := base64.RawURLEncoding.EncodeToString(sum[:])
	tests := []struct {
		name    string
		v       string
		wantErr error
	}{
		{"one-element", `By=spiffe://example.org/gw;Hash=` + h + `;Subject="CN=c,O=x;y";URI=spiffe://example.org/c`, nil},
		{"hash-only", "Hash=" + h, nil},
		// Envoy escapes a '"' inside a quoted value: the ',' and ';' after
		// it are still inside the quotes, not an element or a pair.
		{"escaped-quote-in-subject", `By=spiffe://example.org/gw;Subject="CN=a\"b,O=x;y";Hash=` + h, nil},
		{"two-elements", "Hash=" + h + ",Hash=" + h, mtls.ErrMalformed},
		{"no-hash", `By=x;Subject="CN=c"`, mtls.ErrNoCertificate},
		{"two-hashes", "Hash=" + h + ";Hash=" + h, mtls.ErrMalformed},
		{"hash-any-ascii-case", "HASH=" + h, nil},
		// Hash only to Unicode case folding (ſ U+017F): another key to
		// Envoy, Hash to Java's equalsIgnoreCase.
		{"hash-long-s", "Ha\u017fh=" + h, mtls.ErrMalformed},
		{"hash-long-s-beside", "Hash=" + h + ";Ha\u017fh=" + h, mtls.ErrMalformed},
		{"short-hash", "Hash=abcd", mtls.ErrMalformed},
		{"unterminated-quote", `Hash=` + h + `;Subject="CN=c`, mtls.ErrMalformed},
		{"empty", "", mtls.ErrNoCertificate},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := mtls.ThumbprintXFCC(tt.v)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Fatalf("ThumbprintXFCC() = %v, want %v", err, tt.wantErr)
			}
			if err == nil && got != want {
				t.Errorf("ThumbprintXFCC() = %s, want %s", got, want)
			}
		})
	}
}

// FuzzForwarded compares ParseForwarded with an independent reading of
// the forms the proxies document (forwardedReadings): an accepted value is
// read by it as one certificate, DER equal to ParseForwarded's, and by no
// spelling as another; a refused value is ErrNoCertificate exactly when
// it is blank, else ErrMalformed. ThumbprintXFCC's answer is the hex Hash
// of the value, and its refusals are named errors too.
func FuzzForwarded(f *testing.F) {
	der := cert(f)
	p := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
	hash := strings.Repeat("0a", 32)
	// Each spelling ParseForwarded reads (path- and query-escaped PEM, raw
	// PEM, base64 and base64url DER) and the XFCC shapes ThumbprintXFCC
	// splits (quoted ',' and ';', two elements, two Hash keys), so that the
	// fuzzer starts at their branches rather than at the first byte.
	for _, s := range []string{url.PathEscape(p), url.QueryEscape(p), p, base64.StdEncoding.EncodeToString(der),
		base64.RawURLEncoding.EncodeToString(der), url.PathEscape(p) + "," + url.PathEscape(p), p + "junk",
		"Hash=00;By=x", "Hash=" + hash, `By=spiffe://a;Hash="` + hash + `";Cert="` + url.PathEscape(p) + `"`,
		`By="a,b;c";Hash=` + hash, "Hash=" + hash + ",Hash=" + hash, "hash=" + hash + ";HASH=" + hash, `Hash="` + hash, `Subject="\";Hash=` + hash} {
		f.Add(s)
	}
	// The documented leniencies (DECISIONS: PEM header lines, base64 line
	// breaks, non-zero trailing bits), and a query-escaped base64 DER.
	b64 := base64.StdEncoding.EncodeToString(der)
	f.Add(string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Headers: map[string]string{"Note": "x"}, Bytes: der})))
	f.Add(b64[:40] + "\n" + b64[40:])
	f.Add(url.QueryEscape(b64))
	f.Fuzz(func(t *testing.T, v string) {
		d, err := mtls.ParseForwarded(v)
		switch {
		case err != nil && strings.TrimSpace(v) == "":
			if !errors.Is(err, mtls.ErrNoCertificate) {
				t.Fatalf("ParseForwarded(%q) = %v, want ErrNoCertificate", v, err)
			}
		case err != nil:
			if !errors.Is(err, mtls.ErrMalformed) {
				t.Fatalf("ParseForwarded(%q) = %v, want ErrMalformed", v, err)
			}
		case d == nil:
			t.Fatalf("ParseForwarded(%q) = nil, nil", v)
		default:
			readings := forwardedReadings(v)
			if len(readings) == 0 {
				t.Fatalf("ParseForwarded(%q) = a certificate no documented form reads", v)
			}
			for _, r := range readings {
				if !bytes.Equal(r.der, d) {
					t.Fatalf("ParseForwarded(%q) = %x; read as %s it is %x", v, d, r.form, r.der)
				}
			}
		}
		th, err := mtls.ThumbprintXFCC(v)
		switch {
		case err != nil && strings.TrimSpace(v) == "":
			if !errors.Is(err, mtls.ErrNoCertificate) {
				t.Fatalf("ThumbprintXFCC(%q) = %v, want ErrNoCertificate", v, err)
			}
		case err != nil:
			if !errors.Is(err, mtls.ErrMalformed) && !errors.Is(err, mtls.ErrNoCertificate) {
				t.Fatalf("ThumbprintXFCC(%q) = %v: not a named error", v, err)
			}
		default:
			sum, derr := base64.RawURLEncoding.Strict().DecodeString(th)
			if derr != nil || len(sum) != sha256.Size || !strings.Contains(strings.ToLower(v), hex.EncodeToString(sum)) {
				t.Fatalf("ThumbprintXFCC(%q) = %q: not the value's hex Hash", v, th)
			}
		}
	})
}

// reading is one certificate an independent reader finds in a forwarded
// value, and the form it read it in.
type reading struct {
	form string
	der  []byte
}

// forwardedReadings reads v as each proxy documents its encoding, with
// the standard library alone: as sent, path-unescaped (nginx's
// $ssl_client_escaped_cert, Envoy) or query-unescaped (Traefik's escaped
// base64), each then as PEM (one CERTIFICATE block, only white space
// around it; header lines and line breaks are the decoder's own) or as
// base64 DER, standard or URL-safe, padded or not (line breaks and
// non-zero trailing bits are the decoder's leniencies). It returns every
// reading that x509.ParseCertificate accepts, each form once.
func forwardedReadings(v string) []reading {
	var out []reading
	add := func(form string, der []byte) {
		if _, err := x509.ParseCertificate(der); err == nil {
			out = append(out, reading{form, der})
		}
	}
	for _, u := range []struct {
		name     string
		unescape func(string) (string, error)
	}{{"sent", func(s string) (string, error) { return s, nil }}, {"path-escaped", url.PathUnescape}, {"query-escaped", url.QueryUnescape}} {
		s, err := u.unescape(strings.TrimSpace(v))
		if err != nil {
			continue
		}
		s = strings.TrimSpace(s)
		if b, rest := pem.Decode([]byte(s)); b != nil && b.Type == "CERTIFICATE" && strings.HasPrefix(s, "-----BEGIN ") && len(bytes.TrimSpace(rest)) == 0 {
			add(u.name+" PEM", b.Bytes)
			continue
		}
		// Padding: any number of '=' at the end, as a decoder that
		// strips it reads (the proxies pad; some readers do not).
		raw := strings.TrimRight(s, "=")
		for _, enc := range []struct {
			name string
			e    *base64.Encoding
		}{{"base64", base64.RawStdEncoding}, {"base64url", base64.RawURLEncoding}} {
			if der, err := enc.e.DecodeString(raw); err == nil {
				add(u.name+" "+enc.name, der)
			}
		}
	}
	return out
}

// TestParseForwardedOneCertificate: a forwarded value holding two
// certificates is not one client certificate. Envoy's CheckRequest headers
// map joins a repeated header with ',' (a client's own header beside the
// one the proxy appended), and a proxy may join the lines of a repeated
// header likewise: the first certificate (the client's, when the proxy
// appends) was hashed and the rest ignored.
func TestParseForwardedOneCertificate(t *testing.T) {
	a, b := cert(t), cert(t)
	pa := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: a}))
	pb := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: b}))
	for name, v := range map[string]string{
		"escaped-merged-comma": url.PathEscape(pa) + "," + url.PathEscape(pb),
		"escaped-merged-space": url.PathEscape(pa) + ", " + url.PathEscape(pb),
		"query-escaped-merged": url.QueryEscape(pa) + "," + url.QueryEscape(pb),
		"pem-two-blocks":       pa + pb,
		"pem-trailing-junk":    pa + "junk",
		// pem.Decode skips a block it cannot decode and returns the next
		// one: a reader that takes the first block reads another value.
		"pem-bad-block-then-good": "-----BEGIN CERTIFICATE-----\n!!!!\n-----END CERTIFICATE-----\n" + pb,
	} {
		if d, err := mtls.ParseForwarded(v); !errors.Is(err, mtls.ErrMalformed) {
			t.Errorf("%s: ParseForwarded() = %d bytes, %v; want ErrMalformed", name, len(d), err)
		}
	}
}
