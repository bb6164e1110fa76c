package verify

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	oteltrace "go.opentelemetry.io/otel/trace"
)

// Span attribute keys of the "verify" span. They name what was decided,
// never the token, its claims or key material.
const (
	// AttrIssuer is the configured issuer that decided the token (absent
	// when none did: unknown_issuer, malformed).
	AttrIssuer = attribute.Key("jwksverify.issuer")
	// AttrAlg is the token's alg, on an accepted token.
	AttrAlg = attribute.Key("jwksverify.alg")
	// AttrClass is the verdict's class, "valid" when accepted.
	AttrClass = attribute.Key("jwksverify.class")
	// AttrCacheHit reports whether the verified-token cache answered.
	AttrCacheHit = attribute.Key("jwksverify.cache_hit")
)

// classValid is AttrClass of an accepted token (server.ClassValid's word).
const classValid = "valid"

// verifyTraced is VerifyAt inside a "verify" span: a child of ctx's span,
// and the parent of what the verification waits for (an unknown-kid
// refresh). Under a span that is not sampled it records none.
func (v *Verifier) verifyTraced(ctx context.Context, token string, now time.Time, among []string, in *IDTokenChecks) (*Result, error) {
	if sc := oteltrace.SpanContextFromContext(ctx); sc.IsValid() && !sc.IsSampled() {
		// The request's trace is not sampled: a child would not be either
		// (parent-based sampling), so do not pay for one.
		res, _, err := v.verifyCached(ctx, token, now, among, in)
		return res, err
	}
	ctx, span := v.tracer.Start(ctx, "verify", oteltrace.WithSpanKind(oteltrace.SpanKindInternal))
	defer span.End()
	res, hit, err := v.verifyCached(ctx, token, now, among, in)
	if !span.IsRecording() {
		return res, err
	}
	if err != nil {
		attrs := []attribute.KeyValue{AttrClass.String(Class(err)), AttrCacheHit.Bool(false)}
		var e *Error
		if errors.As(err, &e) && e.Issuer != "" {
			attrs = append(attrs, AttrIssuer.String(e.Issuer))
		}
		span.SetAttributes(attrs...)
		span.SetStatus(codes.Error, Class(err)) // the class word only: the error's text may quote claims
		return nil, err
	}
	span.SetAttributes(AttrIssuer.String(res.ConfiguredIssuer), AttrAlg.String(res.Alg),
		AttrClass.String(classValid), AttrCacheHit.Bool(hit))
	return res, nil
}
