package integration

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/textproto"
	"net/url"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/internal/testkeys"
)

// The route differential (issue "Route authorization holds"): real nginx and
// real Caddy, running what `jwksverify proxy-config` generates, in front of
// the real binary and a recording upstream. Every request jwksverify lets
// through is handed to modelled application routers — Go's ServeMux on the
// escaped path, a prefix router that keeps dot segments, a servlet-style
// router that strips ";params" before removing dot segments, and WHATWG URL
// parsing (`new URL(req.url, base)`, run by node) — each with every host and
// method an application framework could take from the request (Host,
// X-Forwarded-Host, Forwarded, their CGI twins; X-HTTP-Method-Override and
// friends, `_method`). A request some router runs under a route whose policy
// the token does not satisfy is a bypass.

// diffPolicies is jwksverify's configuration for the differential: the
// application's routes, each with the token level it needs (diffLevel).
const diffPolicies = `policies:
  - {name: anon, allow_anonymous: true}
  - {name: reader, scopes: {any: [read]}}
  - {name: writer, scopes: {any: [write]}}
  - {name: admin, scopes: {any: [admin]}}
  - {name: nobody, scopes: {any: [nobody-holds-this]}}
routes:
  - {host: admin.internal, policy: admin}
  - {path: /anon/**, policy: anon}
  - {path: /public/**, policy: reader}
  - {path: /admin/**, policy: admin}
  - {methods: [DELETE], path: /orders/**, policy: admin}
  - {methods: [GET, HEAD, POST, PUT, PATCH], path: /orders/**, policy: writer}
default_policy: nobody
`

// diffLevel is what a token may do: each level holds the scopes of those
// below it. levelNobody is what no token reaches.
type diffLevel int

const (
	levelNone diffLevel = iota
	levelReader
	levelWriter
	levelAdmin
	levelNobody
)

func (l diffLevel) String() string {
	return [...]string{"none", "reader", "writer", "admin", "nobody"}[l]
}

// scope is the scope claim of a token of level l.
func (l diffLevel) scope() string {
	return [...]string{"", "read", "read write", "read write admin", ""}[l]
}

// appRoute is a handler of the modelled application: "" when nothing ran
// (not found, a redirect, a 400).
type appRoute string

const (
	routeAnon      appRoute = "anon"
	routePublic    appRoute = "public"
	routeAdmin     appRoute = "admin"
	routeOrders    appRoute = "orders"
	routeAdminHost appRoute = "admin.internal" // every path on host admin.internal
)

// needs is the level the configuration above asks of route run as method:
// the application's view of diffPolicies, written out on its own.
func needs(r appRoute, method string) diffLevel {
	switch r {
	case routeAnon:
		return levelNone
	case routePublic:
		return levelReader
	case routeAdmin, routeAdminHost:
		return levelAdmin
	case routeOrders:
		switch method {
		case "DELETE":
			return levelAdmin
		case "GET", "HEAD", "POST", "PUT", "PATCH":
			return levelWriter
		}
	}
	return levelNobody
}

// prefixRoute routes a decoded path by its first segment, as a router that
// matches prefixes without touching dot segments does.
func prefixRoute(path string) appRoute {
	for _, r := range []appRoute{routeAnon, routePublic, routeAdmin, routeOrders} {
		if path == "/"+string(r) || strings.HasPrefix(path, "/"+string(r)+"/") {
			return r
		}
	}
	return ""
}

// variant is one request of the differential.
type variant struct {
	id      int
	method  string
	target  string      // the request target, sent as is
	host    string      // the Host header; "" = the proxy's address
	headers [][2]string // sent in this order
	token   diffLevel   // the level of the token sent properly ("Bearer <token>"), levelNone for none
	auth    string      // a raw Authorization value instead of a proper one ("" = none or proper)
	forged  diffLevel   // the level a forged token in auth claims
	control appRoute    // a control: must be allowed and run this route
}

func (v variant) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "#%d %s %s token=%s", v.id, v.method, strconv.Quote(v.target), v.token)
	if v.host != "" {
		fmt.Fprintf(&b, " Host=%q", v.host)
	}
	if v.auth != "" {
		fmt.Fprintf(&b, " Authorization=%q (FORGED: a token of another key claiming %s)", v.auth, v.forged)
	}
	for _, h := range v.headers {
		fmt.Fprintf(&b, " %s=%q", h[0], h[1])
	}
	return b.String()
}

