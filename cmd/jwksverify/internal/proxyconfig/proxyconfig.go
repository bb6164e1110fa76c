// Package proxyconfig writes the configuration of a proxy (nginx, Caddy,
// Traefik, Envoy) that asks jwksverify about every request: the claim
// headers a configuration names cleared before the auth call and set from
// its answer, the original-request headers of the forward_auth.proxy preset
// set over the client's, jwksverify's 401, 403 and 503 passed on, and proxy
// timeouts longer than jwksverify may take to answer. `jwksverify
// proxy-config` prints it; the files in deploy/ are its output for
// testdata/config/example.yaml.
package proxyconfig

import (
	"bytes"
	"cmp"
	"embed"
	"fmt"
	"io"
	"net"
	"net/textproto"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/template"
	"time"

	"github.com/jwksverify/jwksverify/config"
	"github.com/jwksverify/jwksverify/jwks"
	"github.com/jwksverify/jwksverify/mint"
	"github.com/jwksverify/jwksverify/request"
	"github.com/jwksverify/jwksverify/server"
	"github.com/jwksverify/jwksverify/verify"
)

// Defaults of [Input]'s addresses: a proxy on loopback in front of an
// application on loopback.
const (
	DefaultListen   = "127.0.0.1:8000"
	DefaultUpstream = "127.0.0.1:9000"
	// DefaultGRPCPort is the port Envoy's gRPC ext_authz cluster uses when
	// the configuration has no grpc_listen.
	DefaultGRPCPort = "9001"
)

// Input is what a proxy configuration is written from.
type Input struct {
	// Proxy is the proxy to configure: nginx, caddy, traefik or envoy.
	Proxy request.Proxy
	// Listen is where clients connect to the proxy ("" means
	// DefaultListen). Envoy's two listeners use its port and the next.
	Listen string
	// Upstream is the application's address ("" means DefaultUpstream).
	Upstream string
	// JWKSVerify is jwksverify's HTTP address (host:port).
	JWKSVerify string
	// Admin is jwksverify's admin_listen address (host:port), "" when the
	// configuration has none: /readyz is served there only, so Envoy's
	// health check of the HTTP cluster goes there.
	Admin string
	// GRPC is jwksverify's gRPC address; "" means JWKSVerify's host with
	// DefaultGRPCPort (Envoy's gRPC listener then needs grpc_listen set).
	GRPC string
	// ClaimHeaders are the headers jwksverify may set on an allowed answer,
	// canonical and sorted: each is cleared before the auth call and set
	// from the answer only.
	ClaimHeaders []string
	// Timeout bounds the auth call: longer than jwksverify may take to
	// answer, so its answer always arrives.
	Timeout time.Duration
	// ClientCertHeader is the configuration's mtls.client_cert_header, ""
	// for none. Every proxy then drops a client's own copy of it, so that
	// it never reaches jwksverify or the application; nginx sends the
	// certificate it verified ($ssl_client_escaped_cert) in it to the auth
	// call, Caddy the one it verified as base64 DER, and Traefik's must be
	// set after the clearing middleware (passTLSClientCert).
	ClientCertHeader string
	// ConfigProxy is the configuration's forward_auth.proxy. None means
	// unset: Write notes that it should be set.
	ConfigProxy request.Proxy
	// StripAuthorization is the configuration's
	// forward_auth.strip_authorization: nginx, Caddy and Traefik then drop
	// Authorization from an allowed request before the application (Envoy
	// does it from jwksverify's answer).
	StripAuthorization bool
	// MintHeader is the configuration's mint.header (canonical) when it
	// mints, "" when it has no mint section: the proxy sends the
	// application the minted token from jwksverify's answer (replacing the
	// client's Authorization), and a route that mints nothing keeps what it
	// had.
	MintHeader string
	// SourceHeaders are the configuration's header token sources other than
	// Authorization (canonical), and Content-Type when a source is a query
	// parameter: Envoy sends the authorization call only the headers its
	// file lists, and one it did not send would reach the application
	// unverified (a query token is refused beside a form body).
	SourceHeaders []string
	// AnswerBytes bounds the header section of jwksverify's answer to the
	// auth call, in bytes, a multiple of 4096: every claim header at
	// verify.MaxExtractedLen, the minted token at its largest, and room
	// for the rest. nginx reads that section into proxy_buffer_size (one
	// 4 KiB page by default) and answers a larger one 502, which its file
	// turns into 503 jwksverify_unreachable for a token jwksverify allowed.
	AnswerBytes int
}

