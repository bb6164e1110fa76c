package server

import (
	"cmp"
	"errors"
	"fmt"
	"net/textproto"
	"strings"

	"golang.org/x/net/http/httpguts"

	"github.com/jwksverify/jwksverify/request"
	"github.com/jwksverify/jwksverify/verify"
)

// Bounds of the limits in [Options], checked by [CheckOptions] (and so by
// [New]).
const (
	MaxMaxBodyBytes     = 64 << 20
	MaxMaxBatch         = 10000
	MaxRejectionLogRate = 100000
	// MinClientSecretBytes is the shortest secret of an introspection
	// client (IntrospectionClients).
	MinClientSecretBytes = 16
)

// CheckOptions reports whether [New] would refuse the limits, token
// sources and callers of opts, without building anything: MaxBodyBytes,
// MaxBatch and RejectionLogRate are zero (their default) or within their
// bounds, and a body can hold the largest token the verifier takes,
// maxTokenBytes (zero: verify.DefaultMaxTokenBytes); each TokenSources entry
// passes [CheckTokenSource], and a query source comes with a Proxy; each
// introspection client has an id of its own without a colon and a secret
// of at least [MinClientSecretBytes]; ClientCert.Header is a header name,
// and ClientCert.XFCC comes with no Proxy that reads its own headers
// (nginx, Caddy, Traefik set no x-forwarded-client-cert).
// The error wraps [ErrInvalidOptions] and names the field first ("MaxBatch:
// 20000 is out of range [1, 10000]", "TokenSources[1]: ...").
func CheckOptions(opts Options, maxTokenBytes int) error {
	seen := make(map[string]bool, len(opts.IntrospectionClients))
	secrets := make(map[string]bool, len(opts.IntrospectionClients))
	for i, c := range opts.IntrospectionClients {
		var why string
		switch {
		case c.ID == "":
			why = "the id is empty"
		case strings.Contains(c.ID, ":"):
			why = fmt.Sprintf("id %q contains a colon: HTTP Basic splits at the first one, so it would never match", c.ID)
		case seen[c.ID]:
			why = fmt.Sprintf("id %q is listed twice", c.ID)
		case len(c.Secret) < MinClientSecretBytes:
			why = fmt.Sprintf("the secret is shorter than %d bytes", MinClientSecretBytes)
		case secrets[c.Secret]:
			// A Bearer caller is known by its secret alone.
			why = fmt.Sprintf("id %q has the secret of another client: a Bearer caller could not be told apart", c.ID)
		}
		if why != "" {
			return invalidOption(fmt.Sprintf("IntrospectionClients[%d]", i), "%s", why)
		}
		seen[c.ID], secrets[c.Secret] = true, true
	}
	if h := opts.ClientCert.Header; h != "" {
		if err := CheckTokenSource(TokenSource{Header: h}); err != nil {
			return invalidOption("ClientCert.Header", "%w", err)
		}
	}
	if _, reads := opts.Proxy.Headers(); reads && opts.ClientCert.XFCC {
		// Only Envoy sets (and sanitizes) x-forwarded-client-cert: behind
		// nginx, Caddy or Traefik it is whatever the client sent.
		return invalidOption("ClientCert.XFCC", "Envoy's x-forwarded-client-cert, which %s passes from the client as it came: use ClientCert.Header", opts.Proxy)
	}
	for i, ts := range opts.TokenSources {
		if err := CheckTokenSource(ts); err != nil {
			return invalidOption(fmt.Sprintf("TokenSources[%d]", i), "%w", err)
		}
		if ts.Query != "" && opts.Proxy == request.None {
			return invalidOption(fmt.Sprintf("TokenSources[%d]", i), "query %q needs Proxy (forward_auth.proxy, one of %s): a query token is read only from the original request the proxy reports", ts.Query, strings.Join(request.Proxies(), ", "))
		}
	}
	maxTokenBytes = cmp.Or(maxTokenBytes, verify.DefaultMaxTokenBytes)
	switch n := opts.MaxBodyBytes; {
	case n != 0 && (n < int64(maxTokenBytes) || n > MaxMaxBodyBytes):
		return invalidOption("MaxBodyBytes", "%d is out of range [%d (the largest token the verifier takes), %d]", n, maxTokenBytes, MaxMaxBodyBytes)
	}
	if n := opts.MaxBatch; n < 0 || n > MaxMaxBatch {
		return invalidOption("MaxBatch", "%d is out of range [1, %d]", n, MaxMaxBatch)
	}
	if n := opts.RejectionLogRate; n > MaxRejectionLogRate {
		return invalidOption("RejectionLogRate", "%d is above %d", n, MaxRejectionLogRate)
	}
	return nil
}

// This file holds the rules on what configuration may name, exported for
// configuration loaders: [New] and [Middleware] apply the same functions.