// dotSpellings are "." and ".." in every spelling of their bytes.
var dotSpellings = [2][]string{
	{".", "%2e", "%2E"},
	{"..", ".%2e", ".%2E", "%2e.", "%2E.", "%2e%2e", "%2E%2E", "%2e%2E", "%2E%2e"},
}

// variantGen generates the variants from a fixed seed.
type variantGen struct {
	rnd *rand.Rand
	id  int
}

func (g *variantGen) pick(list []string) string { return list[g.rnd.IntN(len(list))] }

func (g *variantGen) hex(b byte) string {
	if g.rnd.IntN(2) == 0 {
		return fmt.Sprintf("%%%02X", b)
	}
	return fmt.Sprintf("%%%02x", b)
}

// slashes returns the positions of '/' in p after the first byte.
func slashes(p string) []int {
	var out []int
	for i := 1; i < len(p); i++ {
		if p[i] == '/' {
			out = append(out, i)
		}
	}
	return out
}

// mutate applies one random path mutation to p.
func (g *variantGen) mutate(p string) string {
	sl := slashes(p)
	at := func() int { // a '/' to work at (the first one when there is no other)
		if len(sl) == 0 {
			return 0
		}
		return sl[g.rnd.IntN(len(sl))]
	}
	switch g.rnd.IntN(11) {
	case 0, 1: // percent-encode one byte (never the leading '/')
		if len(p) < 2 {
			return p
		}
		i := 1 + g.rnd.IntN(len(p)-1)
		if p[i] == '%' {
			return p[:i] + "%25" + p[i+1:] // double encoding
		}
		return p[:i] + g.hex(p[i]) + p[i+1:]
	case 2: // double encoding of an escape, or of a dot
		if i := strings.IndexByte(p, '%'); i >= 0 {
			return p[:i] + "%25" + p[i+1:]
		}
		return strings.Replace(p, ".", "%252e", 1)
	case 3: // an empty segment
		i := at()
		return p[:i] + "/" + p[i:]
	case 4: // a "." segment
		i := at()
		return p[:i] + "/" + g.pick(dotSpellings[0]) + p[i:]
	case 5: // a segment and ".." undoing it
		i := at()
		return p[:i] + "/" + g.pick([]string{"x", "admin", "anon", "public", "orders"}) + "/" + g.pick(dotSpellings[1]) + p[i:]
	case 6: // "..;" (servlet containers read it as "..")
		i := at()
		return p[:i] + "/" + g.pick([]string{"..;", "..;x", "%2e%2e;", ".%2e;"}) + p[i:]
	case 7: // path parameters on a segment
		i := at()
		if i == 0 {
			i = len(p)
		}
		return p[:i] + g.pick([]string{";", ";x", ";jsessionid=1", "%3b", "%3Bx"}) + p[i:]
	case 8: // a backslash for a slash
		if len(sl) == 0 {
			return p
		}
		i := at()
		return p[:i] + g.pick([]string{"\\", "%5c", "%5C", "%2f", "%2F"}) + p[i+1:]
	case 9: // a trailing dot segment, or a trailing empty one
		return strings.TrimSuffix(p, "/") + "/" + g.pick(append(append([]string{"", "/"}, dotSpellings[0]...), dotSpellings[1]...))
	default: // a leading empty segment
		return "/" + p
	}
}

// basePaths are the routes and crossings the mutations start from.
var basePaths = []string{
	"/anon/x", "/public/x", "/admin/secret", "/orders/1", "/orders", "/admin", "/public/%7e/x",
	"/admin/../anon/x", "/admin/x/../../public/y", "/public/../admin/secret", "/anon/../admin/secret",
	"/anon/admin/secret", "/admin/../orders/1", "/orders/1/../../admin/x", "/public/x/..",
}

