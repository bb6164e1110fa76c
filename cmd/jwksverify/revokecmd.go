package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jwksverify/jwksverify/internal/fileread"
)

// revokeTimeout bounds one call of `jwksverify revoke` to the admin API.
const revokeTimeout = 30 * time.Second

// revoke is `jwksverify revoke add|list|delete`: a client of the admin API
// (/v1/revocations on admin_listen). The caller authenticates as an
// introspection client: --client ID with the secret in
// JWKSVERIFY_ADMIN_SECRET (HTTP Basic), or the secret alone (Bearer). The
// secret is never a flag: a command line is visible to every user of the
// host.
func (a *app) revoke(ctx context.Context, args []string) int {
	if len(args) == 0 {
		fmt.Fprint(a.stderr, commandUsage["revoke"])
		return exitUsage
	}
	op, args := args[0], args[1:]
	// Help and an unknown operation are answered before the admin URL is
	// looked for: whoever asks has none yet.
	switch op {
	case "add", "list", "delete":
	case "-h", "-help", "--help":
		args = []string{"-h"} // the flag set prints the usage and the flags
	default:
		fmt.Fprintf(a.stderr, "jwksverify revoke: unknown operation %q; want add, list or delete\n\n%s", op, commandUsage["revoke"])
		return exitUsage
	}
	fs := a.newFlagSet("revoke")
	admin := fs.String("admin", "", "the admin listener's `URL` (http://HOST:PORT); default $JWKSVERIFY_ADMIN_URL")
	caFile := fs.String("ca-file", "", "PEM `file` of the CAs an https --admin is verified against (default: the system's roots)")
	certFile := fs.String("cert-file", "", "PEM client certificate `file` for an https --admin whose admin_tls.client_ca_file verifies it (with --key-file)")
	keyFile := fs.String("key-file", "", "PEM private key `file` of --cert-file")
	client := fs.String("client", "", "introspection client `ID` to authenticate as (HTTP Basic, secret in $JWKSVERIFY_ADMIN_SECRET); empty: Bearer secret")
	// A flag of the entry given twice is refused: the flag package keeps
	// the last value, so --sub alice --sub bob revoked bob alone, exit 0.
	issuer := new(string)
	fs.Func("issuer", "the configured `issuer`", once(func(v string) error { *issuer = v; return nil }))
	// An empty value (--jti "$JTI", the variable unset) is refused: without
	// the flag the entry names the whole issuer.
	const whole = "leave --jti, --sid, --sub and --client-id out to revoke every token of the issuer"
	var kinds [4]string
	var before string
	fs.Func("jti", "revoke the token with this `jti`", once(nonEmpty(whole, func(v string) { kinds[0] = v })))
	fs.Func("sid", "revoke the session with this `sid`", once(nonEmpty(whole, func(v string) { kinds[1] = v })))
	fs.Func("sub", "revoke the subject's tokens issued before --issued-before", once(nonEmpty(whole, func(v string) { kinds[2] = v })))
	fs.Func("client-id", "revoke the client's tokens (client_id or azp) issued before --issued-before", once(nonEmpty(whole, func(v string) { kinds[3] = v })))
	fs.Func("issued-before", "RFC 3339 `time` (sub, client_id, issuer entries); default now", once(nonEmpty("leave it out for now", func(v string) { before = v })))
	pos, err := parseArgs(fs, args)
	if err != nil {
		return flagExit(err)
	}
	// A value that is not UTF-8 is refused, never sent: encoding/json
	// writes each such byte as U+FFFD, so --sub $'bob\x97' revoked the
	// subject "bob\uFFFD", another subject than the one asked for.
	for i, v := range [...]string{*issuer, kinds[0], kinds[1], kinds[2], kinds[3], before} {
		if !utf8.ValidString(v) {
			name := [...]string{"issuer", "jti", "sid", "sub", "client-id", "issued-before"}[i]
			fmt.Fprintf(a.stderr, "jwksverify revoke: --%s is not UTF-8 (a claim value always is; it would be sent with U+FFFD in place of each such byte)\n", name)
			return exitUsage
		}
	}
	base := *admin
	if base == "" {
		base, _ = a.lookupEnv("JWKSVERIFY_ADMIN_URL")
	}
	u, err := url.Parse(base)
	if base == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		fmt.Fprintln(a.stderr, "jwksverify revoke: --admin http(s)://HOST:PORT (or JWKSVERIFY_ADMIN_URL) is required")
		return exitUsage
	}
	target := strings.TrimSuffix(base, "/") + "/v1/revocations"
	var req *http.Request
	switch op {
	case "add":
		if len(pos) != 0 || *issuer == "" {
			fmt.Fprintln(a.stderr, "jwksverify revoke add: --issuer is required, with at most one of --jti, --sid, --sub, --client-id")
			return exitUsage
		}
		body := map[string]string{"issuer": *issuer}
		for i, name := range []string{"jti", "sid", "sub", "client_id"} {
			if kinds[i] != "" {
				body[name] = kinds[i]
			}
		}
		if before != "" {
			body["issued_before"] = before
		}
		b, _ := json.Marshal(body)
		req, _ = http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(b))
		req.Header.Set("Content-Type", "application/json")
	case "list":
		if len(pos) != 0 {
			fmt.Fprintln(a.stderr, "jwksverify revoke list: no arguments; --issuer filters")
			return exitUsage
		}
		if *issuer != "" {
			target += "?issuer=" + url.QueryEscape(*issuer)
		}
		req, _ = http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	case "delete":
		if len(pos) != 1 || pos[0] == "" {
			fmt.Fprintln(a.stderr, "jwksverify revoke delete: want exactly one entry ID")
			return exitUsage
		}
		req, _ = http.NewRequestWithContext(ctx, http.MethodDelete, target+"/"+url.PathEscape(pos[0]), nil)
	}
	secret, _ := a.lookupEnv("JWKSVERIFY_ADMIN_SECRET")
	// Without a secret or a client certificate the call can only be
	// refused (401 "client authentication failed"), which does not say
	// that the variable was never exported.
	if secret == "" && *certFile == "" {
		fmt.Fprintln(a.stderr, "jwksverify revoke: JWKSVERIFY_ADMIN_SECRET is not set: export the secret of an introspection client (with --client ID for HTTP Basic), or present --cert-file and --key-file to an https --admin whose admin_tls.client_ca_file verifies them")
		return exitUsage
	}
	switch {
	case *client != "":
		req.SetBasicAuth(*client, secret)
	case secret != "":
		req.Header.Set("Authorization", "Bearer "+secret)
	}
	// A redirect is answered as what it is, never followed: a 301, 302
	// or 303 turns the POST of add into a GET (of the list, which answers
	// 200: "done", with nothing stored), and Go's client sends the
	// Authorization header on to the same host name at any port and
	// scheme (https://admin:9443 to http://admin:80, in clear).
	tlsConf, err := adminTLSConfig(*caFile, *certFile, *keyFile)
	if err != nil {
		fmt.Fprintf(a.stderr, "jwksverify revoke: %v\n", err)
		return exitUsage
	}
	if tlsConf != nil && u.Scheme != "https" {
		fmt.Fprintln(a.stderr, "jwksverify revoke: --ca-file, --cert-file and --key-file need an https --admin URL")
		return exitUsage
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = tlsConf
	c := &http.Client{Timeout: revokeTimeout, Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}
	resp, err := c.Do(req)
	if err != nil {
		fmt.Fprintf(a.stderr, "jwksverify revoke %s: %v\n", op, err)
		return exitUndecided
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(io.LimitReader(resp.Body, maxRevokeAnswer+1))
	if err == nil && len(out) > maxRevokeAnswer {
		err = fmt.Errorf("larger than %d bytes", maxRevokeAnswer)
	}
	switch {
	case resp.StatusCode < 300 && err != nil:
		// Part of a list, or of an entry, is not an answer: never exit 0
		// with it. The change may have been made (the status came first).
		fmt.Fprintf(a.stderr, "jwksverify revoke %s: %s, but the answer could not be read whole: %v (`jwksverify revoke list` shows the entries)\n", op, resp.Status, err)
		return exitUndecided
	case resp.StatusCode < 300:
		a.stdout.Write(out)
		if resp.StatusCode == http.StatusNoContent {
			fmt.Fprintf(a.stdout, "{\"deleted\":%q}\n", pos[0])
		}
		return exitOK
	case resp.StatusCode >= 500:
		fmt.Fprintf(a.stderr, "jwksverify revoke %s: %s: %s\n", op, resp.Status, shownBody(out))
		return exitUndecided
	}
	if loc := resp.Header.Get("Location"); resp.StatusCode < 400 && loc != "" {
		fmt.Fprintf(a.stderr, "jwksverify revoke %s: %s to %q, not followed: give the admin listener's own URL (--admin, JWKSVERIFY_ADMIN_URL)\n", op, resp.Status, loc)
		return exitFailure
	}
	fmt.Fprintf(a.stderr, "jwksverify revoke %s: %s: %s\n", op, resp.Status, shownBody(out))
	return exitFailure
}

// maxPEMFile bounds a CA, certificate or key file revoke reads.
const maxPEMFile = 1 << 20

// adminTLSConfig is the TLS configuration of an https --admin: the CAs of
// caFile (else the system's roots) and the client certificate of certFile
// and keyFile (for admin_tls.client_ca_file). Nil when none is given.
func adminTLSConfig(caFile, certFile, keyFile string) (*tls.Config, error) {
	if caFile == "" && certFile == "" && keyFile == "" {
		return nil, nil
	}
	conf := &tls.Config{MinVersion: tls.VersionTLS12}
	if caFile != "" {
		pem, _, err := fileread.Regular(caFile, maxPEMFile)
		if err != nil {
			return nil, fmt.Errorf("--ca-file: %w", err)
		}
		conf.RootCAs = x509.NewCertPool()
		if !conf.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--ca-file %s: no PEM certificate", caFile)
		}
	}
	if (certFile == "") != (keyFile == "") {
		return nil, errors.New("--cert-file and --key-file go together")
	}
	if certFile != "" {
		certPEM, _, err := fileread.Regular(certFile, maxPEMFile)
		if err != nil {
			return nil, fmt.Errorf("--cert-file: %w", err)
		}
		keyPEM, _, err := fileread.Regular(keyFile, maxPEMFile)
		if err != nil {
			return nil, fmt.Errorf("--key-file: %w", err)
		}
		cert, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			// Not err itself: it may quote the key's PEM.
			return nil, fmt.Errorf("--cert-file %s and --key-file %s are not a certificate and its key", certFile, keyFile)
		}
		conf.Certificates = []tls.Certificate{cert}
	}
	return conf, nil
}

