// Package request reads the original request that a proxy asks jwksverify
// about, from exactly the place the configured proxy preset names, and
// normalizes its host and path the one way that route matching, policies,
// query token sources and DPoP's htu all use.
//
// A forward-auth call is not the request it decides: nginx's auth_request,
// Traefik's forwardAuth and Caddy's forward_auth send a subrequest that
// carries the original method, URI and host in headers, and Envoy's HTTP
// ext_authz appends the original path to the service's prefix. Every preset
// reads its own headers only, never another preset's: a client can send any
// header, and only the ones the proxy overwrites can be trusted.
package request

import (
	"errors"
	"fmt"
	"iter"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"

	"github.com/jwksverify/jwksverify/internal/asciifold"
)

// Proxy is a forward_auth.proxy preset: which proxy sends the auth call, and
// so where the original request is.
type Proxy string

// The presets. [None] means the original request is not known: routes,
// policies that read the request, query token sources and DPoP need one.
const (
	None    Proxy = ""
	Nginx   Proxy = "nginx"   // X-Original-Method, X-Original-URI, X-Original-Host, X-Original-Proto
	Traefik Proxy = "traefik" // X-Forwarded-Method, X-Forwarded-Uri, X-Forwarded-Host, X-Forwarded-Proto
	Caddy   Proxy = "caddy"   // as traefik
	Envoy   Proxy = "envoy"   // the forwarded request itself: method, Host, path below the prefix
)

// Proxies returns the preset names, for configuration errors and docs.
func Proxies() []string { return []string{"nginx", "traefik", "caddy", "envoy"} }

// ParseProxy returns the preset named s ("" is [None]).
func ParseProxy(s string) (Proxy, error) {
	switch p := Proxy(s); p {
	case None, Nginx, Traefik, Caddy, Envoy:
		return p, nil
	}
	return None, fmt.Errorf("unknown proxy %q, want one of %s", s, strings.Join(Proxies(), ", "))
}

// Headers names the request headers the preset reads (method, URI, host,
// proto), canonical; nil for [Envoy] and [None]. A proxy configuration must
// set every one of them, overwriting what the client sent.
type Headers struct {
	Method, URI, Host, Proto string
}

// Headers returns the headers p reads, or false when p reads the forwarded
// request itself (Envoy) or nothing (None).
func (p Proxy) Headers() (Headers, bool) {
	switch p {
	case Nginx:
		return Headers{"X-Original-Method", "X-Original-Uri", "X-Original-Host", "X-Original-Proto"}, true
	case Traefik, Caddy:
		return Headers{"X-Forwarded-Method", "X-Forwarded-Uri", "X-Forwarded-Host", "X-Forwarded-Proto"}, true
	}
	return Headers{}, false
}

// Original is the request a proxy asks about.
type Original struct {
	// Method is the request method, upper-cased ([NormalizeMethod]): "GET"
	// for "get" too.
	Method string
	// Scheme is "http" or "https" (lower case), or "" when the preset's
	// proto header is absent.
	Scheme string
	// Host is the host, lower case, without port or trailing dot.
	Host string
	// Port is the port the host named ("8443"), or "" when it named none.
	// Routes never look at it; DPoP's htu does (RFC 3986 §6.2.3: a default
	// port is the same URI as none, see [Original.URL]).
	Port string
	// Path is the normalized path (see [NormalizePath]): never empty,
	// starts with '/', no query.
	Path string
	// SentPath is the path as the target spelled it, when that is not
	// Path (an unreserved escape decoded, a hex digit upper-cased), else
	// "". Routers that match the target as sent (Express, @koa/router,
	// chi when URL.RawPath is set) read /%70ublic/x as no /public route's
	// path, so routes are matched in this spelling too
	// (policy.Set.Choose).
	SentPath string
	// RawQuery is the query as sent, without '?' and without fragment.
	RawQuery string
	// Overrides lists the methods that method overrides name (the
	// [OverrideHeaders] and _method query parameters), upper-cased, sorted,
	// space-separated, each once, without Method itself; "" when there is
	// none. Frameworks (Rails, Laravel, Symfony, Express's method-override)
	// run a request as the method its override names, so a request is
	// allowed only when every one of [Original.Methods] is. A _method field
	// in a form body cannot be seen: POST must be given the strictest
	// policy of the methods an application lets it override.
	Overrides string
}