// random returns one generated variant.
func (g *variantGen) random() variant {
	g.id++
	v := variant{id: g.id, method: g.pick([]string{"GET", "GET", "GET", "POST", "POST", "DELETE", "PUT", "HEAD"})}
	v.token = diffLevel(g.rnd.IntN(4))
	p := g.pick(basePaths)
	for range g.rnd.IntN(4) {
		p = g.mutate(p)
	}
	switch g.rnd.IntN(10) {
	case 0: // absolute form
		p = g.pick([]string{"http://", "HTTP://", "https://"}) + g.pick([]string{"127.0.0.1", "admin.internal", "anon"}) + p
	case 1:
		p += "?" + g.pick([]string{"a=1", "x=/admin", "_method=GET"})
	}
	v.target = p
	if g.rnd.IntN(10) == 0 {
		v.host = g.pick([]string{"admin.internal", "ADMIN.INTERNAL.", "admin.internal:80", "anon"})
	}
	if g.rnd.IntN(4) == 0 { // a method override
		m := g.pick([]string{"DELETE", "DELETE", "PUT", "GET", "delete", "OPTIONS"})
		switch n := g.rnd.IntN(5); n {
		case 4: // PHP hands ".method" and " _method" to Laravel as "_method"
			v.target = addQuery(v.target, g.pick([]string{"_method", "_method", "%5Fmethod", ".method", "+_method", "_METHOD"})+"="+m)
		default:
			v.headers = append(v.headers, [2]string{[]string{"X-HTTP-Method-Override", "X-HTTP-Method", "X-Method-Override", "X_HTTP_Method_Override"}[n], m})
		}
	}
	if g.rnd.IntN(3) == 0 { // forwarded headers
		for range 1 + g.rnd.IntN(2) {
			switch g.rnd.IntN(9) {
			case 0, 1:
				v.headers = append(v.headers, [2]string{"X-Forwarded-Host", g.pick([]string{"admin.internal", "admin.internal:443", "x, admin.internal"})})
			case 2, 3:
				v.headers = append(v.headers, [2]string{"Forwarded", g.pick([]string{"host=admin.internal", "for=1.2.3.4;host=admin.internal;proto=https", `host="admin.internal"`})})
			case 4:
				v.headers = append(v.headers, [2]string{"X_Forwarded_Host", "admin.internal"})
			case 5:
				v.headers = append(v.headers, [2]string{"X-Forwarded-Proto", "https"})
			case 6:
				v.headers = append(v.headers, [2]string{g.pick([]string{"X-Original-Uri", "X-Forwarded-Uri"}), "/anon/x"})
			case 7:
				v.headers = append(v.headers, [2]string{g.pick([]string{"X-Original-Host", "X-Forwarded-Server"}), "admin.internal"})
			default:
				v.headers = append(v.headers, [2]string{g.pick([]string{"X-Original-Method", "X-Forwarded-Method"}), "GET"})
			}
		}
	}
	if v.token == levelNone && g.rnd.IntN(4) == 0 { // a forged token in a spelling that is not "Bearer <token>"
		v.forged = levelAdmin
		v.auth = g.pick([]string{"Bearer\t", "Bearer:", "Bearer  ", "Bearer\t\t", "DPoP\t", "Bearer ,", " Bearer "}) + "FORGED"
	}
	return v
}

func addQuery(target, q string) string {
	if strings.Contains(target, "?") {
		return target + "&" + q
	}
	return target + "?" + q
}

