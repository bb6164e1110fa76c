package server

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// routes builds the handler of every endpoint. Forward-auth is dispatched
// before the mux: its paths are whatever the proxy appends (Envoy adds the
// original path), which must not be cleaned or redirected, and it is the hot
// path.
func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/verify", s.serveVerify)
	mux.HandleFunc("/v1/verify/batch", s.serveBatch)
	mux.HandleFunc("/introspect", s.serveIntrospect)
	mux.HandleFunc("/healthz", s.serveHealthz)
	mux.HandleFunc("/readyz", s.serveReadyz)
	mux.HandleFunc("/v1/issuers", s.serveIssuers)
	metrics := promhttp.HandlerFor(s.registry, promhttp.HandlerOpts{Registry: s.registry})
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, r *http.Request) {
		if !allowMethods(w, r, http.MethodGet, http.MethodHead) {
			return
		}
		metrics.ServeHTTP(w, r)
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "not_found", "no such endpoint")
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if isAuthzPath(r.URL.Path) {
			s.serveAuthz(w, r)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// isAuthzPath reports whether path is /v1/authz or below it.
func isAuthzPath(path string) bool {
	rest, ok := strings.CutPrefix(path, "/v1/authz")
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
