package server

import (
	"net/http"
	"strings"
)

// This file is forward-auth (/v1/authz, /v1/policy/<name>): the front end
// for nginx auth_request, Traefik and Caddy forward_auth, and Envoy's HTTP
// ext_authz. It resolves the original request once, as the proxy preset
// says, hands the headers to [Server.Decide] and writes the decision.

// serveAuthz is forward-auth: /v1/authz and /v1/authz/*, any method. Allow
// is exactly 200 with an empty body and the claim headers; deny is 401 with
// the RFC 6750 challenge (403 when a policy refuses a valid token); 503
// only when keys are unavailable. It never reads the request body.
func (s *Server) serveAuthz(w http.ResponseWriter, r *http.Request) {
	o, err := s.proxy.From(r, authzPath)
	d := s.Decide(r.Context(), &Call{Endpoint: EndpointAuthz, Headers: r.Header, Original: o, OriginalErr: err, Routed: true, Mint: true})
	s.writeForwardAuth(w, &d)
}

// policyPrefix is the path of explicitly named policies: /v1/policy/<name>
// and below it.
const policyPrefix = "/v1/policy/"

// servePolicy is forward-auth under a named policy: /v1/policy/<name> and
// /v1/policy/<name>/*, any method. An unknown name is 404.
func (s *Server) servePolicy(w http.ResponseWriter, r *http.Request) {
	rest := strings.TrimPrefix(r.URL.EscapedPath(), policyPrefix)
	name, _, _ := strings.Cut(rest, "/")
	if _, ok := s.policies.Lookup(name); !ok {
		writeError(w, http.StatusNotFound, "not_found", "no such policy")
		return
	}
	o, err := s.proxy.From(r, policyPrefix+name)
	d := s.Decide(r.Context(), &Call{Endpoint: EndpointAuthz, Headers: r.Header, Original: o, OriginalErr: err, Policy: name, Mint: true})
	s.writeForwardAuth(w, &d)
}