// fixedVariants are the reported bypasses and the controls.
func fixedVariants() []variant {
	vs := []variant{
		// Controls: must be allowed and reach their route.
		{method: "GET", target: "/public/x", token: levelReader, control: routePublic},
		{method: "GET", target: "/public/%7e/x", token: levelReader, control: routePublic},
		{method: "GET", target: "/orders/1", token: levelWriter, control: routeOrders},
		{method: "POST", target: "/orders/1", token: levelWriter, control: routeOrders},
		{method: "GET", target: "/anon/x", control: routeAnon},
		{method: "GET", target: "/admin/secret", token: levelAdmin, control: routeAdmin},
		{method: "DELETE", target: "/orders/1", token: levelAdmin, control: routeOrders},
		// The reproductions.
		{method: "GET", target: "/admin/%2e%2e/anon/x"},
		{method: "GET", target: "/admin/../anon/x"},
		{method: "GET", target: "/admin/x/../../public/y", token: levelReader},
		{method: "GET", target: "//anon/admin/secret"},
		{method: "GET", target: "/admin//../anon/x"},
		{method: "GET", target: "/public/x", token: levelReader, headers: [][2]string{{"X-Forwarded-Host", "admin.internal"}}},
		{method: "GET", target: "/public/x", token: levelReader, headers: [][2]string{{"Forwarded", "host=admin.internal"}}},
		{method: "POST", target: "/orders/1", token: levelWriter, headers: [][2]string{{"X-HTTP-Method-Override", "DELETE"}}},
		{method: "POST", target: "/orders/1?_method=DELETE", token: levelWriter},
		{method: "GET", target: "/anon/x", auth: "Bearer\tFORGED", forged: levelAdmin},
		{method: "GET", target: "/anon/x", auth: "Bearer:FORGED", forged: levelAdmin},
		{method: "GET", target: "/anon/x", auth: "DPoP FORGED", forged: levelAdmin}, // DPoP is off in this configuration
		// Their neighbours: CGI twins (a WSGI or Rack application reads
		// X_Forwarded_Host as X-Forwarded-Host: Puma's CVE-2024-45614), PHP's
		// spellings of _method, and what held before.
		{method: "GET", target: "/public/x", token: levelReader, headers: [][2]string{{"X_Forwarded_Host", "admin.internal"}}},
		{method: "POST", target: "/orders/1", token: levelWriter, headers: [][2]string{{"X_HTTP_Method_Override", "DELETE"}}},
		{method: "POST", target: "/orders/1?.method=DELETE", token: levelWriter},
		{method: "GET", target: "/public/x", token: levelReader, host: "admin.internal"},
		{method: "GET", target: "http://admin.internal/public/x", token: levelReader},
		{method: "GET", target: "/public/..%2Fadmin/secret", token: levelReader},
		{method: "GET", target: "/public/..\\admin/secret", token: levelReader},
		{method: "GET", target: "/anon/..;/admin/secret"},
		// Hosts nginx serves as admin.internal that a host parser of the
		// URL kind reads otherwise (a red team's find).
		{method: "GET", target: "/public/x", token: levelReader, host: "admin.internal:1:2"},
		{method: "GET", target: "/public/x", token: levelReader, host: "admin.internal:x:"},
		{method: "GET", target: "/public/x", token: levelReader, headers: [][2]string{{"X-Forwarded-Host", "admin.internal:1:2"}}},
	}
	for i := range vs {
		vs[i].id = -1 - i
	}
	return vs
}

// diffVariants are the fixed variants and n generated ones (seed fixed).
func diffVariants(n int) []variant {
	g := &variantGen{rnd: rand.New(rand.NewPCG(24, 2026))}
	vs := fixedVariants()
	for range n {
		vs = append(vs, g.random())
	}
	return vs
}

// received is a request as the upstream got it, bytes as the proxy sent them.
type received struct {
	method, target string
	header         textproto.MIMEHeader
	body           string
}

// recorder is an upstream that reads requests with its own minimal HTTP/1.1
// parser (Go's server would refuse some targets a proxy forwards, and so
// hide them) and records them by their X-Variant header. It answers 200.
type recorder struct {
	addr string
	ln   net.Listener
	wg   sync.WaitGroup
	mu   sync.Mutex
	got  map[string][]received
}

// startRecorder listens on 127.0.0.1:0; t.Cleanup closes it and waits for
// its connections.
func startRecorder(t *testing.T) *recorder {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &recorder{addr: ln.Addr().String(), ln: ln, got: map[string][]received{}}
	var conns sync.Map
	r.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Store(c, true)
			r.wg.Go(func() {
				defer conns.Delete(c)
				r.serve(c)
			})
		}
	})
	t.Cleanup(func() {
		ln.Close()
		conns.Range(func(c, _ any) bool { c.(net.Conn).Close(); return true })
		r.wg.Wait()
	})
	return r
}