// once is a flag's setter that refuses a second value: a command that
// names one entry must not silently drop a value it was given.
func once(set func(string) error) func(string) error {
	given := false
	return func(v string) error {
		if given {
			return errors.New("given twice; one entry a call (run revoke add again for another)")
		}
		given = true
		return set(v)
	}
}

// maxRevokeAnswer bounds an answer of the admin API that is read.
const maxRevokeAnswer = 64 << 20

// maxShownBody bounds the part of a refusal's body shown on stderr.
const maxShownBody = 2 << 10

// shownBody is a refusal's body as stderr shows it: at most maxShownBody
// bytes (a proxy's error page may be large), on one line, its control
// characters and bytes that are not UTF-8 escaped (a terminal would run
// an escape sequence the answer holds).
func shownBody(b []byte) string {
	cut := len(b) > maxShownBody
	if cut {
		b = b[:maxShownBody]
	}
	b = bytes.TrimRight(b, "\r\n")
	var sb strings.Builder
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		switch {
		case r == utf8.RuneError && n <= 1:
			fmt.Fprintf(&sb, `\x%02x`, b[0])
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0):
			fmt.Fprintf(&sb, `\u%04x`, r)
		default:
			sb.Write(b[:n])
		}
		b = b[n:]
	}
	s := sb.String()
	if cut {
		s += " …(cut)"
	}
	return s
}
