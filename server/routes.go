package server

import (
	"bytes"
	"encoding/json"
	"net/http"
	"path"
	"strings"

	"github.com/jwksverify/jwksverify/api"
)

// route is one endpoint served through the mux.
type route struct {
	// path is the mux pattern: an exact path.
	path string
	// methods are the methods the endpoint answers; any other gets 405
	// with an Allow header.
	methods []string
	serve   http.HandlerFunc
	// admin marks an operator endpoint (health, readiness, issuers,
	// metrics): with [Options.SeparateAdmin] it is served by
	// [Server.AdminHandler] only.
	admin bool
	// adminOnly marks an endpoint that [Server.AdminHandler] serves and
	// [Server.Handler] never does, whatever SeparateAdmin says: the
	// revocations admin API is for admin_listen alone.
	adminOnly bool
}

// authzPath is forward-auth's path: it and every path below it, any method
// (see isAuthzPath).
const authzPath = "/v1/authz"

// routeTable lists every endpoint of the mux, with its methods: the one
// place routes are declared (docs/API.md is tested against it). /metrics is
// there when [Options.MetricsHandler] is set.
func (s *Server) routeTable() []route {
	get := []string{http.MethodGet, http.MethodHead}
	post := []string{http.MethodPost}
	routes := []route{
		{path: "/v1/verify", methods: post, serve: s.callerAuth(s.serveVerify)},
		{path: "/v1/verify/batch", methods: post, serve: s.callerAuth(s.serveBatch)},
		{path: "/introspect", methods: post, serve: s.serveIntrospect},
		{path: "/healthz", methods: get, serve: s.serveHealthz, admin: true},
		{path: "/readyz", methods: get, serve: s.serveReadyz, admin: true},
		{path: "/v1/issuers", methods: get, serve: s.serveIssuers, admin: true},
		{path: "/openapi.yaml", methods: get, serve: serveOpenAPI(api.OpenAPI())},
	}
	routes = append(routes, s.signalRoutes()...)
	if s.metricsHandler != nil {
		routes = append(routes, route{path: "/metrics", methods: get, serve: s.metricsHandler.ServeHTTP, admin: true})
	}
	if s.revocations != nil {
		routes = append(routes,
			route{path: revocationsPath, methods: []string{http.MethodGet, http.MethodHead, http.MethodPost}, serve: s.adminAuth(s.serveRevocations), admin: true, adminOnly: true},
			route{path: revocationsPath + "/{id}", methods: []string{http.MethodDelete}, serve: s.adminAuth(s.deleteRevocation), admin: true, adminOnly: true})
	}
	if s.minter != nil {
		// The minted tokens' keys: served on the admin handler too
		// (routes), for consumers that reach only the admin listener.
		routes = append(routes, route{path: JWKSPath, methods: get, serve: s.serveJWKS})
	}
	if s.resource != nil {
		for _, p := range s.resource.paths {
			routes = append(routes, route{path: p, methods: get, serve: s.serveResourceMetadata})
		}
	}
	return routes
}

// callerAuth wraps a JSON verify endpoint: with [Options.APIAuth] a caller
// without an introspection client's credentials or a verified client
// certificate gets 401 before its body is read.
func (s *Server) callerAuth(serve http.HandlerFunc) http.HandlerFunc {
	if !s.apiAuth {
		return serve
	}
	return func(w http.ResponseWriter, r *http.Request) {
		if !s.authenticateCaller(r) {
			w.Header().Set("WWW-Authenticate", `Basic realm="jwksverify"`)
			writeError(w, http.StatusUnauthorized, "invalid_client", "client authentication failed")
			return
		}
		serve(w, r)
	}
}