func (r *recorder) serve(c net.Conn) {
	defer c.Close()
	br := bufio.NewReader(c)
	tp := textproto.NewReader(br)
	for {
		line, err := tp.ReadLine()
		if err != nil {
			return
		}
		method, rest, ok1 := strings.Cut(line, " ")
		target, _, ok2 := strings.Cut(rest, " ")
		h, err := tp.ReadMIMEHeader()
		if !ok1 || !ok2 || err != nil {
			return
		}
		var body io.Reader = strings.NewReader("")
		if strings.EqualFold(h.Get("Transfer-Encoding"), "chunked") {
			body = httputil.NewChunkedReader(br)
		} else if n, err := strconv.Atoi(h.Get("Content-Length")); err == nil && n > 0 {
			body = io.LimitReader(br, int64(n))
		}
		data, err := io.ReadAll(io.LimitReader(body, 1<<20))
		if err != nil {
			return
		}
		r.mu.Lock()
		id := h.Get("X-Variant")
		r.got[id] = append(r.got[id], received{method: method, target: target, header: h, body: string(data)})
		r.mu.Unlock()
		answer := "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Type: text/plain\r\n\r\nok"
		if method == "HEAD" {
			answer = strings.TrimSuffix(answer, "ok")
		}
		if _, err := io.WriteString(c, answer); err != nil {
			return
		}
	}
}

// take returns and forgets what arrived for variant id.
func (r *recorder) take(id int) []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	k := strconv.Itoa(id)
	got := r.got[k]
	delete(r.got, k)
	return got
}

// cgi returns the values of every header whose CGI name (upper case, '-'
// as '_') is that of name: what a WSGI or Rack application reads as
// HTTP_<NAME>, twins included.
func cgi(h textproto.MIMEHeader, name string) []string {
	want := strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
	var out []string
	for k, vs := range h {
		if strings.ToUpper(strings.ReplaceAll(k, "-", "_")) == want {
			out = append(out, vs...)
		}
	}
	return out
}

// appHosts are the hosts an application may act on for rec: Host, an
// absolute-form target's host, and what X-Forwarded-Host (Flask ProxyFix
// x_host, Express "trust proxy", Django USE_X_FORWARDED_HOST) and
// Forwarded's host= name, each element of a list. Lower case, without port
// or trailing dot.
func appHosts(rec received) []string {
	var hosts []string
	add := func(h string) {
		h = strings.Trim(strings.TrimSpace(h), `"`)
		if hh, _, err := net.SplitHostPort(h); err == nil {
			h = hh
		} else if i := strings.IndexByte(h, ':'); i > 0 && !strings.HasPrefix(h, "[") {
			// nginx's reading (ngx_http_validate_host): the host ends at
			// the first ':', whatever follows ("admin.internal:1:2").
			h = h[:i]
		}
		h = strings.TrimSuffix(strings.ToLower(h), ".")
		if !slices.Contains(hosts, h) {
			hosts = append(hosts, h)
		}
	}
	for _, v := range cgi(rec.header, "Host") {
		add(v)
	}
	if u, err := url.Parse(rec.target); err == nil && u.Scheme != "" && u.Host != "" {
		add(u.Host)
	}
	for _, v := range cgi(rec.header, "X-Forwarded-Host") {
		for h := range strings.SplitSeq(v, ",") {
			add(h)
		}
	}
	for _, v := range cgi(rec.header, "Forwarded") {
		for elem := range strings.SplitSeq(v, ",") {
			for pair := range strings.SplitSeq(elem, ";") {
				if k, val, ok := strings.Cut(strings.TrimSpace(pair), "="); ok && strings.EqualFold(k, "host") {
					add(val)
				}
			}
		}
	}
	return hosts
}

// appMethods are the methods an application may run rec as: its own, and
// what X-HTTP-Method-Override, X-HTTP-Method, X-Method-Override (Rack,
// Laravel, Symfony, Express's method-override) and a `_method` field in
// the query or a form body name, upper-cased (Rack upcases).
func appMethods(rec received) []string {
	methods := []string{strings.ToUpper(rec.method)}
	add := func(m string) {
		m = strings.ToUpper(strings.TrimSpace(m))
		if m != "" && !slices.Contains(methods, m) {
			methods = append(methods, m)
		}
	}
	for _, name := range []string{"X-HTTP-Method-Override", "X-HTTP-Method", "X-Method-Override"} {
		for _, v := range cgi(rec.header, name) {
			add(v)
		}
	}
	_, query, _ := strings.Cut(rec.target, "?")
	for _, form := range []string{query, rec.body} {
		// Pairs split at '&' and ';' (Rack before 3.0); names decoded and
		// mangled as PHP does (leading spaces dropped; ' ', '.', '[' read
		// as '_'), compared without case.
		for pair := range strings.FieldsFuncSeq(form, func(r rune) bool { return r == '&' || r == ';' }) {
			k, val, _ := strings.Cut(pair, "=")
			k, err1 := url.QueryUnescape(k)
			val, err2 := url.QueryUnescape(val)
			if err1 != nil || err2 != nil {
				continue
			}
			k = strings.NewReplacer(" ", "_", ".", "_", "[", "_").Replace(strings.TrimLeft(k, " "))
			if strings.EqualFold(k, "_method") {
				add(val)
			}
		}
	}
	return methods
}

