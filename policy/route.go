package policy

import (
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"

	"github.com/jwksverify/jwksverify/request"
)

// route is a compiled [Route].
type route struct {
	methods []string // nil: any
	host    string   // "": any; normalized
	segs    []string // the pattern's segments after the leading '/'; "*" matches one non-empty segment
	// dsegs are segs percent-decoded, when a segment holds a byte that is
	// not unreserved (a sub-delim, ':', '@', '%', a byte >= 0x80): a
	// request spelling it otherwise is another path to routers that match
	// the raw target (Express, koa) and the same one to routers that decode
	// it first (Werkzeug, find-my-way). nil when the pattern has one
	// spelling.
	dsegs   []string
	subtree bool // the pattern ended in "/**": itself and everything below
	// tailStar: an exact pattern whose last segment is "*" (/items/*).
	// Echo v4 hands its last :param the rest of the path, '/' included
	// (labstack/echo#2501: /items/:id runs /items/1/x with id "1/x"), so
	// such a route is also what an application serves below it.
	tailStar bool
	pattern  string // the path pattern as configured ("/**" for an empty one)
	policy   *Policy
}

func compileRoute(rt Route, byName map[string]*Policy) (route, error) {
	p, ok := byName[rt.Policy]
	if !ok {
		return route{}, fmt.Errorf("policy: %q is not a configured policy", rt.Policy)
	}
	r := route{policy: p}
	if len(rt.Methods) > 0 { // empty (methods: []) is any method, as absent is
		r.methods = slices.Clone(rt.Methods)
	}
	for i, m := range rt.Methods {
		// A method that is not a token (RFC 9110 §9.1) is no request's
		// method: the route would never match ("POST,PUT" as one method).
		if !methodToken(m) || strings.ToUpper(m) != m {
			return route{}, fmt.Errorf("methods[%d]: %q is not an upper-case HTTP method (one method token per list item)", i, m)
		}
	}
	if rt.Host != "" {
		r.host = request.NormalizeHost(rt.Host)
		if r.host == "" || strings.ContainsAny(r.host, "/ *") {
			return route{}, fmt.Errorf("host: %q is not a host name", rt.Host)
		}
		h := rt.Host
		if _, _, err := net.SplitHostPort(h); err == nil {
			// The host is compared without its port, so a port here would
			// match every port of the host: an anonymous route written
			// for public.example:8080 would open public.example:443 too.
			return route{}, fmt.Errorf("host: %q names a port: a route's host is compared without the port, so it would match every port of the host; write the host alone", rt.Host)
		}
		if err := request.CheckIPSpelling(h); err != nil {
			// A request naming the address so is refused: the route
			// would never match.
			return route{}, fmt.Errorf("host: %q: %w", rt.Host, err)
		}
		// Nor would a host no request can name (a URL, user info, an
		// escape, a byte no host name holds): the requests it was
		// written for would go to the next route or the default.
		full := rt.Host
		if strings.Count(full, ":") > 1 && !strings.HasPrefix(full, "[") {
			full = "[" + full + "]" // an IPv6 address, brackets optional
		}
		if err := request.CheckHost(full); err != nil {
			return route{}, fmt.Errorf("host: %q is not a host name or IP address that a request can name", rt.Host)
		}
	}
	path := rt.Path
	if path == "" {
		path = "/**"
	}
	segs, subtree, err := compilePath(path)
	if err != nil {
		return route{}, fmt.Errorf("path: %q: %w", rt.Path, err)
	}
	r.segs, r.subtree, r.pattern = segs, subtree, path
	r.tailStar = !subtree && len(segs) > 0 && segs[len(segs)-1] == "*"
	for _, seg := range segs {
		if seg == "*" || !hasSpelling(seg) {
			continue
		}
		r.dsegs = make([]string, len(segs))
		for i, seg := range segs {
			d, err := url.PathUnescape(seg)
			if err != nil || (d == "*" && seg != "*") {
				return route{}, fmt.Errorf("path: %q: a segment that does not decode to one literal", rt.Path)
			}
			r.dsegs[i] = d
		}
		break
	}
	return r, nil
}

