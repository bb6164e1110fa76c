package server

import (
	"context"
	"errors"
	"fmt"
	"github.com/jwksverify/jwksverify/request"
	"net/http"
	"slices"
	"time"

	"github.com/jwksverify/jwksverify/dpop"
	"github.com/jwksverify/jwksverify/mtls"
	"github.com/jwksverify/jwksverify/verify"
)

// This file is the third stage: the sender constraints of an issuer's
// tokens (DPoP, RFC 9449; certificate-bound tokens, RFC 8705), checked
// after the verifier accepted the token, from its cnf claim as the verifier
// decoded it (verify.Result.Confirmation), against what the call presents
// beside the token. It modifies nothing it is handed.

// ConstraintMode says how an issuer's tokens are held to one kind of sender
// constraint.
type ConstraintMode string

// The modes.
const (
	// ConstraintOff: not checked; a bound token is accepted as a bearer
	// token (wave 1 behaviour, the default).
	ConstraintOff ConstraintMode = ""
	// ConstraintOptional: a bound token must come with its proof (a DPoP
	// proof of its key, or its client certificate); an unbound token is
	// accepted as a bearer token.
	ConstraintOptional ConstraintMode = "optional"
	// ConstraintRequired: every token must be bound and come with its proof.
	ConstraintRequired ConstraintMode = "required"
)

// ParseConstraintMode returns the mode named s: off (or empty), optional,
// required.
func ParseConstraintMode(s string) (ConstraintMode, error) {
	switch s {
	case "", "off":
		return ConstraintOff, nil
	case "optional":
		return ConstraintOptional, nil
	case "required":
		return ConstraintRequired, nil
	}
	return ConstraintOff, fmt.Errorf("%q is not one of off, optional, required", s)
}

// SenderConstraint is one issuer's sender constraints.
type SenderConstraint struct {
	// DPoP holds tokens bound by cnf.jkt to a DPoP proof (Authorization:
	// DPoP and one DPoP header). Not off needs [Options.DPoP].
	DPoP ConstraintMode
	// MTLS holds tokens bound by cnf["x5t#S256"] to the client certificate
	// the proxy forwards ([Options.ClientCert], or gRPC's
	// attributes.source.certificate).
	MTLS ConstraintMode
}

// ClientCertSource says where forward-auth finds the client certificate
// that the proxy terminated TLS with. Each is read only when set: a client
// can send any header, so name only one the proxy overwrites.
type ClientCertSource struct {
	// Header holds the certificate as PEM, URL-escaped PEM (nginx
	// $ssl_client_escaped_cert) or base64 DER (Traefik passTLSClientCert).
	// Empty means none.
	Header string
	// XFCC reads Envoy's x-forwarded-client-cert Hash (configure Envoy with
	// forward_client_cert_details: SANITIZE_SET). False means it is
	// ignored. [CheckOptions] refuses it with the nginx, Caddy and Traefik
	// presets, which pass the client's header.
	XFCC bool
}

// BindingMetrics is implemented by a [Metrics] that also counts sender
// constraint checks (server/metrics does). Implementations must be safe for
// concurrent use and must not block.
type BindingMetrics interface {
	// BindingChecked records one check of kind "dpop" or "mtls" for a
	// token of issuer (a configured issuer name), with its outcome: "ok", a
	// class word (invalid_dpop_proof, binding_mismatch, keys_unavailable),
	// or "replayed" (an invalid_dpop_proof whose jti was used).
	BindingChecked(issuer, kind, outcome string)
}

// BindingKinds and BindingOutcomes are the label values of
// [BindingMetrics], in a fixed order. The slices are the caller's.
func BindingKinds() []string { return []string{"dpop", "mtls"} }

// BindingOutcomes: see [BindingKinds].
func BindingOutcomes() []string {
	return []string{"ok", "replayed", "invalid_dpop_proof", "binding_mismatch", "keys_unavailable"}
}

// setBinding validates and keeps the sender constraint options.
func (s *Server) setBinding(opts Options) error {
	for name, sc := range opts.SenderConstraints {
		if s.byName[name] == nil {
			return fmt.Errorf("%w: sender constraint for issuer %q, which is not configured", ErrInvalidOptions, name)
		}
		for _, m := range []ConstraintMode{sc.DPoP, sc.MTLS} {
			if _, err := ParseConstraintMode(string(m)); err != nil {
				return fmt.Errorf("%w: issuer %q: sender constraint %w", ErrInvalidOptions, name, err)
			}
		}
		if sc.DPoP != ConstraintOff && opts.DPoP == nil {
			return fmt.Errorf("%w: issuer %q asks for DPoP, and Options.DPoP is nil", ErrInvalidOptions, name)
		}
		if sc == (SenderConstraint{}) {
			continue
		}
		if s.constraints == nil {
			s.constraints = map[string]SenderConstraint{}
		}
		s.constraints[name] = sc
	}
	if h := opts.ClientCert.Header; h != "" { // checked by CheckOptions
		s.certHeader = http.CanonicalHeaderKey(h)
	}
	s.xfcc = opts.ClientCert.XFCC
	s.dpop = opts.DPoP
	if s.dpop != nil {
		var metadata string
		if s.resource != nil {
			metadata = s.resource.url
		}
		s.rejected["invalid_dpop_proof"] = dpopDenial(s.dpop.Algorithms(), metadata)
	}
	if bm, ok := opts.Metrics.(BindingMetrics); ok {
		s.bindingMetrics = bm
	}
	return nil
}