// appIdentity is the level an application that trusts its gateway gives
// rec: it reads any JWT in Authorization, however spelled, and takes its
// scope without verifying it (the gateway did).
func appIdentity(rec received) diffLevel {
	best := levelNone
	for _, v := range rec.header.Values("Authorization") {
		for f := range strings.FieldsFuncSeq(v, func(r rune) bool { return r == ' ' || r == '\t' || r == ':' || r == ',' }) {
			parts := strings.Split(f, ".")
			if len(parts) != 3 {
				continue
			}
			payload, err := base64.RawURLEncoding.DecodeString(parts[1])
			if err != nil {
				continue
			}
			var c struct{ Scope string }
			if json.Unmarshal(payload, &c) != nil {
				continue
			}
			scopes := strings.Fields(c.Scope)
			for l, s := range map[diffLevel]string{levelReader: "read", levelWriter: "write", levelAdmin: "admin"} {
				if slices.Contains(scopes, s) && l > best {
					best = l
				}
			}
		}
	}
	return best
}

// execution is a route a modelled router ran.
type execution struct {
	router, method, host string
	route                appRoute
}

// serveMuxRoutes runs rec through a real http.ServeMux (patterns /anon/,
// /public/, /admin/, /orders/, and admin.internal/) for each host and
// method: what ran, redirects and 404s not counted.
func serveMuxRoutes(rec received, hosts, methods []string) []execution {
	mux := http.NewServeMux()
	var ran appRoute
	for _, r := range []appRoute{routeAnon, routePublic, routeAdmin, routeOrders} {
		mux.HandleFunc("/"+string(r)+"/", func(http.ResponseWriter, *http.Request) { ran = r })
	}
	mux.HandleFunc(string(routeAdminHost)+"/", func(http.ResponseWriter, *http.Request) { ran = routeAdminHost })
	u, err := url.ParseRequestURI(rec.target)
	if err != nil {
		return nil // net/http answers 400
	}
	var out []execution
	for _, h := range hosts {
		for _, m := range methods {
			ran = ""
			req := &http.Request{Method: m, URL: u, Host: h, RequestURI: rec.target, Header: http.Header{}}
			mux.ServeHTTP(httptest.NewRecorder(), req)
			if ran != "" {
				out = append(out, execution{"net/http.ServeMux", m, h, ran})
			}
		}
	}
	return out
}

// targetPath is the path of a request target, an absolute-form one's too,
// without the query.
func targetPath(target string) string {
	p, _, _ := strings.Cut(target, "?")
	if u, err := url.Parse(p); err == nil && u.Scheme != "" {
		return u.EscapedPath()
	}
	return p
}

// prefixRoutes: a router that percent-decodes the path and routes by prefix
// without removing dot segments (Flask's <path:p>, Express's static
// prefixes).
func prefixRoutes(rec received, hosts, methods []string) []execution {
	p, err := url.PathUnescape(targetPath(rec.target))
	if err != nil {
		return nil
	}
	return hostOrPath("prefix", prefixRoute(p), hosts, methods)
}

// servletRoutes: a servlet container's router (Tomcat, Jetty, Spring): path
// parameters (";…") cut from each segment, each decoded, empty and dot
// segments removed.
func servletRoutes(rec received, hosts, methods []string) []execution {
	var out []string
	for seg := range strings.SplitSeq(targetPath(rec.target), "/") {
		seg, _, _ = strings.Cut(seg, ";")
		s, err := url.PathUnescape(seg)
		if err != nil {
			return nil
		}
		switch s {
		case "", ".":
		case "..":
			if len(out) == 0 {
				return nil
			}
			out = out[:len(out)-1]
		default:
			out = append(out, s)
		}
	}
	return hostOrPath("servlet", prefixRoute("/"+strings.Join(out, "/")), hosts, methods)
}