// nginxTokenBytes bounds a token that reaches jwksverify through nginx: it
// comes in one header line or the request line, each at most
// large_client_header_buffers' 8 KiB (nginx's default; the file keeps it).
const nginxTokenBytes = 8192

// answerBytes bounds the header section of an allowed answer for p (see
// Input.AnswerBytes), for source tokens of at most tokenBytes.
func answerBytes(p *config.Plan, claimHeaders []string, mintHeader string, tokenBytes int) int {
	n := 4096 // the status line, Date, Cache-Control, Content-Type, Content-Length, WWW-Authenticate
	for _, h := range claimHeaders {
		n += len(h) + len(": \r\n") + verify.MaxExtractedLen
	}
	if mintHeader != "" {
		// The fixed claims, header and signature (an RSA-4096 one is 683
		// characters), then sub, client_id, azp and each copied claim, each
		// at most the source token (base64 of JSON no larger than the
		// source's).
		copies := 0
		for _, mp := range p.Server.MintPolicies {
			copies = max(copies, mp.Copies())
		}
		n += len(mintHeader) + len(": Bearer \r\n") + 2048 + (3+copies)*tokenBytes
	}
	return (n + 4095) / 4096 * 4096
}

// headerSources are the places a configuration names claim headers in:
// adding a source (per-policy claims_to_headers) is one line here.
var headerSources = []func(*config.Plan) []string{
	issuerHeaders,
	policyHeaders,
}

// policyHeaders are the policies' own claims_to_headers headers.
func policyHeaders(p *config.Plan) []string {
	var hs []string
	for _, pol := range p.Server.Policies.Policies() {
		for _, ch := range pol.ClaimHeaders() {
			hs = append(hs, ch.Header)
		}
	}
	return hs
}

// issuerHeaders are the issuers' claims_to_headers headers.
func issuerHeaders(p *config.Plan) []string {
	var hs []string
	for _, m := range p.Server.ClaimsToHeaders {
		for _, h := range m {
			hs = append(hs, h)
		}
	}
	return hs
}

// ClaimHeaders returns every header the plan may have jwksverify set on an
// allowed answer, canonical, sorted, each once.
func ClaimHeaders(p *config.Plan) []string {
	var hs []string
	for _, src := range headerSources {
		for _, h := range src(p) {
			hs = append(hs, textproto.CanonicalMIMEHeaderKey(h))
		}
	}
	slices.Sort(hs)
	return slices.Compact(hs)
}

// authMargin is what the proxy waits beyond jwksverify's longest answer.
const authMargin = time.Second

// Timeout returns how long a proxy waits for jwksverify's answer under p:
// more than the server's write timeout (which covers every unknown-kid
// wait, config.Timeouts) and more than any remote issuer's fetch plus its
// unknown-kid wait, in whole seconds.
func Timeout(p *config.Plan) time.Duration {
	longest := p.HTTP.Write
	for _, is := range p.Issuers {
		if is.Local() {
			continue
		}
		fetch := cmp.Or(is.JWKS.FetchTimeout, jwks.DefaultFetchTimeout)
		wait := cmp.Or(is.JWKS.UnknownKidWait, jwks.DefaultUnknownKidWait)
		longest = max(longest, fetch+wait)
	}
	return (longest + authMargin + time.Second - 1).Truncate(time.Second)
}