// methodToken reports whether m is a non-empty RFC 9110 token (tchar:
// ASCII letters, digits and !#$%&'*+-.^_`|~).
func methodToken(m string) bool {
	if m == "" {
		return false
	}
	for i := 0; i < len(m); i++ {
		c := m[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}

// compilePath splits a route's path pattern. A pattern must be what
// request.NormalizePath leaves unchanged (with "*" segments), so that it
// can match a normalized request path at all.
func compilePath(pattern string) ([]string, bool, error) {
	subtree := false
	if rest, ok := strings.CutSuffix(pattern, "/**"); ok {
		subtree, pattern = true, rest
		if pattern == "" {
			return nil, true, nil
		}
	}
	if !strings.HasPrefix(pattern, "/") {
		return nil, false, fmt.Errorf("want a path starting with '/'")
	}
	if strings.Contains(pattern, "?") {
		// A request's path never holds a raw '?': its query starts there.
		return nil, false, fmt.Errorf("a path holds no query ('?'); write a literal '?' as %%3F")
	}
	if strings.Contains(pattern, "**") {
		return nil, false, fmt.Errorf("'**' only as the last segment, after '/'")
	}
	norm, err := request.NormalizePath(strings.ReplaceAll(pattern, "*", "x"))
	if err != nil || norm != strings.ReplaceAll(pattern, "*", "x") {
		return nil, false, fmt.Errorf("not a normalized path (no '//', dot segments, encoded unreserved characters, ';', '#', '\\' or NUL)")
	}
	segs := strings.Split(pattern[1:], "/")
	for _, s := range segs {
		if s != "*" && strings.Contains(s, "*") {
			return nil, false, fmt.Errorf("'*' must be a whole segment")
		}
	}
	if subtree && segs[len(segs)-1] == "" {
		return nil, false, fmt.Errorf("'/**' after a trailing '/'")
	}
	return segs, subtree, nil
}

// hasSpelling reports whether seg holds a byte that is not unreserved
// (RFC 3986 §2.3), so that a request can name it in another spelling.
func hasSpelling(seg string) bool {
	for i := 0; i < len(seg); i++ {
		c := seg[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~') {
			return true
		}
	}
	return false
}

// matchDecoded reports whether r matches o with its path decoded: the
// reading of routers that percent-decode the target before routing.
func (r *route) matchDecoded(o request.Original, decoded string) bool {
	if r.methods != nil && !slices.Contains(r.methods, o.Method) {
		return false
	}
	if r.host != "" && r.host != o.Host {
		return false
	}
	segs := r.segs
	if r.dsegs != nil {
		segs = r.dsegs
	}
	return matchPath(segs, r.subtree, decoded)
}

// matchTail reports whether r, a tailStar route, matches o with its last
// "*" taking the rest of the path, as Echo's last :param does.
func (r *route) matchTail(o request.Original) bool {
	if r.methods != nil && !slices.Contains(r.methods, o.Method) {
		return false
	}
	if r.host != "" && r.host != o.Host {
		return false
	}
	return matchPath(r.segs, true, o.Path)
}

// match reports whether r matches o (method, host, normalized path).
func (r *route) match(o request.Original) bool {
	if r.methods != nil && !slices.Contains(r.methods, o.Method) {
		return false
	}
	if r.host != "" && r.host != o.Host {
		return false
	}
	return matchPath(r.segs, r.subtree, o.Path)
}

// matchPath matches a normalized path against a compiled pattern without
// allocating: segment by segment; a subtree pattern also matches every
// path below its segments (at a segment boundary: /admin/** matches
// /admin, /admin/ and /admin/x, not /administrator).
func matchPath(segs []string, subtree bool, path string) bool {
	if path == "" || path[0] != '/' {
		return false
	}
	rest := path[1:]
	if len(segs) == 0 { // "/**"
		return subtree
	}
	for i, want := range segs {
		seg, after, more := strings.Cut(rest, "/")
		if want == "*" {
			if seg == "" {
				return false
			}
		} else if seg != want {
			return false
		}
		last := i == len(segs)-1
		switch {
		case !last && !more:
			return false
		case last:
			// Exact: nothing may follow. Subtree: anything may.
			return !more || subtree
		}
		rest = after
	}
	return false
}

// shadows reports whether Echo, routing a path that r (a route ending in
// '*') and c (which matches the path) both reach, runs c's branch rather
// than r's last :param: c goes on at or past r's '*' along r's own
// segments (/items/*/files/** for /items/*: the :param has a child and
// takes one segment), or leaves them at a literal where r has its '*'
// (/items/new/** for /items/*: a static node wins over a :param). Where c
// has a '*' (a :param) and r a literal (/*/a/** beside /a/*), Echo tries
// r's static branch first, whose :param takes the rest of the path.
//
// literal says which: true when c leaves r's segments at a literal (Echo
// then runs c's handler even for the path r matches itself, /items/new
// beside /items/*), false when c follows them (r's own handler runs the
// path that ends at its '*').
func (c *route) shadows(r *route) (shadow, literal bool) {
	for k, want := range r.segs {
		if k >= len(c.segs) {
			return false, false // c ends before r's '*': a catch-all loses to the :param
		}
		if c.segs[k] == want {
			continue
		}
		lit := c.segs[k] != "*" && want == "*"
		return lit, lit
	}
	return true, false
}