// hostOrPath is what a router that took route from the path runs on each
// host: the admin.internal virtual host takes every path.
func hostOrPath(router string, route appRoute, hosts, methods []string) []execution {
	var out []execution
	for _, h := range hosts {
		r := route
		if h == string(routeAdminHost) {
			r = routeAdminHost
		}
		if r == "" {
			continue
		}
		for _, m := range methods {
			out = append(out, execution{router, m, h, r})
		}
	}
	return out
}

// whatwgScript reads [target, base] pairs, one JSON array a line, and
// prints for each what `new URL(target, base)` makes of it: its host name
// and its path, or null when it throws (the application answers 400).
const whatwgScript = `
const lines = require('fs').readFileSync(0, 'utf8').split('\n').filter(Boolean);
const out = lines.map(l => {
  const [t, b] = JSON.parse(l);
  try { const u = new URL(t, b); return [u.hostname, u.pathname]; } catch (e) { return null; }
});
process.stdout.write(JSON.stringify(out));
`

// whatwgQuery is one `new URL(target, "http://"+host)` to run.
type whatwgQuery struct {
	variant int
	target  string
	host    string
	methods []string
}

// whatwgRoutes runs every query through node in one process and returns
// what ran, by variant: the host is the URL's (`//anon/x` names host
// anon), the path WHATWG's (dot segments removed, %2e included, '\' read
// as '/'), decoded and routed by prefix.
func whatwgRoutes(t *testing.T, node string, qs []whatwgQuery) map[int][]execution {
	t.Helper()
	var in strings.Builder
	for _, q := range qs {
		line, _ := json.Marshal([2]string{q.target, "http://" + q.host})
		in.Write(line)
		in.WriteByte('\n')
	}
	cmd := exec.Command(node, "-e", whatwgScript)
	cmd.Stdin = strings.NewReader(in.String())
	var stderr strings.Builder
	cmd.Stderr = &stderr
	data, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, stderr.String())
	}
	var res []*[2]string
	if err := json.Unmarshal(data, &res); err != nil || len(res) != len(qs) {
		t.Fatalf("node answered %d results (%v), want %d: %.200s", len(res), err, len(qs), data)
	}
	out := map[int][]execution{}
	for i, q := range qs {
		if res[i] == nil {
			continue
		}
		p, err := url.PathUnescape(res[i][1])
		if err != nil {
			continue
		}
		out[q.variant] = append(out[q.variant], hostOrPath("whatwg-url", prefixRoute(p), []string{strings.ToLower(res[i][0])}, q.methods)...)
	}
	return out
}