// FromPlan returns the input for proxy px under plan p. It returns
// ErrMismatch when p's forward_auth.proxy names another preset, ErrTLS
// when a listener the file connects to serves TLS.
func FromPlan(p *config.Plan, px request.Proxy) (Input, error) {
	if _, ok := templates[px]; !ok {
		return Input{}, fmt.Errorf("%w %q, want one of %s", ErrProxy, px, strings.Join(request.Proxies(), ", "))
	}
	if cp := p.Server.Proxy; cp != request.None && cp != px {
		return Input{}, fmt.Errorf("%w: the configuration says forward_auth.proxy: %s, not %s", ErrMismatch, cp, px)
	}
	// The files speak plain HTTP (and plaintext gRPC) to jwksverify: to a
	// TLS listener every auth call would fail (closed, but an outage).
	switch {
	case p.TLS.On():
		return Input{}, fmt.Errorf("%w: listen has tls, and the %s file speaks plain HTTP to it; serve that listener without tls on an address only the proxy reaches, or set up the proxy's TLS to jwksverify by hand", ErrTLS, px)
	case px == request.Envoy && p.AdminTLS.On():
		return Input{}, fmt.Errorf("%w: admin_listen has admin_tls, and the envoy file health-checks /readyz there in plain HTTP; add the cluster's transport_socket by hand", ErrTLS)
	case px == request.Envoy && p.GRPCListen != "" && p.GRPCTLS.On():
		return Input{}, fmt.Errorf("%w: grpc_listen has grpc_tls, and the envoy file speaks plaintext gRPC to it; serve it without grpc_tls on an address only Envoy reaches, or add the cluster's transport_socket by hand", ErrTLS)
	}
	in := Input{
		Proxy:              px,
		JWKSVerify:         dialable(p.Listen),
		ClaimHeaders:       ClaimHeaders(p),
		ClientCertHeader:   textproto.CanonicalMIMEHeaderKey(p.Server.ClientCert.Header),
		Timeout:            Timeout(p),
		ConfigProxy:        p.Server.Proxy,
		StripAuthorization: p.Server.StripAuthorization,
	}
	if p.GRPCListen != "" {
		in.GRPC = dialable(p.GRPCListen)
	}
	if _, port, _ := net.SplitHostPort(p.AdminListen); port != "" && port != "0" {
		in.Admin = dialable(p.AdminListen)
	}
	if p.Mint != nil {
		in.MintHeader = textproto.CanonicalMIMEHeaderKey(cmp.Or(p.Mint.Header, mint.DefaultHeader))
	}
	in.AnswerBytes = answerBytes(p, in.ClaimHeaders, in.MintHeader, min(cmp.Or(p.Verify.MaxTokenBytes, verify.DefaultMaxTokenBytes), nginxTokenBytes))
	for _, ts := range p.Server.TokenSources {
		h := textproto.CanonicalMIMEHeaderKey(ts.Header)
		if ts.Query != "" {
			// A query token beside a form body is refused (the
			// application may read the body's parameter first), told by
			// the request's Content-Type.
			h = "Content-Type"
		}
		if h != "" && h != "Authorization" && !slices.Contains(in.SourceHeaders, h) {
			in.SourceHeaders = append(in.SourceHeaders, h)
		}
	}
	return in, nil
}

// checkAddress checks that a is host:port as every proxy's file reads it:
// a host that is an IP address or a host name as a request may name one
// (request.CheckHost: ASCII letters, digits, '-', '_' and '.', no empty
// label; '_' as in a Docker Compose service name), or empty for every
// interface, and a port in [1, 65535]. Anything else (a ';', a quote, a
// newline) would be written into the file as syntax. "" is no address.
func checkAddress(a string) error {
	if a == "" {
		return nil
	}
	host, port, err := net.SplitHostPort(a)
	if err != nil {
		return fmt.Errorf("proxyconfig: address %q: %w", a, err)
	}
	n, perr := strconv.Atoi(port)
	name := host == "" || net.ParseIP(host) != nil || request.CheckHost(host) == nil
	if perr != nil || n < 1 || n > 65535 || strconv.Itoa(n) != port || !name {
		return fmt.Errorf("proxyconfig: address %q: want HOST:PORT, HOST an IP address or a DNS name, PORT in [1, 65535]", a)
	}
	return nil
}

// dialable turns a listen address into one to connect to: an unspecified
// host (":8080", "0.0.0.0:8080", "[::]:8080") becomes loopback.
func dialable(listen string) string {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return listen
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}

//go:embed templates
var templateFS embed.FS

// templates are the proxies' templates, by preset.
var templates = map[request.Proxy]*template.Template{
	request.Nginx:   parse("nginx.conf.tmpl"),
	request.Caddy:   parse("Caddyfile.tmpl"),
	request.Traefik: parse("traefik.yaml.tmpl"),
	request.Envoy:   parse("envoy.yaml.tmpl"),
}