// certFromHeaders returns the x5t#S256 of the client certificate that h
// carries where [Options.ClientCert] says: "" and nil when the configured
// header is absent (or none is configured). A header present more than once
// or unreadable is an error.
func (s *Server) certFromHeaders(h Headers) (string, error) {
	if s.certHeader != "" {
		switch v := values(h, s.certHeader); len(v) {
		case 0:
		case 1:
			return forwardedCert(mtls.ThumbprintForwarded(v[0]))
		default:
			return "", fmt.Errorf("%w: %s present %d times", mtls.ErrMalformed, s.certHeader, len(v))
		}
	}
	if s.xfcc {
		switch v := values(h, "X-Forwarded-Client-Cert"); len(v) {
		case 0:
		case 1:
			return forwardedCert(mtls.ThumbprintXFCC(v[0]))
		default:
			return "", fmt.Errorf("%w: x-forwarded-client-cert present %d times", mtls.ErrMalformed, len(v))
		}
	}
	return "", nil
}

// forwardedCert reads "no certificate forwarded" as none.
func forwardedCert(t string, err error) (string, error) {
	if errors.Is(err, mtls.ErrNoCertificate) {
		return "", nil
	}
	return t, err
}

// clientCert returns the x5t#S256 of the client certificate a call
// presents: cert, the one the front end has itself, else the configured
// header's in h (nil: none).
func (s *Server) clientCert(cert string, h Headers) (string, error) {
	switch {
	case cert != "":
		return forwardedCert(mtls.ThumbprintForwarded(cert))
	case h != nil:
		return s.certFromHeaders(h)
	}
	return "", nil
}

// bindCounts are the binding checks a decision made, for
// [BindingMetrics]: at most one of each kind. observe records them.
type bindCounts struct {
	issuer  string
	n       int
	kind    [2]string
	outcome [2]string
}

// add records one check of kind with its error.
func (bc *bindCounts) add(kind string, err error) {
	outcome := "ok"
	if err != nil {
		outcome = verify.Class(err)
		if errors.Is(err, dpop.ErrReplayed) {
			outcome = "replayed"
		}
		if !slices.Contains(BindingOutcomes(), outcome) {
			outcome = "keys_unavailable"
		}
	}
	bc.kind[bc.n], bc.outcome[bc.n] = kind, outcome
	bc.n++
}

// The refusals of a token its issuer requires bound that carries no cnf
// member of that kind: the same on every front end, /introspect included.
var (
	errMustDPoP = fmt.Errorf("%w: the issuer's tokens must be DPoP-bound (cnf.jkt)", verify.ErrBindingMismatch)
	errMustMTLS = fmt.Errorf("%w: the issuer's tokens must be certificate-bound (cnf.x5t#S256)", verify.ErrBindingMismatch)
)

// bind applies the sender constraints of res's issuer to what c presents
// beside the token (cred: its scheme and DPoP proofs; the original request;
// the client certificate), recording the checks made in bc. It returns the
// binding steps (when c.Explain) and nil, or a *verify.Error of class
// invalid_dpop_proof, binding_mismatch or keys_unavailable.
func (s *Server) bind(ctx context.Context, c *Call, cred *credential, res *verify.Result, now time.Time, bc *bindCounts) ([]verify.Step, error) {
	if len(s.constraints) == 0 {
		return nil, nil
	}
	sc, ok := s.constraints[res.ConfiguredIssuer]
	if !ok {
		return nil, nil
	}
	bc.issuer = res.ConfiguredIssuer
	if c.SkipBinding {
		// The caller (/introspect's resource server) checks the proof
		// against cnf; a token the issuer requires bound but that has no
		// cnf of that kind leaves it nothing to check: refused here.
		var cnf verify.Confirmation
		if res.Confirmation != nil {
			cnf = *res.Confirmation
		}
		var err error
		switch {
		case sc.DPoP == ConstraintRequired && cnf.JKT == "":
			err = errMustDPoP
			bc.add("dpop", err)
		case sc.MTLS == ConstraintRequired && cnf.X5tS256 == "":
			err = errMustMTLS
			bc.add("mtls", err)
		}
		if err != nil {
			err = &verify.Error{Class: verify.Class(err), Issuer: res.ConfiguredIssuer, Kid: res.Kid, Err: err}
		}
		return nil, err
	}
	b := binder{s: s, cred: *cred, res: res, explain: c.Explain, cert: c.ClientCert, headers: c.Headers}
	if c.ConnectionCert {
		b.headers = nil // the connection's certificate or none: no forwarded header
	}
	b.o, b.oerr = c.original()
	if res.Confirmation != nil {
		b.cnf = *res.Confirmation
	}
	err := b.check(ctx, sc, now, bc)
	if err != nil {
		err = &verify.Error{Class: verify.Class(err), Issuer: res.ConfiguredIssuer, Kid: res.Kid, Err: err}
	}
	return b.steps, err
}

