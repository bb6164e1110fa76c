package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// ResourceMetadata is the RFC 9728 protected resource metadata of the API
// that jwksverify guards.
type ResourceMetadata struct {
	// Resource is the protected resource's identifier: an https URL (http
	// for loopback hosts) without query or fragment. Required.
	Resource string
	// AuthorizationServers are the issuers clients get tokens from. Empty
	// means none is listed.
	AuthorizationServers []string
	// ScopesSupported are the scopes the resource uses. Nil means every
	// scope the policies require, sorted.
	ScopesSupported []string
	// URL is where clients fetch the metadata, named in every 401
	// (resource_metadata="URL"); the proxy must route its path to
	// jwksverify. Empty means the RFC 9728 §3.1 URL of Resource: its
	// origin, then /.well-known/oauth-protected-resource, then its path.
	URL string
}

// resourceMetadata is the served document and where.
type resourceMetadata struct {
	url   string
	paths []string // the mux paths it is served at
	body  []byte
}

// setResourceMetadata validates rm, precomputes its document and makes every
// 401 name it.
func (s *Server) setResourceMetadata(rm *ResourceMetadata) error {
	if rm == nil {
		return nil
	}
	u, err := url.Parse(rm.Resource)
	if err != nil || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || (u.Scheme != "https" && u.Scheme != "http") {
		return fmt.Errorf("%w: resource metadata: resource %q is not an absolute http(s) URL without query and fragment", ErrInvalidOptions, rm.Resource)
	}
	meta := rm.URL
	if meta == "" {
		meta = u.Scheme + "://" + u.Host + wellKnown + strings.TrimSuffix(u.EscapedPath(), "/")
	}
	mu, err := url.Parse(meta)
	if err != nil || mu.Host == "" || (mu.Scheme != "https" && mu.Scheme != "http") || strings.ContainsAny(meta, `" `) {
		return fmt.Errorf("%w: resource metadata: url %q is not an absolute http(s) URL", ErrInvalidOptions, meta)
	}
	scopes := rm.ScopesSupported
	if scopes == nil {
		for _, p := range s.policies.Policies() {
			if p.Scopes() != "" {
				scopes = append(scopes, strings.Fields(p.Scopes())...)
			}
		}
		slices.Sort(scopes)
		scopes = slices.Compact(scopes)
	}
	doc := struct {
		Resource             string   `json:"resource"`
		AuthorizationServers []string `json:"authorization_servers,omitempty"`
		ScopesSupported      []string `json:"scopes_supported,omitempty"`
		BearerMethods        []string `json:"bearer_methods_supported"`
	}{rm.Resource, rm.AuthorizationServers, scopes, []string{"header"}}
	body, err := json.Marshal(doc)
	if err != nil {
		return fmt.Errorf("%w: resource metadata: %w", ErrInvalidOptions, err)
	}
	paths := []string{wellKnown}
	if p := mu.EscapedPath(); p != wellKnown && strings.HasPrefix(p, "/") {
		paths = append(paths, p)
	}
	s.resource = &resourceMetadata{url: meta, paths: paths, body: append(body, '\n')}
	s.buildDenials(meta)
	return nil
}

// wellKnown is the RFC 9728 well-known path.
const wellKnown = "/.well-known/oauth-protected-resource"

// serveResourceMetadata is GET /.well-known/oauth-protected-resource.
func (s *Server) serveResourceMetadata(w http.ResponseWriter, r *http.Request) {
	setJSONHeaders(w.Header())
	w.Header()["Cache-Control"] = []string{"max-age=300"}
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(s.resource.body)
}
