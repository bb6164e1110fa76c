package server

import (
	"fmt"
	"net/http"
	"net/textproto"
	"time"

	mintpkg "github.com/jwksverify/jwksverify/mint"
	"github.com/jwksverify/jwksverify/verify"
)

// This file is the mint stage, after the policy: an allowed decision under
// a policy with mint carries the token minted for the upstream (package
// mint) to the renderer, which puts it in the mint header of forward-auth
// and gRPC answers (replacing the caller's Authorization) and in
// /v1/verify's "minted". It also serves the minter's public keys,
// /.well-known/jwks.json.

// JWKSPath is where the public keys of the minted tokens are served, on
// the main and the admin handler, when a minter is configured.
const JWKSPath = "/.well-known/jwks.json"

// jwksCacheControl lets consumers cache the minted tokens' keys for five
// minutes: the rotation procedure (docs/OPERATIONS.md) waits longer than
// that between publishing a key and signing with it.
var jwksCacheControl = []string{"public, max-age=300"}

// setMint checks and keeps the minter and the policies that mint.
func (s *Server) setMint(opts Options) error {
	if opts.Minter == nil {
		if len(opts.MintPolicies) > 0 {
			return invalidOption("MintPolicies", "policies mint but no Minter is set")
		}
		return nil
	}
	s.minter = opts.Minter
	s.mintHeader = textproto.CanonicalMIMEHeaderKey(opts.Minter.Header())
	if err := CheckMintHeader(s.mintHeader); err != nil {
		return invalidOption("Minter", "header: %w", err)
	}
	// A claim header that is the mint header or one of its CGI twins
	// (X-Internal_Token beside X-Internal-Token: one HTTP_X_INTERNAL_TOKEN
	// to a CGI upstream) would hand the upstream a claim's value where it
	// reads the minted token.
	same := func(h string) bool { return cgiName(h) == cgiName(s.mintHeader) }
	for _, is := range s.issuers {
		for _, h := range is.answer {
			if same(h.header) {
				return invalidOption("Minter", "header %s is also a claims_to_headers header (%s)", s.mintHeader, h.header)
			}
		}
	}
	for name, h := range s.policyHeaders {
		for _, ch := range h {
			if same(ch.header) {
				return invalidOption("Minter", "header %s is also policy %s's claims_to_headers header (%s)", s.mintHeader, name, ch.header)
			}
		}
	}
	if s.mintHeader != "Authorization" {
		// The proxies drop a client's own mint header (and its twins)
		// before the authorization call: a token source there would never
		// reach jwksverify.
		for _, src := range s.sources {
			if src.header != "" && same(src.header) {
				return invalidOption("Minter", "header %s is also a token source's header (%s)", s.mintHeader, src.header)
			}
		}
	}
	if s.mintHeader != "Authorization" {
		s.mintTwins = append(HeaderTwins(s.mintHeader), s.mintHeader)
	}
	s.mintPolicies = make(map[string]*mintpkg.Policy, len(opts.MintPolicies))
	for name, p := range opts.MintPolicies {
		if _, ok := s.policies.Lookup(name); !ok || p == nil {
			return invalidOption("MintPolicies["+name+"]", "no such policy")
		}
		s.mintPolicies[name] = p
	}
	return nil
}

// CheckMintHeader reports whether name may carry a minted token to the
// upstream: Authorization (where it replaces the caller's credential), or
// a header that may carry a claim ([CheckClaimHeader]). The message has no
// package prefix.
func CheckMintHeader(name string) error {
	if textproto.CanonicalMIMEHeaderKey(name) == "Authorization" {
		return nil
	}
	return CheckClaimHeader(name)
}

// mint is the mint stage: it adds to the allowed decision d the token of
// the policy of st when it mints, minted for (or reused from the cache of)
// the source token. A token that cannot be minted fails closed: d becomes
// a 503, as keys that are unavailable (the upstream expects the minted
// token; the request never passes without it).
func (s *Server) mint(d *Decision, st *policyStage, token string, now time.Time) {
	if s.minter == nil || st.p == nil || d.Result == nil {
		return
	}
	mp := s.mintPolicies[st.name]
	if mp == nil {
		return
	}
	t, err := s.minter.Mint(token, d.Result, mp, now)
	if err != nil {
		issuer := d.Issuer
		*d = s.rejection(fmt.Errorf("%w: minting the upstream token: %w", verify.ErrKeysUnavailable, err), false)
		d.Issuer = issuer
		return
	}
	d.Minted, d.minted, d.mintHeader = t.JWT, t.Value, s.mintHeader
	if s.mintHeader == "Authorization" {
		// The minted Authorization replaces the caller's; removing
		// Authorization (strip_authorization) would remove it too.
		d.RemoveAuthorization = false
	}
}

// MintedHeader returns, for an allowed decision carrying a minted token,
// the header the upstream receives it in (canonical) and its value
// ("Bearer <jwt>" for Authorization, else the JWT); ok is false when there
// is none.
func (d Decision) MintedHeader() (name, value string, ok bool) {
	if !d.Allowed() || d.minted == nil {
		return "", "", false
	}
	return d.mintHeader, d.minted[0], true
}

// UnmintedHeader returns, for an allowed decision of a call that asked for
// minting ([Call.Mint]) on a server that mints into a header other than
// Authorization, that header (canonical) when nothing was minted into it:
// the policy mints nothing, or the request passed without a token. A front
// end that sets the upstream's headers (gRPC Check) removes it, so that a
// client's own copy never reaches the upstream as if jwksverify had minted
// it.
func (d Decision) UnmintedHeader() (name string, ok bool) {
	return d.unminted, d.unminted != ""
}

// serveJWKS is GET /.well-known/jwks.json: the public part of every key of
// the minter's keys file, cacheable for five minutes.
func (s *Server) serveJWKS(w http.ResponseWriter, _ *http.Request) {
	h := w.Header()
	h["Content-Type"] = []string{"application/json"}
	h["X-Content-Type-Options"] = s.static.nosniff
	h["Cache-Control"] = jwksCacheControl
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(s.minter.JWKS())
}