// CheckClaimHeader reports whether name may carry a claim value on an allowed
// forward-auth response (Options.ClaimsToHeaders): nil for a valid field name
// that the proxy may copy to the upstream request. It refuses the headers
// that frame or route the response (Connection, Content-*, Host, Keep-Alive,
// Te, Trailer, Transfer-Encoding, Upgrade; Cache-Control, which the answer
// sets itself: no-store), that carry credentials or sessions
// (Authorization, Cookie, DPoP, Set-Cookie, WWW-Authenticate, Proxy-*),
// that proxies trust as facts about the client or the original request
// (Forwarded, X-Forwarded-*, X-Real-Ip, X-Original-*, and the other host,
// scheme and path headers of request.ForwardedHeaders), the method
// overrides (request.IsOverrideHeader), and Envoy's own
// (X-Envoy-*): a claim must never become any of them. The message has no
// package prefix, for the caller to prefix with where the name came from.
func CheckClaimHeader(name string) error {
	if !httpguts.ValidHeaderFieldName(name) {
		return fmt.Errorf("%q is not a valid HTTP header name", name)
	}
	// A CGI, FastCGI or WSGI application reads X_Forwarded_Host as
	// X-Forwarded-Host (HTTP_X_FORWARDED_HOST): a twin is refused as the
	// header it stands for.
	c := textproto.CanonicalMIMEHeaderKey(strings.ReplaceAll(name, "_", "-"))
	reserved := strings.HasPrefix(c, "Content-") || strings.HasPrefix(c, "Proxy-") ||
		strings.HasPrefix(c, "X-Forwarded-") || strings.HasPrefix(c, "X-Original-") || strings.HasPrefix(c, "X-Envoy-")
	switch c {
	case "Authorization", "Cache-Control", "Connection", "Cookie", "Dpop", "Forwarded", "Host", "Keep-Alive", "Set-Cookie", "Te",
		"Trailer", "Transfer-Encoding", "Upgrade", "Www-Authenticate", "X-Real-Ip":
		reserved = true
	}
	// The host, scheme, method and path headers applications read the
	// request from, which every proxy-config file sets or drops as the
	// client's (request.ForwardedHeaders).
	reserved = reserved || request.IsForwardedHeader(c)
	// A method override (X-HTTP-Method-Override and its kin): the request
	// is decided for the methods the client's names, and a claim's value
	// there would have the application run one no policy decided.
	reserved = reserved || request.IsOverrideHeader(c)
	if reserved {
		return fmt.Errorf("%q is a header the proxy must not take from an auth response", name)
	}
	if separators(name) > maxTwinSeparators {
		return fmt.Errorf("%q has more than %d '-' or '_': its CGI twins (HeaderTwins) could not all be cleared", name, maxTwinSeparators)
	}
	return nil
}

// CheckTokenSource reports whether ts names one place for a token: exactly
// one of Header, Cookie and Query, Prefix only with Header, and a valid
// header name. The message has no package prefix, for the caller to prefix
// with where the source came from.
func CheckTokenSource(ts TokenSource) error {
	n := 0
	for _, f := range []string{ts.Header, ts.Cookie, ts.Query} {
		if f != "" {
			n++
		}
	}
	switch {
	case n != 1:
		return errors.New("exactly one of header, cookie, query is required")
	case ts.Prefix != "" && ts.Header == "":
		return errors.New("prefix goes only with header")
	case ts.Header != "" && !httpguts.ValidHeaderFieldName(ts.Header):
		return fmt.Errorf("header: %q is not a valid HTTP header name", ts.Header)
	case separators(ts.Header) > maxTwinSeparators:
		return fmt.Errorf("header: %q has more than %d '-' or '_': its CGI twins (HeaderTwins) could not all be checked", ts.Header, maxTwinSeparators)
	}
	return nil
}

// separators counts the '-' and '_' of a header name.
func separators(name string) int {
	return strings.Count(name, "-") + strings.Count(name, "_")
}

// cgiName is the name a CGI upstream reads the header name as
// (HTTP_X_AUTH_SUBJECT for X-Auth-Subject and X_Auth_Subject).
func cgiName(name string) string {
	return strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// checkAnswerHeaders refuses a header an allowed answer sets for the
// upstream (an issuer's or a policy's claims_to_headers, the mint header
// other than Authorization) that is also a header read from the request
// (the client certificate header, a token source's header), or a CGI twin
// of one. Every allowed answer sets each identity header, and the proxies
// copy them over the request's, so the upstream would read a claim where it
// reads the certificate the proxy verified; and the proxies clear a
// client's own copy before the auth call, so a token or certificate there
// would never arrive.
func (s *Server) checkAnswerHeaders() error {
	type read struct{ header, what string }
	var reads []read
	if s.certHeader != "" {
		reads = append(reads, read{s.certHeader, "the client certificate header (ClientCert.Header)"})
	}
	for _, src := range s.sources {
		if src.header != "" {
			reads = append(reads, read{src.header, "a token source's header"})
		}
	}
	answers := make([]string, 0, len(s.identity)+1)
	for _, h := range s.identity {
		answers = append(answers, h.header)
	}
	if s.minter != nil && s.mintHeader != "Authorization" {
		answers = append(answers, s.mintHeader)
	}
	for _, a := range answers {
		for _, r := range reads {
			if cgiName(a) == cgiName(r.header) {
				return fmt.Errorf("%w: answer header %q (claims_to_headers or the mint header) is also %s %q (or a CGI twin of it)", ErrInvalidOptions, a, r.what, r.header)
			}
		}
	}
	return nil
}