// binder is one bind stage's work: what it reads of the call (copied, so
// that the call itself stays the caller's), and the steps it explains.
type binder struct {
	s       *Server
	cred    credential
	res     *verify.Result
	cnf     verify.Confirmation
	o       request.Original // the original request, or oerr
	oerr    error
	explain bool
	cert    string  // Call.ClientCert
	headers Headers // Call.Headers
	steps   []verify.Step
}

// step records one check when the call asks for an explanation, and
// returns its error.
func (b *binder) step(check string, err error, detail string) error {
	if b.explain {
		if err != nil {
			detail = err.Error()
		}
		b.steps = append(b.steps, verify.Step{Check: check, OK: err == nil, Detail: detail})
	}
	return err
}

// check runs the DPoP and then the certificate checks sc asks for.
func (b *binder) check(ctx context.Context, sc SenderConstraint, now time.Time, bc *bindCounts) error {
	if b.cnf.JKT == "" && b.cnf.X5tS256 == "" && len(b.cnf.Other) > 0 {
		return b.step("binding", fmt.Errorf("%w: cnf binds the token by %q, which is not checked here", verify.ErrBindingMismatch, b.cnf.Other), "")
	}
	if sc.DPoP != ConstraintOff {
		var err error
		switch {
		case b.cred.dpop:
			err = b.checkDPoP(ctx, now)
			bc.add("dpop", err)
		case b.cnf.JKT != "":
			err = b.step("dpop", fmt.Errorf("%w: a DPoP-bound token (cnf.jkt) presented without Authorization: DPoP and its proof", verify.ErrBindingMismatch), "")
			bc.add("dpop", err)
		case sc.DPoP == ConstraintRequired:
			err = b.step("dpop", errMustDPoP, "")
			bc.add("dpop", err)
		default:
			_ = b.step("dpop", nil, "not bound (no cnf.jkt), DPoP optional: accepted as a bearer token")
		}
		if err != nil {
			return err
		}
	}
	if sc.MTLS != ConstraintOff {
		var err error
		switch {
		case b.cnf.X5tS256 != "":
			err = b.step("mtls-binding", b.checkCert(), "cnf.x5t#S256 is the client certificate's SHA-256")
			bc.add("mtls", err)
		case sc.MTLS == ConstraintRequired:
			err = b.step("mtls-binding", errMustMTLS, "")
			bc.add("mtls", err)
		default:
			_ = b.step("mtls-binding", nil, "not bound (no cnf.x5t#S256), mTLS optional: accepted")
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// checkDPoP runs the proof's checks for a token bound to cnf.jkt: the
// proof must name the call's original request.
func (b *binder) checkDPoP(ctx context.Context, now time.Time) error {
	in := dpop.Input{Proofs: b.cred.proofs, AccessToken: b.cred.token, JKT: b.cnf.JKT, Issuer: b.res.ConfiguredIssuer}
	if is := b.s.byName[b.res.ConfiguredIssuer]; is != nil {
		in.Leeway = is.leeway
	}
	in.Request, in.RequestErr = b.o, b.oerr
	if b.explain {
		steps, _, err := b.s.dpop.Explain(ctx, in, now)
		b.steps = append(b.steps, steps...)
		return err
	}
	_, err := b.s.dpop.Check(ctx, in, now)
	return err
}

// checkCert compares the client certificate with cnf.x5t#S256.
func (b *binder) checkCert() error {
	x5t := b.cnf.X5tS256
	got, err := b.s.clientCert(b.cert, b.headers)
	switch {
	case err != nil:
		return fmt.Errorf("%w: the forwarded client certificate is unreadable: %w", verify.ErrBindingMismatch, err)
	case got == "":
		return fmt.Errorf("%w: a certificate-bound token (cnf.x5t#S256) without a client certificate", verify.ErrBindingMismatch)
	case got != x5t:
		return fmt.Errorf("%w: cnf.x5t#S256 %s is not the client certificate's %s", verify.ErrBindingMismatch, quote(x5t), got)
	}
	return nil
}

// quote renders an untrusted value for a message.
func quote(s string) string { return fmt.Sprintf("%q", truncate(s, 96)) }
