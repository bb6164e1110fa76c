package server

import (
	"context"
	"fmt"
	"time"

	"github.com/jwksverify/jwksverify/revoke"
	"github.com/jwksverify/jwksverify/verify"
)

// This file is the third stage: revocation. A token the verifier accepted
// (a JWT, or an opaque token by its introspection answer; fresh, from the
// verified-token cache, or from a cached or stale introspection answer) is
// looked up in the revocation store's in-memory index: revoked, or, when
// the replica's copy is too old to tell, keys_unavailable (fail closed).

// Revocations is the revocation store the server checks every verified
// token against and that the admin API (/v1/revocations) changes: package
// revoke's Memory or Redis. Implementations must be safe for concurrent
// use.
type Revocations interface {
	revoke.Adder
	// Delete lifts the entry id: revoke.ErrNotFound when there is none,
	// an error wrapping revoke.ErrUnavailable when the store cannot.
	Delete(ctx context.Context, id string) error
	// List returns the live entries of issuer ("" every issuer).
	List(ctx context.Context, issuer string) ([]revoke.Entry, error)
	// Index is what the request path checks: it never waits on the store.
	// It must not be nil: New and Middleware refuse a store without one.
	Index() *revoke.Index
}

// setRevocations sets the revocation stage of r (nil: none). A store
// without an index is refused: the stage would check nothing while the
// store acknowledges entries.
func (s *Server) setRevocations(r Revocations) error {
	if s.revocations = r; r == nil {
		return nil
	}
	if s.revIndex = r.Index(); s.revIndex == nil {
		return invalidOption("Revocations", "Index() is nil: no revocation could be checked")
	}
	s.revRetention = retentionOf(r)
	return nil
}

// retentionOf returns the retention of a store that reports one (package
// revoke's stores do), else 0.
func retentionOf(r Revocations) time.Duration {
	if rr, ok := r.(interface{ Retention() time.Duration }); ok {
		return rr.Retention()
	}
	return 0
}

// RevocationClaims are the claims the revocation stage reads besides jti,
// sub and iat: a verifier of a server with [Options.Revocations] should
// index them (verify.Options.IndexClaims), so that a cache hit scans
// nothing.
func RevocationClaims() []string { return []string{"sid", "client_id", "azp"} }

// errRevoked and errRevocationsStale are the details of the stage's
// answers.
var (
	errRevoked             = fmt.Errorf("%w: the token, its session, subject or client was revoked", verify.ErrRevoked)
	errOutlivesRevocations = fmt.Errorf("%w: the token lives longer than the revocation store keeps an entry (its retention)", verify.ErrLifetimeExceeded)
	errRevocationsStale    = fmt.Errorf("%w: this replica's copy of the revocations is older than max_staleness", verify.ErrKeysUnavailable)
)

// revocation checks res, a verified token of its configured issuer, at
// now. It does not allocate unless the token is refused (or a claim it
// reads holds JSON escapes).
func (s *Server) revocation(res *verify.Result, now time.Time) error {
	if s.revIndex == nil {
		return nil
	}
	if r := s.revRetention; r > 0 {
		// A token living longer than the store keeps an entry would pass
		// again once the entry naming it is gone (config bounds each
		// issuer's max_lifetime by the retention; a verifier built by hand
		// may have none).
		// A JWT without exp never ends: no entry could outlive it.
		// A token without iat (a JWT or an introspection answer) has no
		// lifetime to bound: exp − now falls under the retention long
		// after an entry naming it was stored and forgotten, while the
		// authorization server, which never heard of the entry, still
		// answers active.
		// An introspection answer without exp (RFC 7662 makes it optional)
		// is held as if its exp were iat + the retention: its
		// authorization server, asked again every max_ttl, never heard of
		// an entry stored here, and answers active after it is gone.
		if res.IssuedAt.IsZero() || (!res.Opaque && res.ExpiresAt.IsZero()) || (!res.ExpiresAt.IsZero() && res.ExpiresAt.Sub(res.IssuedAt) > r) ||
			(res.ExpiresAt.IsZero() && now.Sub(res.IssuedAt) > r) {
			return &verify.Error{Class: verify.Class(verify.ErrLifetimeExceeded), Issuer: res.ConfiguredIssuer, Kid: res.Kid, Err: errOutlivesRevocations}
		}
	}
	names := [3]string{"sid", "client_id", "azp"}
	var vals [3]string
	t := revoke.Token{JTI: res.ID, Sub: res.Subject, IssuedAt: res.IssuedAt}
	if res.ClaimValues(names[:], vals[:]) > 0 {
		into := [3]*string{&t.SID, &t.ClientID, &t.AZP}
		for i, v := range vals {
			if v == "" {
				continue
			}
			str, ok := verify.JSONString(v)
			if !ok {
				// An entry names the claim as a string: read as absent, a
				// client_id of 123 escaped the entry revoking client "123".
				return &verify.Error{Class: verify.Class(verify.ErrMalformed), Issuer: res.ConfiguredIssuer, Kid: res.Kid,
					Err: fmt.Errorf("%w: %s is not a string (a revocation could not name it)", verify.ErrMalformed, names[i])}
			}
			*into[i] = str
		}
	}
	switch err := s.revIndex.Check(res.ConfiguredIssuer, &t, now); err {
	case nil:
		return nil
	case revoke.ErrRevoked:
		return &verify.Error{Class: verify.Class(verify.ErrRevoked), Issuer: res.ConfiguredIssuer, Kid: res.Kid, Err: errRevoked}
	default:
		return &verify.Error{Class: verify.Class(verify.ErrKeysUnavailable), Issuer: res.ConfiguredIssuer, Kid: res.Kid, Err: errRevocationsStale}
	}
}

// revocationsStale reports whether the revocation copy is too old at now.
func (s *Server) revocationsStale(now time.Time) bool {
	return s.revIndex != nil && s.revIndex.Stale(now)
}