// Methods yields the request's method and then each method its overrides
// name: the methods an application behind the proxy may run it as.
func (o Original) Methods() iter.Seq[string] {
	return func(yield func(string) bool) {
		if !yield(o.Method) {
			return
		}
		for m := range strings.FieldsSeq(o.Overrides) {
			if !yield(m) {
				return
			}
		}
	}
}

// URL returns scheme://host[:port]path, the request's URI without query as
// RFC 3986 §6.2.2 and §6.2.3 normalize it: scheme and host lower case, an
// IPv6 host in brackets, the port only when it is not the scheme's default.
// DPoP's htu is compared with it.
func (o Original) URL() string {
	host := o.Host
	if strings.IndexByte(host, ':') >= 0 {
		host = "[" + host + "]"
	}
	if o.Port != "" && !(o.Scheme == "http" && o.Port == "80") && !(o.Scheme == "https" && o.Port == "443") {
		host += ":" + o.Port
	}
	return o.Scheme + "://" + host + o.Path
}

// From reads the original request of r as p says. For [Envoy], prefix is
// the path the auth service is mounted at ("/v1/authz"); the original path
// is what follows it. It returns [ErrMissing] when p is [None] or the
// preset's method, URI or host header is absent or repeated, and
// [ErrAmbiguousPath] for a path that must not be routed.
func (p Proxy) From(r *http.Request, prefix string) (Original, error) {
	switch p {
	case None:
		return Original{}, ErrMissing
	case Envoy:
		// The path as Envoy sent it: Envoy appends the original path, as
		// the client sent it, to its path_prefix.
		uri := RawPath(r.URL)
		rest, ok := strings.CutPrefix(uri, prefix)
		if !ok || (rest != "" && rest[0] != '/') {
			return Original{}, fmt.Errorf("%w: path %q is not below %q", ErrMissing, uri, prefix)
		}
		if rest == "" {
			rest = "/"
		}
		if r.URL.RawQuery != "" || r.URL.ForceQuery {
			rest += "?" + r.URL.RawQuery
		}
		// The scheme is unknown: r.TLS is the connection from Envoy, not
		// the client's, and Envoy's authorization request carries no
		// header of its own for it (a DPoP proof then fails: use gRPC,
		// whose attributes carry the scheme).
		o, err := FromParts(r.Method, "", r.Host, rest)
		if err != nil {
			return o, err
		}
		return o.withHTTPOverrides(r.Header)
	}
	h, _ := p.Headers()
	method, ok1 := one(r.Header, h.Method)
	uri, ok2 := one(r.Header, h.URI)
	host, ok3 := one(r.Header, h.Host)
	if !ok1 || !ok2 || !ok3 {
		return Original{}, fmt.Errorf("%w: want exactly one each of %s, %s and %s", ErrMissing, h.Method, h.URI, h.Host)
	}
	proto, _ := one(r.Header, h.Proto) // optional: only DPoP's htu needs it
	o, err := FromParts(method, proto, host, uri)
	if err != nil {
		return o, err
	}
	// The proxies pass the client's headers to the auth call (nginx's
	// auth_request, Caddy's forward_auth, Traefik's forwardAuth), so the
	// overrides the application will read are in r.Header.
	return o.withHTTPOverrides(r.Header)
}