// routes builds the handler of the endpoints admin selects: all of them
// (all), the main listener's (the API: all but the admin endpoints), or the
// admin endpoints only. Forward-auth is dispatched before the mux: its paths
// are whatever the proxy appends (Envoy adds the original path), which must
// not be cleaned or redirected, and it is the hot path.
func (s *Server) routes(sel routeSet) http.Handler {
	mux := http.NewServeMux()
	for _, rt := range s.routeTable() {
		if (sel == apiRoutes && rt.admin) || (sel == adminRoutes && !rt.admin && rt.path != JWKSPath) || (sel != adminRoutes && rt.adminOnly) {
			continue
		}
		mux.HandleFunc(rt.path, func(w http.ResponseWriter, r *http.Request) {
			if !allowMethods(w, r, rt.methods...) {
				return
			}
			rt.serve(w, r)
		})
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "not_found", "no such endpoint")
	})
	// http.ServeMux answers a path it would clean (//v1/verify,
	// /v1/./issuers, /a/../healthz) with a 307 text/html redirect, which
	// no endpoint documents (api/openapi.yaml: anything else is the JSON
	// 404) and which carries no Cache-Control: no-store. Such a path is
	// no endpoint.
	var served http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodConnect && r.URL.Path != cleanPath(r.URL.Path) {
			writeError(w, http.StatusNotFound, "not_found", "no such endpoint")
			return
		}
		mux.ServeHTTP(w, r)
	})
	if sel == adminRoutes {
		return served
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if isAuthzPath(r.URL.Path) {
			s.serveAuthz(w, r)
			return
		}
		if strings.HasPrefix(r.URL.Path, policyPrefix) {
			s.servePolicy(w, r)
			return
		}
		served.ServeHTTP(w, r)
	})
}

// cleanPath is the path http.ServeMux redirects p to: rooted, without dot
// or empty segments, keeping a trailing slash.
func cleanPath(p string) string {
	if p == "" {
		return "/"
	}
	if p[0] != '/' {
		p = "/" + p
	}
	np := path.Clean(p)
	if p[len(p)-1] == '/' && np != "/" {
		np += "/"
	}
	return np
}

// routeSet selects the endpoints a handler serves.
type routeSet int

const (
	allRoutes   routeSet = iota
	apiRoutes            // all but the admin endpoints
	adminRoutes          // the admin endpoints only
)

// isAuthzPath reports whether path is /v1/authz or below it.
func isAuthzPath(path string) bool {
	rest, ok := strings.CutPrefix(path, authzPath)
	return ok && (rest == "" || rest[0] == '/')
}

// allowMethods answers 405 with an Allow header unless r's method is one of
// methods, and reports whether it is.
func allowMethods(w http.ResponseWriter, r *http.Request, methods ...string) bool {
	for _, m := range methods {
		if r.Method == m {
			return true
		}
	}
	w.Header().Set("Allow", strings.Join(methods, ", "))
	writeError(w, http.StatusMethodNotAllowed, "method_not_allowed", "use "+strings.Join(methods, " or "))
	return false
}

// setJSONHeaders sets the headers of every JSON response: its type, no
// sniffing, and no caching (responses carry claims and verdicts).
func setJSONHeaders(h http.Header) {
	h["Content-Type"] = []string{"application/json; charset=utf-8"}
	h["X-Content-Type-Options"] = []string{"nosniff"}
	h["Cache-Control"] = []string{"no-store"}
}

// writeJSON writes v as the JSON body of a status response.
func writeJSON(w http.ResponseWriter, status int, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		// Only our own response types are encoded here; they always encode.
		writeError(w, http.StatusInternalServerError, "internal", "could not encode the response")
		return
	}
	writeRaw(w, status, buf.Bytes())
}

// writeRaw writes body, already JSON, as a status response.
func writeRaw(w http.ResponseWriter, status int, body []byte) {
	setJSONHeaders(w.Header())
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// errorBody is the body of a refused request (not a token verdict).
type errorBody struct {
	Error   string `json:"error"`
	Message string `json:"message,omitempty"`
}

// writeError writes {"error":code,"message":msg}.
func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, errorBody{Error: code, Message: msg})
}