func parse(name string) *template.Template {
	return template.Must(template.New(name).Funcs(template.FuncMap{
		"lower": strings.ToLower,
		// twins: the header and the names a CGI upstream reads as it
		// (server.HeaderTwins), each to be cleared.
		"twins": func(h string) []string { return append([]string{h}, server.HeaderTwins(h)...) },
		// onlytwins: the names a CGI upstream reads as h, without h.
		"onlytwins": server.HeaderTwins,
		// hyphentwin: for a name holding '_', its spelling with '-' only,
		// the one twin nginx passes on (it drops every name with '_').
		"hyphentwin": func(h string) []string {
			if !strings.Contains(h, "_") {
				return nil
			}
			return []string{textproto.CanonicalMIMEHeaderKey(strings.ReplaceAll(h, "_", "-"))}
		},
		// listedre: a regular expression that matches a Connection value
		// listing one of the names (a comma-separated token, any case, as
		// a proxy removing what Connection lists compares it), "" for no
		// names.
		"listedre": func(hs []string, more ...string) string {
			var alts []string
			for _, h := range append(slices.Clip(hs), more...) {
				if h != "" {
					alts = append(alts, regexp.QuoteMeta(h))
				}
			}
			if len(alts) == 0 {
				return ""
			}
			return `(?i)(?:^|,)\s*(?:` + strings.Join(alts, "|") + `)\s*(?:,|$)`
		},
		"nginxvar": func(h string) string { return strings.ReplaceAll(strings.ToLower(h), "-", "_") },
		"seconds":  func(d time.Duration) string { return strconv.FormatInt(int64(d/time.Second), 10) },
		"kib":      func(n int) string { return strconv.Itoa((n + 1023) / 1024) },
		"host":     func(a string) string { h, _, _ := net.SplitHostPort(a); return h },
		"port":     func(a string) string { _, p, _ := net.SplitHostPort(a); return p },
		"nextport": func(a string) (string, error) {
			_, p, _ := net.SplitHostPort(a)
			n, err := strconv.Atoi(p)
			if err != nil || n >= 65535 {
				return "", fmt.Errorf("listen %q: no next port", a)
			}
			return strconv.Itoa(n + 1), nil
		},
	}).ParseFS(templateFS, "templates/"+name))
}

// original is the template's view of the preset's original-request
// headers: each header name with the proxy's expression for its value.
type original struct{ Name, Value string }

// values are each proxy's expressions for method, URI, host and proto, in
// request.Headers's order. Caddy and Traefik set their preset's headers
// themselves. nginx's host is the Host header as sent, port included (DPoP's
// htu compares it), the one the application is sent too
// ($jwksverify_host in nginx.conf.tmpl).
var values = map[request.Proxy][4]string{
	request.Nginx: {"$request_method", "$request_uri", "$jwksverify_host", "$scheme"},
}

// forwarding is what every proxy file does about the headers applications
// read the request's host, scheme, port or path from
// (request.ForwardedHeaders): it sets Set to what jwksverify decided on and
// removes Removed, each with its CGI twins (server.HeaderTwins), so that a
// client's Forwarded: host=admin.internal or X_Forwarded_Host never reaches
// an application that trusts it, nor an X-Original-URL one that routes by
// it.
var forwarding = func() (f struct{ Set, Removed []string }) {
	f.Set, f.Removed = request.ForwardedHeaders()
	return f
}()

// Write writes the configuration of in.Proxy to w.
func Write(w io.Writer, in Input) error {
	t, ok := templates[in.Proxy]
	if !ok {
		return fmt.Errorf("%w %q", ErrProxy, in.Proxy)
	}
	in.Listen = cmp.Or(in.Listen, DefaultListen)
	in.Upstream = cmp.Or(in.Upstream, DefaultUpstream)
	for _, a := range []string{in.Listen, in.Upstream, in.JWKSVerify, in.GRPC, in.Admin} {
		if err := checkAddress(a); err != nil {
			return err
		}
	}
	grpcSet := in.GRPC != ""
	if !grpcSet {
		h, _, _ := net.SplitHostPort(in.JWKSVerify)
		in.GRPC = net.JoinHostPort(h, DefaultGRPCPort)
	}
	data := struct {
		Input
		GRPCSet   bool
		Original  []original
		Forwarded []string // forwarding.Set
		Removed   []string // forwarding.Removed
		Overrides []string // request.OverrideHeaders: Envoy sends ext_authz only the headers it lists
	}{Input: in, GRPCSet: grpcSet, Forwarded: forwarding.Set, Removed: forwarding.Removed, Overrides: request.OverrideHeaders()}
	if h, ok := in.Proxy.Headers(); ok {
		v := values[in.Proxy]
		for i, name := range []string{h.Method, h.URI, h.Host, h.Proto} {
			data.Original = append(data.Original, original{name, v[i]})
		}
	}
	var b bytes.Buffer
	if err := t.Execute(&b, data); err != nil {
		return fmt.Errorf("proxyconfig: %s: %w", in.Proxy, err)
	}
	_, err := w.Write(b.Bytes())
	return err
}
