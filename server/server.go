// Package server answers verification requests from other services over
// HTTP: JSON verify, RFC 7662 introspection, forward-auth for nginx, Traefik,
// Caddy and Envoy, Envoy ext_authz gRPC, health, readiness and Prometheus
// metrics. It reads keys only through the verifier and the issuers'
// cache.Keys; it never fetches keys itself.
package server

import (
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/jwksverify/jwksverify/verify"
)

// Defaults applied by [New] to zero-valued options.
const (
	DefaultMaxBodyBytes = 65536
	DefaultMaxBatch     = 100
)

// TokenSource says where a request carries its token. Exactly one of Header,
// Cookie and Query is set.
type TokenSource struct {
	// Header is a request header name; Prefix, if set, must start its value
	// (compared case-insensitively, e.g. "Bearer ") and is removed.
	Header, Prefix string
	// Cookie is a cookie name.
	Cookie string
	// Query is a URL query parameter name.
	Query string
}

// IntrospectionClient is a caller allowed to use /introspect, authenticated
// by HTTP Basic (id:secret) or Bearer (secret).
type IntrospectionClient struct {
	ID     string
	Secret string
}

// Options configure a [Server].
type Options struct {
	// Verifier decides every token. Required.
	Verifier *verify.Verifier
	// TokenSources are tried in order by forward-auth. Empty means
	// [{Header: "Authorization", Prefix: "Bearer "}].
	TokenSources []TokenSource
	// ClaimsToHeaders maps, per issuer (the configured issuer string), a
	// claim name to the response header that carries its value on an allowed
	// forward-auth request. The verifier must extract the same claims
	// (verify.Issuer.ExtractClaims).
	ClaimsToHeaders map[string]map[string]string
	// StripAuthorization adds "x-envoy-auth-headers-to-remove: authorization"
	// to allowed forward-auth responses (and removes it over gRPC).
	StripAuthorization bool
	// IntrospectionClients may call /introspect. Empty means every call to
	// /introspect is refused with 401.
	IntrospectionClients []IntrospectionClient
	// MaxBodyBytes bounds request bodies. Zero means 64 KiB.
	MaxBodyBytes int64
	// MaxBatch bounds the tokens of one /v1/verify/batch. Zero means 100.
	MaxBatch int
	// Registry receives the server's metrics and is served on /metrics. Nil
	// means a new registry (with Go and process collectors).
	Registry *prometheus.Registry
	// Logger receives one line per rejected token (issuer, kid, class; never
	// the token). Nil means slog.Default().
	Logger *slog.Logger
	// Now returns the current time. Nil means time.Now.
	Now func() time.Time
	// Version is reported by /healthz.
	Version string
}
