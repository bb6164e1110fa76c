package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/jwksverify/jwksverify/dpop"
	"github.com/jwksverify/jwksverify/mtls"
	"github.com/jwksverify/jwksverify/request"
	"github.com/jwksverify/jwksverify/verify"
)

// This file holds the sender constraints of an issuer's tokens (DPoP, RFC
// 9449; certificate-bound tokens, RFC 8705): which issuer asks for which,
// what a request presents beside its token, and the binding decision made
// after the verifier accepted the token, from the token's cnf claim as the
// verifier decoded it (verify.Result.Confirmation).

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

// Binding is what a request presents beside its token for the sender
// constraints: the token's scheme, DPoP proofs, the original request and the
// client certificate. Front ends fill it; [Server.DecideBound] uses what the
// token's issuer asks for. The functions are called only when needed.
type Binding struct {
	// DPoP reports that the token came as Authorization: DPoP.
	DPoP bool
	// Proofs are the values of the DPoP headers.
	Proofs []string
	// Request returns the original request (htm, htu). Nil means unknown.
	Request func() (request.Original, error)
	// ClientCert returns the x5t#S256 of the forwarded client certificate,
	// "" and nil when none was forwarded. Nil means none.
	ClientCert func() (string, error)
	// Explain records each binding check in [Decision.Steps].
	Explain bool
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

// dpopDenial is the 401 of an invalid proof: the DPoP challenge with the
// accepted algorithms (RFC 9449 §7.1), naming the RFC 9728 resource
// metadata when metadata is not "".
func dpopDenial(algs []string, metadata string) denial {
	const class = "invalid_dpop_proof"
	d := newDenial(class, http.StatusUnauthorized, false, metadata)
	d.challenge = `DPoP error="` + class + `", error_description="` + class + `", algs="` + strings.Join(algs, " ") + `"`
	if metadata != "" {
		d.challenge += `, resource_metadata="` + metadata + `"`
	}
	d.www = []string{d.challenge}
	return d
}

// BindingEnabled reports whether some issuer has a sender constraint: only
// then do front ends need to fill a [Binding].
func (s *Server) BindingEnabled() bool { return s.constraints != nil }

// ClientCertThumbprint returns the x5t#S256 of the client certificate that
// h carries where [Options.ClientCert] says: "" and nil when the configured
// header is absent (or none is configured). A header present more than once
// or unreadable is an error.
func (s *Server) ClientCertThumbprint(h http.Header) (string, error) {
	if s.certHeader != "" {
		switch v := h[s.certHeader]; len(v) {
		case 0:
		case 1:
			t, err := mtls.ThumbprintForwarded(v[0])
			if errors.Is(err, mtls.ErrNoCertificate) {
				return "", nil
			}
			return t, err
		default:
			return "", fmt.Errorf("%w: %s present %d times", mtls.ErrMalformed, s.certHeader, len(v))
		}
	}
	if s.xfcc {
		switch v := h["X-Forwarded-Client-Cert"]; len(v) {
		case 0:
		case 1:
			t, err := mtls.ThumbprintXFCC(v[0])
			if errors.Is(err, mtls.ErrNoCertificate) {
				return "", nil
			}
			return t, err
		default:
			return "", fmt.Errorf("%w: x-forwarded-client-cert present %d times", mtls.ErrMalformed, len(v))
		}
	}
	return "", nil
}

// ClientCertHeaders returns the canonical names of the headers
// [Server.ClientCertThumbprint] reads. The slice is the caller's.
func (s *Server) ClientCertHeaders() []string {
	var out []string
	if s.certHeader != "" {
		out = append(out, s.certHeader)
	}
	if s.xfcc {
		out = append(out, "X-Forwarded-Client-Cert")
	}
	return out
}

// requestBinding builds the Binding of a forward-auth request: the DPoP
// scheme and proofs, the original request as the proxy preset says, and the
// client certificate where configured.
func (s *Server) requestBinding(r *http.Request) *Binding {
	return &Binding{
		Proofs:     r.Header["Dpop"],
		Request:    func() (request.Original, error) { return s.proxy.From(r, authzPath) },
		ClientCert: func() (string, error) { return s.ClientCertThumbprint(r.Header) },
	}
}

// dpopToken returns the token of an Authorization: DPoP header, when DPoP
// is on: exactly one Authorization value with the DPoP scheme.
func (s *Server) dpopToken(r *http.Request) (string, bool) {
	if s.dpop == nil {
		return "", false
	}
	v := r.Header["Authorization"]
	if len(v) != 1 {
		return "", false
	}
	tok, ok := cutPrefixFold(v[0], "DPoP ")
	return tok, ok && tok != ""
}

// DecideRequestBound is [Server.DecideRequest] for a front end that knows
// the client certificate or the original request itself: b's Request and
// ClientCert come from the caller; the token's scheme and the DPoP proofs
// are read from r.
func (s *Server) DecideRequestBound(r *http.Request, endpoint string, b *Binding) Decision {
	from := queryOriginal
	if s.ownQuery {
		from = queryOwn
	}
	return s.decideRequestBound(r, endpoint, b, from, "")
}

// DecideWithQueryBound is [Server.DecideRequestBound] for a caller that
// knows the original request itself (gRPC Check), as
// [Server.DecideWithQuery]: a query source reads rawQuery.
func (s *Server) DecideWithQueryBound(r *http.Request, rawQuery, endpoint string, b *Binding) Decision {
	return s.decideRequestBound(r, endpoint, b, queryGiven, rawQuery)
}

func (s *Server) decideRequestBound(r *http.Request, endpoint string, b *Binding, from queryFrom, rawQuery string) Decision {
	tok, st := s.boundToken(r, b, from, rawQuery)
	switch st {
	case tokenFound:
		return s.DecideBound(r.Context(), endpoint, tok, b)
	case tokenAmbiguous, tokenMalformed:
		return s.reject(r.Context(), endpoint, s.now(), "", st.err(), false)
	default:
		return s.Decide(r.Context(), endpoint, "")
	}
}

// boundToken finds r's token for a bound decision: the DPoP scheme's when
// DPoP is on and r has it (b.DPoP is then set; a configured source holding
// another token is then ambiguous, as in tokenFromRequest), else the
// configured token sources'. b.Proofs are r's DPoP headers.
func (s *Server) boundToken(r *http.Request, b *Binding, from queryFrom, rawQuery string) (string, tokenState) {
	b.Proofs = r.Header["Dpop"]
	if s.malformedScheme(r.Header) {
		return "", tokenMalformed
	}
	if tok, ok := s.dpopToken(r); ok {
		if s.otherToken(r, 0, tok, from, rawQuery) {
			return "", tokenAmbiguous
		}
		b.DPoP = true
		return tok, tokenFound
	}
	return s.tokenFromRequest(r, from, rawQuery)
}

// checkBinding applies the sender constraints of res's issuer to what b
// presents. It returns the binding steps (when b.Explain) and nil, or an
// error wrapping invalid_dpop_proof, binding_mismatch or keys_unavailable.
func (s *Server) checkBinding(ctx context.Context, token string, res *verify.Result, b *Binding, now time.Time) ([]verify.Step, error) {
	sc, ok := s.constraints[res.ConfiguredIssuer]
	if !ok {
		return nil, nil
	}
	if b == nil {
		b = &Binding{}
	}
	var cnf verify.Confirmation
	if res.Confirmation != nil {
		cnf = *res.Confirmation
	}
	var steps []verify.Step
	step := func(check string, err error, detail string) error {
		if b.Explain {
			if err != nil {
				detail = err.Error()
			}
			steps = append(steps, verify.Step{Check: check, OK: err == nil, Detail: detail})
		}
		return err
	}
	if cnf.JKT == "" && cnf.X5tS256 == "" && len(cnf.Other) > 0 {
		return steps, step("binding", fmt.Errorf("%w: cnf binds the token by %q, which is not checked here", verify.ErrBindingMismatch, cnf.Other), "")
	}
	if sc.DPoP != ConstraintOff {
		var err error
		switch {
		case b.DPoP:
			var dsteps []verify.Step
			dsteps, err = s.checkDPoP(ctx, token, res, cnf.JKT, b, now)
			steps = append(steps, dsteps...)
			s.countBinding(res.ConfiguredIssuer, "dpop", err)
		case cnf.JKT != "":
			err = step("dpop", fmt.Errorf("%w: a DPoP-bound token (cnf.jkt) presented without Authorization: DPoP and its proof", verify.ErrBindingMismatch), "")
			s.countBinding(res.ConfiguredIssuer, "dpop", err)
		case sc.DPoP == ConstraintRequired:
			err = step("dpop", fmt.Errorf("%w: the issuer's tokens must be DPoP-bound (cnf.jkt)", verify.ErrBindingMismatch), "")
			s.countBinding(res.ConfiguredIssuer, "dpop", err)
		default:
			_ = step("dpop", nil, "not bound (no cnf.jkt), DPoP optional: accepted as a bearer token")
		}
		if err != nil {
			return steps, err
		}
	}
	if sc.MTLS != ConstraintOff {
		var err error
		switch {
		case cnf.X5tS256 != "":
			err = step("mtls-binding", s.checkCert(cnf.X5tS256, b), "cnf.x5t#S256 is the client certificate's SHA-256")
			s.countBinding(res.ConfiguredIssuer, "mtls", err)
		case sc.MTLS == ConstraintRequired:
			err = step("mtls-binding", fmt.Errorf("%w: the issuer's tokens must be certificate-bound (cnf.x5t#S256)", verify.ErrBindingMismatch), "")
			s.countBinding(res.ConfiguredIssuer, "mtls", err)
		default:
			_ = step("mtls-binding", nil, "not bound (no cnf.x5t#S256), mTLS optional: accepted")
		}
		if err != nil {
			return steps, err
		}
	}
	return steps, nil
}

// checkDPoP runs the proof's checks for a token bound to jkt.
func (s *Server) checkDPoP(ctx context.Context, token string, res *verify.Result, jkt string, b *Binding, now time.Time) ([]verify.Step, error) {
	in := dpop.Input{Proofs: b.Proofs, AccessToken: token, JKT: jkt, Issuer: res.ConfiguredIssuer, RequestErr: request.ErrMissing}
	if is := s.byName[res.ConfiguredIssuer]; is != nil {
		in.Leeway = is.leeway
	}
	if b.Request != nil {
		in.Request, in.RequestErr = b.Request()
	}
	if b.Explain {
		steps, _, err := s.dpop.Explain(ctx, in, now)
		return steps, err
	}
	_, err := s.dpop.Check(ctx, in, now)
	return nil, err
}

// checkCert compares the forwarded client certificate with x5t.
func (s *Server) checkCert(x5t string, b *Binding) error {
	if b.ClientCert == nil {
		return fmt.Errorf("%w: a certificate-bound token (cnf.x5t#S256) without a client certificate", verify.ErrBindingMismatch)
	}
	got, err := b.ClientCert()
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

// countBinding records one binding check in the metrics.
func (s *Server) countBinding(issuer, kind string, err error) {
	if s.bindingMetrics == nil {
		return
	}
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
	s.bindingMetrics.BindingChecked(issuer, kind, outcome)
}

// quote renders an untrusted value for a message.
func quote(s string) string { return fmt.Sprintf("%q", truncate(s, 96)) }
