package server

import (
	"fmt"
	"net/textproto"
	"slices"
	"strings"
	"time"

	"github.com/jwksverify/jwksverify/cache"
	"github.com/jwksverify/jwksverify/verify"
)

// This file holds what the server keeps of each configured issuer: its
// keys, and the claim headers an allowed answer for its tokens sets.

// issuerInfo is what the server keeps of one configured issuer, found by
// its configured name: the name the verifier answers with
// (Result.ConfiguredIssuer, verify.Error.Issuer).
type issuerInfo struct {
	name    string // the configured issuer string: the metrics label
	keys    *cache.Keys
	leeway  time.Duration // the verifier's, defaults applied; 0 none
	headers []claimHeader // sorted by claim
	// answer is headers and then every other identity header with no
	// claim: what an allowed answer for the issuer's token sets.
	answer []claimHeader
	// introspector answers the issuer's opaque tokens, or nil; trustDomain
	// is the SPIFFE trust domain of a SPIFFE issuer, or "". /v1/issuers
	// shows both.
	introspector verify.Introspector
	trustDomain  string
}

// claimHeader maps one extracted claim to a forward-auth response header.
type claimHeader struct {
	claim  string // "": none, the header is always sent empty
	header string // canonical
}

// label returns the issuer's label: its configured string, or
// [UnknownIssuer] for nil.
func (is *issuerInfo) label() string {
	if is == nil {
		return UnknownIssuer
	}
	return is.name
}

// newIssuers returns the configured issuers in order, and by name.
func newIssuers(issuers []verify.Issuer) ([]*issuerInfo, map[string]*issuerInfo, error) {
	list := make([]*issuerInfo, 0, len(issuers))
	byName := make(map[string]*issuerInfo, len(issuers))
	for _, vi := range issuers {
		if vi.Keys == nil {
			return nil, nil, fmt.Errorf("%w: issuer %q has no Keys", ErrInvalidOptions, vi.Issuer)
		}
		is := &issuerInfo{name: vi.Issuer, keys: vi.Keys, introspector: vi.Introspector, trustDomain: vi.TrustDomain,
			leeway: max(vi.Leeway, 0)}
		list = append(list, is)
		byName[vi.Issuer] = is
	}
	return list, byName, nil
}

// setClaimHeaders validates the claims_to_headers configuration against the
// configured issuers and the claims the verifier extracts.
func (s *Server) setClaimHeaders(cfg map[string]map[string]string, issuers []verify.Issuer) error {
	for name, m := range cfg {
		is := s.byName[name]
		if is == nil {
			return fmt.Errorf("%w: claims_to_headers names issuer %q, which is not configured", ErrInvalidOptions, name)
		}
		var extracted []string
		for _, vi := range issuers {
			if vi.Issuer == name {
				extracted = vi.ExtractClaims
			}
		}
		seen := make(map[string]string, len(m))
		for claim, header := range m {
			if err := CheckClaimHeader(header); err != nil {
				return fmt.Errorf("%w: issuer %q: claim %q: %w", ErrInvalidOptions, name, claim, err)
			}
			if !slices.Contains(extracted, claim) {
				return fmt.Errorf("%w: issuer %q: claim %q is not extracted by the verifier (ExtractClaims)", ErrInvalidOptions, name, claim)
			}
			h := textproto.CanonicalMIMEHeaderKey(header)
			if other, dup := seen[cgiName(h)]; dup {
				return fmt.Errorf("%w: issuer %q: claims %q and %q map to the same header %q (or CGI twins: a CGI upstream reads both as one)", ErrInvalidOptions, name, other, claim, h)
			}
			seen[cgiName(h)] = claim
			is.headers = append(is.headers, claimHeader{claim: claim, header: h})
		}
		slices.SortFunc(is.headers, func(a, b claimHeader) int { return strings.Compare(a.claim, b.claim) })
	}
	return nil
}