// sendRaw sends v through the proxy at addr as written (Go's client would
// normalize the target) and returns the status, 0 when the proxy closed
// the connection without an answer.
func sendRaw(addr string, v variant, tokens map[diffLevel]string) (int, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	host := v.host
	if host == "" {
		host = addr
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: %s\r\nX-Variant: %d\r\nConnection: close\r\n", v.method, v.target, host, v.id)
	switch {
	case v.auth != "":
		fmt.Fprintf(&b, "Authorization: %s\r\n", strings.Replace(v.auth, "FORGED", tokens[-v.forged], 1))
	case v.token != levelNone:
		fmt.Fprintf(&b, "Authorization: Bearer %s\r\n", tokens[v.token])
	}
	for _, h := range v.headers {
		fmt.Fprintf(&b, "%s: %s\r\n", h[0], h[1])
	}
	if v.method != "GET" && v.method != "HEAD" {
		b.WriteString("Content-Length: 0\r\n")
	}
	b.WriteString("\r\n")
	if _, err := io.WriteString(c, b.String()); err != nil {
		return 0, err
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: v.method})
	if err != nil {
		return 0, nil // closed without an answer: nothing was allowed
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	resp.Body.Close()
	return resp.StatusCode, nil
}

// diffVariantCount is how many generated variants each proxy gets (besides
// the fixed ones).
const diffVariantCount = 300

// TestRouteDifferential: no request that nginx or Caddy, with their
// generated files, let through after jwksverify's decision is run by a
// modelled application router under a route whose policy the token does
// not satisfy; the controls are allowed and run the route they name.
func TestRouteDifferential(t *testing.T) {
	node := requireTool(t, "node", "nodejs")
	for _, px := range []string{"nginx", "caddy"} {
		t.Run(px, func(t *testing.T) {
			var proxy string
			if px == "nginx" {
				proxy = requireNginx(t)
			} else {
				proxy = requireTool(t, "caddy", "caddy")
			}
			b := startBackends(t, px, false, "", diffPolicies)
			rec := startRecorder(t)
			b.upstream = &echo{Addr: rec.addr}
			port := freePort(t)
			listen := "127.0.0.1:" + strconv.Itoa(port)
			conf := proxyConfig(t, px, b, listen)
			if px == "nginx" {
				runNginx(t, proxy, conf, port)
			} else {
				runCaddy(t, proxy, conf, listen)
			}
			tokens := map[diffLevel]string{}
			for l := levelReader; l <= levelAdmin; l++ {
				tokens[l] = b.is.Token(map[string]any{"scope": l.scope()})
				// A token signed with another key, claiming level l.
				tokens[-l] = testkeys.Mint("RS256", testkeys.Private(testkeys.RSA2048B), map[string]any{"kid": "rsa-a"},
					map[string]any{"iss": b.is.Issuer, "aud": b.is.Audience, "sub": "mallory", "exp": time.Now().Add(time.Hour).Unix(), "scope": l.scope()})
			}
			runDifferential(t, node, listen, rec, tokens, diffVariants(diffVariantCount))
		})
	}
}

// diffResult is a variant's outcome at the proxy.
type diffResult struct {
	v      variant
	status int
	got    []received
}

func runDifferential(t *testing.T, node, addr string, rec *recorder, tokens map[diffLevel]string, vs []variant) {
	results := make([]diffResult, len(vs))
	var wg sync.WaitGroup
	next := make(chan int)
	for range 4 {
		wg.Go(func() {
			for i := range next {
				status, err := sendRaw(addr, vs[i], tokens)
				if err != nil {
					t.Errorf("%v: %v", vs[i], err)
				}
				results[i] = diffResult{v: vs[i], status: status}
			}
		})
	}
	for i := range vs {
		next <- i
	}
	close(next)
	wg.Wait()

	var qs []whatwgQuery
	for i := range results {
		r := &results[i]
		r.got = rec.take(r.v.id)
		for _, got := range r.got {
			for _, h := range appHosts(got) {
				qs = append(qs, whatwgQuery{r.v.id, got.target, h, appMethods(got)})
			}
		}
	}
	whatwg := whatwgRoutes(t, node, qs)

	allowed, bypasses := 0, 0
	for _, r := range results {
		if len(r.got) > 0 {
			allowed++
		}
		var ran []execution
		for _, got := range r.got {
			hosts, methods := appHosts(got), appMethods(got)
			ran = append(ran, serveMuxRoutes(got, hosts, methods)...)
			ran = append(ran, prefixRoutes(got, hosts, methods)...)
			ran = append(ran, servletRoutes(got, hosts, methods)...)
			if id := appIdentity(got); id > r.v.token {
				bypasses++
				t.Errorf("BYPASS %v: jwksverify allowed it (proxy %d) and the application reads a %s identity from Authorization %q…, that jwksverify never verified",
					r.v, r.status, id, strings.SplitN(got.header.Get("Authorization"), ".", 2)[0])
			}
		}
		ran = append(ran, whatwg[r.v.id]...)
		if r.v.control != "" {
			if r.status != http.StatusOK || len(r.got) != 1 || !slices.ContainsFunc(ran, func(e execution) bool { return e.route == r.v.control }) {
				t.Errorf("control %v: status %d, upstream got %d, routers ran %v; want 200 and route %s", r.v, r.status, len(r.got), ran, r.v.control)
			}
		}
		var bad []string
		for _, e := range ran {
			if need := needs(e.route, e.method); need > r.v.token {
				bad = append(bad, fmt.Sprintf("%s ran %s %s on host %q (needs %s)", e.router, e.method, e.route, e.host, need))
			}
		}
		if len(bad) > 0 {
			bypasses++
			got := r.got[0]
			t.Errorf("BYPASS %v: jwksverify allowed it (proxy %d; the application got %s %q); %s",
				r.v, r.status, got.method, got.target, strings.Join(slices.Compact(bad), "; "))
		}
	}
	t.Logf("%d variants, %d allowed through to the application, %d bypasses", len(results), allowed, bypasses)
}
