package server

import (
	"errors"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"

	"github.com/jwksverify/jwksverify/internal/asciifold"
	"github.com/jwksverify/jwksverify/revoke"
	"github.com/jwksverify/jwksverify/signals"
)

// The revocation signals' endpoints (package signals checks the tokens and
// stores the entries; these adapt HTTP to it).
const (
	logoutPath = "/v1/logout/backchannel"
	ssfPath    = "/v1/ssf/events"
)

// signalRoutes are the endpoints of the configured receiver: back-channel
// logout when an issuer takes logout tokens, SET push when one takes
// pushed SETs.
func (s *Server) signalRoutes() []route {
	if s.signals == nil {
		return nil
	}
	post := []string{http.MethodPost}
	var routes []route
	if s.signals.Logouts() {
		routes = append(routes, route{path: logoutPath, methods: post, serve: s.serveLogout})
	}
	if s.signals.Pushes() {
		routes = append(routes, route{path: ssfPath, methods: post, serve: s.serveSSFEvents})
	}
	return routes
}

// logoutError is the body of a refused logout request (BCL §2.8, RFC 6749
// §5.2's shape).
type logoutError struct {
	Error       string `json:"error"`
	Description string `json:"error_description"`
}

// serveLogout is POST /v1/logout/backchannel (OpenID Connect Back-Channel
// Logout 1.0 §2.5): the form field logout_token, checked and stored by the
// receiver before the answer. 200 with Cache-Control: no-store; a refusal
// 400 invalid_request (nothing revoked); a store, replay store or key set
// that could not answer 503.
func (s *Server) serveLogout(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	refuse := func(msg string) {
		writeJSON(w, http.StatusBadRequest, logoutError{"invalid_request", msg})
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/x-www-form-urlencoded" {
		refuse("the request must be a form (application/x-www-form-urlencoded)")
		return
	}
	body, ok := s.readSignalBody(w, r)
	if !ok {
		refuse("the request body is larger than the limit")
		return
	}
	form, err := url.ParseQuery(string(body))
	switch {
	case err != nil:
		refuse("the form does not parse")
		return
	case len(form["logout_token"]) != 1:
		refuse("the form must hold exactly one logout_token")
		return
	}
	_, err = s.signals.Logout(r.Context(), form["logout_token"][0], s.now())
	switch {
	case err == nil:
		w.WriteHeader(http.StatusOK)
	case errors.Is(err, signals.ErrInvalid):
		refuse(err.Error())
	default:
		w.Header().Set("Retry-After", "1")
		writeJSON(w, http.StatusServiceUnavailable, logoutError{"temporarily_unavailable", "the logout was not acknowledged as stored; retry"})
	}
}

// setError is the body of a refused SET (RFC 8935 §2.3).
type setError struct {
	Err         string `json:"err"`
	Description string `json:"description"`
}

// serveSSFEvents is POST /v1/ssf/events (RFC 8935 push): a SET of the
// issuer whose push bearer token the Authorization header carries, checked
// and stored by the receiver before the answer. 202 with an empty body; a
// missing or unknown bearer 401 (the body is not read); a refusal 400 with
// its RFC 8935 code; a store that could not answer 503.
func (s *Server) serveSSFEvents(w http.ResponseWriter, r *http.Request) {
	scheme, bearer, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	issuer, ok := s.signals.PushIssuer(bearer)
	if !asciifold.EqualFold(scheme, "Bearer") || !ok || len(r.Header.Values("Authorization")) != 1 {
		w.Header().Set("WWW-Authenticate", `Bearer realm="jwksverify"`)
		writeJSON(w, http.StatusUnauthorized, setError{"authentication_failed", "a push bearer token of a configured issuer is required"})
		return
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/secevent+jwt" {
		writeJSON(w, http.StatusBadRequest, setError{"invalid_request", "the request must be a SET (application/secevent+jwt)"})
		return
	}
	body, ok := s.readSignalBody(w, r)
	if !ok {
		writeJSON(w, http.StatusBadRequest, setError{"invalid_request", "the SET is larger than the limit"})
		return
	}
	_, _, err := s.signals.Receive(r.Context(), issuer, string(body), revoke.SourceSSFPush, s.now())
	switch {
	case err == nil:
		w.WriteHeader(http.StatusAccepted)
	case errors.Is(err, signals.ErrInvalid):
		writeJSON(w, http.StatusBadRequest, setError{signals.Code(err), err.Error()})
	default:
		w.Header().Set("Retry-After", "1")
		writeJSON(w, http.StatusServiceUnavailable, setError{"temporarily_unavailable", "the SET was not acknowledged as stored; retry"})
	}
}

// readSignalBody reads r's body, bounded by the server's body limit while
// it is read; ok is false when it is larger (or could not be read).
func (s *Server) readSignalBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.maxBody))
	return b, err == nil
}

// Signals returns the receiver of revocation signals ([Options.Signals]),
// nil when none: a poller applies the SETs it polls through it.
func (s *Server) Signals() *signals.Receiver { return s.signals }
