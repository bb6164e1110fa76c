package server

import (
	"cmp"
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/jwksverify/jwksverify/verify"
)

// This file is the second stage: the verifier's answer about the token
// (signature, claims, or an introspection call for an opaque token), and
// the decision it makes: allowed, rejected (401) or could not decide (503).
// The status is chosen by the error's family alone ([StatusOf]).

// verify runs the verifier on token at now: as an access token, or, when
// id is not nil, as an ID token with those inputs. An opaque access token
// is introspected only at the issuers of the call's policy, when it names
// some ([verify.Verifier.VerifyAmong]).
func (s *Server) verify(ctx context.Context, token string, now time.Time, pol *policyStage, id *verify.IDTokenChecks) (*verify.Result, error) {
	if id != nil {
		return s.v.VerifyIDTokenAt(ctx, token, now, *id)
	}
	var among []string
	if pol.p != nil {
		among = pol.p.Issuers()
	}
	return s.v.VerifyAmong(ctx, token, now, among)
}

// verdict sets d, a zero decision, to the decision of a verified token (err
// nil) whose binding held, or to the rejection of err; steps are the
// binding checks asked for.
func (s *Server) verdict(d *Decision, res *verify.Result, err error, steps []verify.Step) {
	if err != nil {
		*d = s.rejection(err, false)
		d.Steps = steps
		return
	}
	is := s.byName[res.ConfiguredIssuer]
	d.Status, d.Issuer, d.Result, d.RemoveAuthorization, d.Steps = http.StatusOK, is.label(), res, s.stripAuthz, steps
	if is != nil {
		d.headers = is.answer
	}
}

// rejection is the decision of an error of the verifier (or of the other
// stages: no token, an ambiguous one, a body too large, a binding that
// failed). The status is chosen by the error's family alone; an error of no
// family is a fault, not a verdict, and fails closed as keys_unavailable.
func (s *Server) rejection(err error, noToken bool) Decision {
	d := Decision{Status: StatusOf(err), Issuer: UnknownIssuer, NoToken: noToken, Err: err}
	if ve := verifyError(err); ve != nil {
		d.Class = ve.Class
		if is := s.byName[ve.Issuer]; is != nil {
			d.Issuer = is.name
		}
	} else {
		d.Class = verify.Class(err)
	}
	if d.Status == http.StatusServiceUnavailable {
		if !errors.Is(err, verify.ErrUnavailable) {
			d.Class = ""
		}
		d.Class = cmp.Or(d.Class, verify.Class(verify.ErrKeysUnavailable))
	}
	return d
}

// StatusOf is the HTTP status of err, the verifier's (or a policy's)
// answer about one token, chosen by its family alone: 200 for nil, 401 for
// a rejection (verify.ErrRejected), 403 for a valid token refused
// (verify.ErrDenied) and 503 when it could not decide
// (verify.ErrUnavailable). The verifier promises a class in one of those
// families; an error without one is a fault, not a verdict, and fails
// closed as 503. Every front end's status, and the CLI's exit status, is
// derived from it.
func StatusOf(err error) int {
	switch {
	case err == nil:
		return http.StatusOK
	case errors.Is(err, verify.ErrUnavailable), verify.Class(err) == "":
		return http.StatusServiceUnavailable
	case errors.Is(err, verify.ErrRejected):
		return http.StatusUnauthorized
	case errors.Is(err, verify.ErrDenied):
		return http.StatusForbidden
	}
	return http.StatusServiceUnavailable
}

// verifyError returns the *verify.Error in err's chain, or nil. The direct
// assertion first: the verifier returns one unwrapped, and it costs no
// allocation.
func verifyError(err error) *verify.Error {
	if ve, ok := err.(*verify.Error); ok {
		return ve
	}
	var ve *verify.Error
	if errors.As(err, &ve) {
		return ve
	}
	return nil
}