// FromRequest reads the original request of r itself, for an application
// that decides on the request it serves (server's Middleware): its method
// and method overrides, host, path as sent ([RawPath]), query, and the
// scheme of its own connection ("https" when r.TLS is set, else "http").
// Errors are [FromParts]', [ErrAmbiguousPath] for a target that is neither
// a path nor an http(s) URL with a host and no userinfo ("a:admin",
// "http:/admin", "http://u@h/"), and
// [ErrAmbiguousPath] when r.URL no longer
// spells the path of r.RequestURI (http.StripPrefix or a rewrite ran
// before): the client sent, and a DPoP proof names, one path, and the
// handler acts on another. A CONNECT is [ErrAmbiguousMethod]: Go's
// ServeMux routes it on r.Host with its port, where routes strip it. A
// Host header left in r.Header (an HTTP/2 client's, beside :authority),
// or an absolute-form target's host (r.URL.Host, an HTTP/2 :path's), that
// is not r.Host, byte for byte, is [ErrAmbiguousHost].
func FromRequest(r *http.Request) (Original, error) {
	if r.Method == http.MethodConnect {
		// Go's ServeMux does not canonicalize a CONNECT: it matches a
		// host pattern against r.Host with its port, so a CONNECT to
		// public.example:8080 runs the catch-all, not the public.example/
		// handler the host's route decided it for.
		return Original{}, fmt.Errorf("%w: CONNECT (Go's ServeMux routes it on the host with its port)", ErrAmbiguousMethod)
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	if u := r.URL; u.Opaque != "" || u.User != nil || (u.Scheme != "" && (u.Host == "" || !asciifold.EqualFold(u.Scheme, "http") && !asciifold.EqualFold(u.Scheme, "https"))) {
		// "GET a:admin" reaches a handler (net/http parses any absolute
		// URI) with an empty Path, read as "/", and the target "admin" in
		// URL.Opaque, which URL.RequestURI (and so a reverse proxy) sends
		// on: neither a path nor an http(s) URL, as FromParts refuses it.
		// An http URI without a host ("http:", "http:/admin") is one RFC
		// 9110 (4.2.1) says a recipient must reject; one with userinfo
		// (4.2.4) an error, as FromParts holds it.
		return Original{}, fmt.Errorf("%w: the request target is neither a path nor an http(s) URL with a host (and no userinfo)", ErrAmbiguousPath)
	}
	if r.URL.Host != "" && r.URL.Host != r.Host {
		// An absolute-form target over HTTP/2 (:path "http://other/x"):
		// Go's server takes r.Host from :authority and r.URL from :path,
		// where HTTP/1 makes r.Host the target's host.
		return Original{}, fmt.Errorf("%w: the request target's host is not the request's host (r.Host)", ErrAmbiguousHost)
	}
	for _, h := range r.Header["Host"] {
		if h != r.Host {
			// An HTTP/2 client may send a host header beside :authority:
			// Go's server serves r.Host from :authority and leaves the
			// header in r.Header, where a handler may read it (net/http/cgi
			// hands it to the program as HTTP_HOST, over r.Host's).
			return Original{}, fmt.Errorf("%w: a Host header is not the request's host (r.Host)", ErrAmbiguousHost)
		}
	}
	uri := RawPath(r.URL)
	if sent := r.RequestURI; sent != "" && sent != "*" {
		if u, err := url.ParseRequestURI(sent); err != nil || RawPath(u) != uri {
			// The path only: the query carries what clients put there
			// (an OAuth code, a signed URL's signature, a token), and this
			// error reaches the rejection's log line.
			shown, _, _ := strings.Cut(sent, "?")
			return Original{}, fmt.Errorf("%w: the request's URL is not the one the client sent (%q): a handler in front changed it", ErrAmbiguousPath, shown)
		}
	}
	if r.URL.RawQuery != "" || r.URL.ForceQuery {
		uri += "?" + r.URL.RawQuery
	}
	o, err := FromParts(r.Method, scheme, r.Host, uri)
	if err != nil {
		return o, err
	}
	return o.withHTTPOverrides(r.Header)
}

// one returns the header's value when it is present exactly once.
func one(h http.Header, name string) (string, bool) {
	v := h[name]
	if len(v) != 1 {
		return "", false
	}
	return v[0], true
}

// FromParts builds an Original from its parts as a proxy reports them: uri
// is the request target ("/orders/1?x=y"; an absolute-form
// "https://host/path" is reduced to its path; its authority must be a
// host [CheckHost] accepts, else [ErrAmbiguousPath]), scheme may be empty. gRPC
// Check uses it with attributes.request.http. A target holding a '#' is
// [ErrAmbiguousPath]: a request target has no fragment (RFC 9112 §3.2),
// and an upstream that does not cut one there (Go's net/http does not)
// reads another path or query than the one decided.
func FromParts(method, scheme, host, uri string) (Original, error) {
	if method == "" {
		return Original{}, fmt.Errorf("%w: empty method", ErrMissing)
	}
	if err := checkHost(host); err != nil {
		return Original{}, err
	}
	if err := checkSpelling(method, host); err != nil {
		return Original{}, err
	}
	o := Original{Method: method, Scheme: asciifold.ToLower(scheme), Host: NormalizeHost(host), Port: hostPort(host)}
	if o.Scheme != "" && o.Scheme != "http" && o.Scheme != "https" {
		return Original{}, fmt.Errorf("%w: scheme %q", ErrMissing, scheme)
	}
	if strings.IndexByte(uri, '#') >= 0 {
		return Original{}, fmt.Errorf("%w: holds a '#' (a request target has no fragment)", ErrAmbiguousPath)
	}
	if ctlOrSpace(uri) {
		// A header value (X-Original-URI, X-Forwarded-Uri) may hold a tab
		// or other bytes no request line carries: nginx (since 1.21.1),
		// Envoy and Go refuse such a request, and an application behind
		// would read it another way, or not at all.
		return Original{}, fmt.Errorf("%w: holds a space or a control character (no request line carries one)", ErrAmbiguousPath)
	}
	path, query, _ := strings.Cut(uri, "?")
	o.RawQuery = query
	if authority, rest, ok := cutAbsolute(path); ok {
		// Its authority is a host (RFC 9110 4.2.1: an http URI without
		// one is rejected, as FromRequest does; 4.2.4: userinfo is an
		// error): "http:///admin", "http://u@h/a" or "http://h\\admin"
		// (the path /admin to a WHATWG URL reader) is read no one way.
		if err := CheckHost(authority); err != nil {
			return Original{}, fmt.Errorf("%w: the absolute-form target's authority %q is no host", ErrAmbiguousPath, authority)
		}
		path = rest
	}
	p, err := NormalizePath(path)
	if err != nil {
		return Original{}, err
	}
	o.Path = p
	if p != path && path != "" {
		o.SentPath = path
	}
	if query != "" {
		if o, err = o.withQueryOverrides(query); err != nil {
			return Original{}, err
		}
	}
	return o, nil
}

// RawPath returns u's path as it was sent: u.RawPath when set (the sent
// form differs from Go's default encoding of u.Path) and still u.Path
// escaped, else u.EscapedPath(),
// which is then that form. u.EscapedPath() alone rebuilds the path from
// its decoded form when the sent one holds a byte Go would escape ('|',
// '{', '^', a byte ≥ 0x80), which turns an encoded '/' into a real one.
func RawPath(u *url.URL) string {
	if u.RawPath != "" {
		// Only while it still spells u.Path: a handler that changed Path
		// alone left a stale RawPath.
		if p, err := url.PathUnescape(u.RawPath); err == nil && p == u.Path {
			return u.RawPath
		}
	}
	return u.EscapedPath()
}

// checkSpelling refuses a method or host that is not spelled as routes
// compare it: a method with a lower-case letter ([ErrAmbiguousMethod]), a
// host with an upper-case letter or a trailing '.' ([ErrAmbiguousHost]).
// Applications read them two ways: Django and Flask upper-case a method,
// Rails and most routers compare hosts ignoring case and a trailing dot,
// while Go's net/http hands both on as sent and its ServeMux matches a
// method or a host pattern exactly ("get" is not its GET, "API.example"
// not its api.example), so deciding on the tidier spelling let a request
// reach a handler that another route guards.
func checkSpelling(method, host string) error {
	if NormalizeMethod(method) != method {
		return fmt.Errorf("%w: %q is not in upper case (Go's ServeMux does not read it as %s)", ErrAmbiguousMethod, method, NormalizeMethod(method))
	}
	name := host
	if !strings.HasPrefix(host, "[") {
		name, _, _ = strings.Cut(host, ":")
	}
	if strings.HasSuffix(name, ".") {
		return fmt.Errorf("%w: %q ends with '.' (Go's ServeMux does not read it as %s)", ErrAmbiguousHost, host, NormalizeHost(host))
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; 'A' <= c && c <= 'Z' {
			return fmt.Errorf("%w: %q holds an upper-case letter (Go's ServeMux does not read it as %s)", ErrAmbiguousHost, host, NormalizeHost(host))
		}
	}
	return nil
}

// checkHost returns [ErrAmbiguousHost] unless host is empty, or a name or
// IPv4 address (ASCII letters, digits, '-', '_' and '.', no empty label
// but a single trailing '.') or a bracketed IPv6 address without a zone,
// followed by nothing or by ':' and at most five digits; an IP address
// must be in its one canonical spelling ([CheckIPSpelling]). Every proxy
// and application then reads the same host and port from it, and a route
// for an address sees every request to it.
func checkHost(host string) error {
	name, port := host, ""
	if strings.HasPrefix(host, "[") {
		end := strings.IndexByte(host, ']')
		if end < 0 {
			return fmt.Errorf("%w: %q: an IPv6 literal without ']'", ErrAmbiguousHost, host)
		}
		name, port = host[1:end], host[end+1:]
		if err := checkIPv6(name); err != nil {
			return fmt.Errorf("%w: %q: %s", ErrAmbiguousHost, host, err)
		}
	} else {
		if i := strings.IndexByte(host, ':'); i >= 0 {
			name, port = host[:i], host[i:]
		}
		if err := checkHostName(name); err != nil {
			return fmt.Errorf("%w: %q: %s", ErrAmbiguousHost, host, err)
		}
		if err := checkIPv4(name); err != nil {
			return fmt.Errorf("%w: %q: %s", ErrAmbiguousHost, host, err)
		}
	}
	if port == "" {
		return nil
	}
	digits, ok := strings.CutPrefix(port, ":")
	if !ok || len(digits) > 5 || strings.Trim(digits, "0123456789") != "" {
		return fmt.Errorf("%w: %q: the port is not ':' and at most five digits", ErrAmbiguousHost, host)
	}
	return nil
}

// DecodedEscape reports whether Path decoded an unreserved escape of the
// path as sent (SentPath): the two spellings then name other characters
// ("/%70ublic/x" and "/public/x"), not only hex digits in another case
// ("/caf%c3%a9" and "/caf%C3%A9", which every reader of a path takes for
// the same bytes). NormalizePath only decodes unreserved escapes (three
// bytes to one) and upper-cases hex digits, so the lengths tell.
func (o Original) DecodedEscape() bool {
	return o.SentPath != "" && len(o.SentPath) != len(o.Path)
}

// CheckHost returns [ErrAmbiguousHost] for a host (with an optional port)
// that no request [FromParts] accepts can name: anything but a name of
// ASCII letters, digits, '-', '_' and '.' (no empty label but a single
// trailing '.') or an IP address in its canonical spelling (IPv6 in
// brackets), followed by nothing or by ':' and at most five digits. Letter
// case is not judged: a route's host is lower-cased at load. Routes refuse
// such a host at load: they would never match.
func CheckHost(host string) error {
	if host == "" {
		return fmt.Errorf("%w: empty", ErrAmbiguousHost)
	}
	return checkHost(host)
}

// checkHostName reports what is wrong with a host name without its port.
func checkHostName(name string) error {
	if name == "" {
		return nil // no host: the routes that name one do not match
	}
	name = strings.TrimSuffix(name, ".") // one trailing dot: the same name
	label := 0
	for i := 0; i < len(name); i++ {
		switch c := name[i]; {
		case c == '.':
			if label == 0 {
				return errors.New("an empty label")
			}
			label = 0
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '-', c == '_':
			label++
		default:
			return fmt.Errorf("holds %q (only ASCII letters, digits, '-', '_' and '.')", c)
		}
	}
	if label == 0 {
		return errors.New("an empty label")
	}
	return nil
}

// CheckIPSpelling returns an error when host, a host without its port
// (brackets around an IPv6 address optional), is an IP address spelled
// otherwise than the one way every parser reads alike; nil for a name and
// for a canonical address. Routes refuse such a host at load, and
// [FromParts] refuses a request naming one ([ErrAmbiguousHost]), so a
// route for an address matches every request that can name it:
//   - an IPv4 address is four decimal parts 0-255 without leading zeros
//     ("127.0.0.1"). A name whose last label is a number (all digits, or
//     "0x" and hex digits: what the WHATWG URL standard reads as an IPv4
//     address) is one, so "127.1", "2130706433", "0x7f.0.0.1",
//     "0177.0.0.1", "127.000.000.001", "127.0.0.1." and "1.2.3" are
//     refused: inet_aton reads most of them as 127.0.0.1, Go's netip none,
//     and nginx matches none to server_name 127.0.0.1;
//   - an IPv6 address is RFC 5952's text (lower case compared
//     case-insensitively, the longest run of zero groups as "::"), without
//     a zone: "::1", not "0:0::1" or "::0001";
//   - an IPv4-mapped IPv6 address ("::ffff:127.0.0.1") is refused in any
//     spelling: a dual-stack socket and Java read it as the IPv4 address,
//     which a route names otherwise.
func CheckIPSpelling(host string) error {
	if strings.IndexByte(host, ':') >= 0 || strings.HasPrefix(host, "[") {
		return checkIPv6(strings.TrimPrefix(strings.TrimSuffix(host, "]"), "["))
	}
	return checkIPv4(host)
}

// checkIPv4 reports what is wrong with name, a host name without port,
// when its last label (after one trailing '.') is a number and name is
// not a canonical dotted quad. It does not allocate.
func checkIPv4(name string) error {
	last := strings.TrimSuffix(name, ".")
	last = last[strings.LastIndexByte(last, '.')+1:]
	if !isIPv4Number(last) {
		return nil // a name
	}
	parts := 0
	for rest := name; ; {
		part, after, more := strings.Cut(rest, ".")
		if len(part) == 0 || len(part) > 3 || strings.Trim(part, "0123456789") != "" ||
			(len(part) > 1 && part[0] == '0') || len(part) == 3 && part > "255" {
			parts = -1
			break
		}
		parts++
		if !more {
			break
		}
		rest = after
	}
	if parts != 4 {
		return errors.New("an IPv4 address not spelled as four decimal parts 0-255 without leading zeros or a trailing '.' (parsers read other spellings differently)")
	}
	return nil
}

// isIPv4Number reports whether a label is what the WHATWG URL standard's
// "ends in a number" reads as an IPv4 part: ASCII digits only, or "0x"
// (any case) followed by hex digits or nothing.
func isIPv4Number(label string) bool {
	if label == "" {
		return false
	}
	if strings.Trim(label, "0123456789") == "" {
		return true
	}
	return len(label) >= 2 && label[0] == '0' && (label[1] == 'x' || label[1] == 'X') &&
		strings.Trim(label[2:], "0123456789abcdefABCDEF") == ""
}

// checkIPv6 reports what is wrong with addr, the text inside an IPv6
// literal's brackets: not an IPv6 address, a zone, an IPv4-mapped
// address, or another text than its canonical one (RFC 5952), letters in
// any case.
func checkIPv6(addr string) error {
	a, err := netip.ParseAddr(addr)
	switch {
	case err != nil || !a.Is6() || a.Zone() != "":
		return errors.New("not an IPv6 address without a zone")
	case a.Is4In6():
		return errors.New("an IPv4-mapped IPv6 address (stacks read it as the IPv4 address)")
	}
	var buf [64]byte
	if canon := a.AppendTo(buf[:0]); !asciifold.EqualFold(string(canon), addr) {
		return fmt.Errorf("an IPv6 address not in its canonical spelling %q (RFC 5952)", canon)
	}
	return nil
}

// hostPort returns the port that host ("h:8443", "[::1]:8443") names, or "".
func hostPort(host string) string {
	if strings.IndexByte(host, ':') < 0 {
		return ""
	}
	if _, port, err := net.SplitHostPort(host); err == nil {
		return port
	}
	return ""
}

// cutAbsolute returns the authority and the path of an absolute-form
// target without query ("http://host/path"), the path "/" when it has none.
func cutAbsolute(target string) (authority, path string, ok bool) {
	for _, s := range [...]string{"http://", "https://"} {
		if asciifold.HasPrefixFold(target, s) {
			rest := target[len(s):]
			if i := strings.IndexByte(rest, '/'); i >= 0 {
				return rest[:i], rest[i:], true
			}
			return rest, "/", true
		}
	}
	return "", "", false
}

// NormalizeMethod returns method with its ASCII letters upper-cased. HTTP
// methods are case-sensitive (RFC 9110 §9.1), but Django and Werkzeug
// (Flask) upper-case the one they receive, and Traefik and Caddy forward
// "delete" as sent: a route or an expression about DELETE must see it as
// DELETE, or a lower-case spelling would skip the policy meant for it. It
// does not allocate for a method already in upper case.
func NormalizeMethod(method string) string {
	for i := 0; i < len(method); i++ {
		if c := method[i]; 'a' <= c && c <= 'z' {
			b := []byte(method)
			for j := i; j < len(b); j++ {
				if 'a' <= b[j] && b[j] <= 'z' {
					b[j] -= 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return method
}

// NormalizeHost returns host with its ASCII letters lower-cased (never a
// Unicode folding: "\u212A" is not 'k' to a proxy), without its port and
// trailing dot. "[::1]:8080" becomes "::1".
func NormalizeHost(host string) string {
	if hostIsNormal(host) {
		return host // already normal: the common case, without allocating
	}
	return normalizeHost(host)
}

// hostIsNormal reports whether NormalizeHost leaves host as it is: no
// port, bracket, trailing dot, upper-case letter or byte 0x80 and above.
// One pass over host: the original host of every forward-auth request.
func hostIsNormal(host string) bool {
	for i := 0; i < len(host); i++ {
		if c := host[i]; c == ':' || c == '[' || c == ']' || 'A' <= c && c <= 'Z' || c >= 0x80 {
			return false
		}
	}
	return !strings.HasSuffix(host, ".")
}

// normalizeHost is [NormalizeHost] for every input.
func normalizeHost(host string) string {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimPrefix(strings.TrimSuffix(host, "]"), "[")
	return asciifold.ToLower(strings.TrimSuffix(host, "."))
}

// NormalizePath returns the path routes are matched against: percent-escapes
// of unreserved characters decoded (others kept, hex upper-cased), nothing
// else changed. It returns [ErrAmbiguousPath] for a path that routers behind
// the proxy could read as another path than the one decided:
//   - a dot segment, "." or "..", raw or percent-encoded in any spelling
//     ("%2e", ".%2E"): Go's ServeMux and Flask keep "/admin/../anon" under
//     /admin while RFC 3986 §5.2.4 takes it to /anon;
//   - an empty segment ("//" anywhere; a single trailing '/' is not one):
//     WHATWG URL parsing reads "//anon/admin" as the host anon and the path
//     /admin, other routers merge the slashes or keep the empty segment;
//   - an encoded '/', a '\' raw or encoded, a NUL raw or encoded;
//   - a raw ';' (path parameters: Tomcat, Jetty and Spring strip them
//     before routing, so /admin;x/secret is their /admin/secret);
//   - a raw '#' (no request target has a fragment), a malformed escape, or
//     a path that does not start with '/'.
//
// No path is tidied up instead: two normalizers never agree, so whatever
// they could read differently is refused. The empty path is "/".
func NormalizePath(raw string) (string, error) {
	if isNormalPath(raw) {
		return raw, nil // already normal: the common case, without allocating
	}
	return normalizePath(raw)
}

// isNormalPath reports whether raw is a path that [NormalizePath] returns
// unchanged, found without allocating: it starts with '/', holds no '%',
// '\', NUL, ';' or '#', and no '/' is followed by another '/' or by '.' (so
// it has no empty segment and no dot segment). A path it refuses may still
// be normal ("/.well-known"); normalizePath decides those.
func isNormalPath(raw string) bool {
	if raw == "" || raw[0] != '/' {
		return false
	}
	for i := 0; i < len(raw); i++ {
		switch raw[i] {
		case '%', '\\', 0, ';', '#':
			return false
		case '/':
			if i+1 < len(raw) && (raw[i+1] == '/' || raw[i+1] == '.') {
				return false
			}
		}
	}
	return true
}

// normalizePath is [NormalizePath] for every input: the decoding, the
// checks and the dot-segment removal.
func normalizePath(raw string) (string, error) {
	if raw == "" {
		return "/", nil
	}
	if raw[0] != '/' {
		return "", fmt.Errorf("%w: does not start with '/'", ErrAmbiguousPath)
	}
	// Decode unreserved escapes; refuse the dangerous and the malformed.
	var b strings.Builder
	b.Grow(len(raw))
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		switch c {
		case '\\', 0:
			return "", fmt.Errorf("%w: holds a backslash or NUL", ErrAmbiguousPath)
		case ';', '#':
			return "", fmt.Errorf("%w: holds a raw %q (path parameters or a fragment)", ErrAmbiguousPath, c)
		case '%':
			if i+2 >= len(raw) || !isHex(raw[i+1]) || !isHex(raw[i+2]) {
				return "", fmt.Errorf("%w: malformed escape", ErrAmbiguousPath)
			}
			d := unhex(raw[i+1])<<4 | unhex(raw[i+2])
			switch {
			case d == '/' || d == '\\' || d == 0:
				return "", fmt.Errorf("%w: holds an encoded '/', '\\' or NUL", ErrAmbiguousPath)
			case isUnreserved(d):
				b.WriteByte(d)
			default:
				const hex = "0123456789ABCDEF"
				b.WriteByte('%')
				b.WriteByte(hex[d>>4])
				b.WriteByte(hex[d&15])
			}
			i += 2
		default:
			b.WriteByte(c)
		}
	}
	// Every segment must be one a router reads as itself: not empty (but
	// the last, the trailing '/'), not a dot segment.
	p := b.String()
	rest := p[1:]
	for rest != "" {
		seg, after, more := strings.Cut(rest, "/")
		switch {
		case seg == "." || seg == "..":
			return "", fmt.Errorf("%w: holds a dot segment", ErrAmbiguousPath)
		case seg == "" && more:
			return "", fmt.Errorf("%w: holds an empty segment ('//')", ErrAmbiguousPath)
		}
		rest = after
	}
	return p, nil
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	}
	return c - 'a' + 10
}

// isUnreserved reports whether c is unreserved in RFC 3986 §2.3.
func isUnreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '-' || c == '.' || c == '_' || c == '~'
}

// ctlOrSpace reports whether s holds a space, a control character or DEL.
func ctlOrSpace(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c == 0x7f {
			return true
		}
	}
	return false
}
