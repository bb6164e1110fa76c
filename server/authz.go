package server

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/textproto"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/net/http/httpguts"

	"github.com/jwksverify/jwksverify/cache"
	"github.com/jwksverify/jwksverify/verify"
)

// This file holds the decision shared by every front end (forward-auth, the
// JSON API, introspection, the middleware and the gRPC ext_authz service):
// where a request's token is, the allow/deny/unavailable decision with its
// metrics and log line, and the claim headers of an allowed request.

// unknownIssuer is the issuer label of a token whose iss is no configured
// issuer (or that has none): metrics and logs never carry a raw iss.
const unknownIssuer = "unknown"

// maxPeekBytes bounds the token that peek decodes for labels.
const maxPeekBytes = 64 << 10

// maxLogField bounds an attacker-chosen string (a kid) in a log line.
const maxLogField = 128

// maxMessage bounds the human message of a rejection in responses and logs.
const maxMessage = 512

// Endpoint labels of the latency histogram and of the log lines.
const (
	endpointVerify     = "verify"
	endpointBatch      = "batch"
	endpointIntrospect = "introspect"
	endpointAuthz      = "authz"
	endpointGRPC       = "grpc"
	endpointMiddleware = "middleware"
)

// classValid is the outcome label of an accepted token.
const classValid = "valid"

// errNoToken and errAmbiguousToken are the log details of forward-auth
// requests that carry no token, or more than one.
var (
	errNoToken        = fmt.Errorf("%w: the request carries no token", verify.ErrMalformed)
	errAmbiguousToken = fmt.Errorf("%w: the request carries more than one token value", verify.ErrMalformed)
)

// decision is the outcome of one token: allow (200), deny (401) or could
// not decide (503).
type decision struct {
	// status is http.StatusOK, http.StatusUnauthorized or
	// http.StatusServiceUnavailable.
	status int
	// class is the SPEC class word of a denial or of a 503
	// ("keys_unavailable"); "" when allowed.
	class string
	// noToken reports that the request carried no token at all (RFC 6750
	// §3.1: the challenge then carries no error code).
	noToken bool
	// res is the verified token when allowed.
	res *verify.Result
	// issuer is the configured issuer of an allowed token; nil otherwise.
	issuer *issuerInfo
	// err is the verifier's error when not allowed (for messages); its text
	// never holds the token (see safeMessage).
	err error
}

// allowed reports whether the token was accepted.
func (d decision) allowed() bool { return d.status == http.StatusOK }

// decide verifies token for endpoint (one of the endpoint* labels) and
// returns the decision. It records the outcome and latency metrics and logs
// one line per rejected token (never the token). An empty token is a request
// without credentials: denied as "malformed" with noToken set. It blocks
// only as long as the verifier does (a bounded unknown-kid refresh).
func (s *Server) decide(ctx context.Context, endpoint, token string) decision {
	start := time.Now()
	if token == "" {
		return s.reject(ctx, endpoint, start, "", errNoToken, true)
	}
	res, err := s.v.Verify(ctx, token)
	if err != nil {
		return s.reject(ctx, endpoint, start, token, err, false)
	}
	is := s.issuers.byName(res.ConfiguredIssuer)
	if s.metrics != nil {
		s.metrics.observe(endpoint, is.label(), classValid, start)
	}
	return decision{status: http.StatusOK, res: res, issuer: is}
}

// decideRequest decides the token of r, taken from the token sources.
func (s *Server) decideRequest(r *http.Request, endpoint string) decision {
	switch tok, st := s.tokenFromRequest(r); st {
	case tokenFound:
		return s.decide(r.Context(), endpoint, tok)
	case tokenAmbiguous:
		return s.decideAmbiguous(r.Context(), endpoint)
	default:
		return s.decide(r.Context(), endpoint, "")
	}
}

// decideAmbiguous denies a request that carries more than one token value in
// its token source: a proxy and its upstream could each read a different one.
func (s *Server) decideAmbiguous(ctx context.Context, endpoint string) decision {
	return s.reject(ctx, endpoint, time.Now(), "", errAmbiguousToken, false)
}

// reject builds the decision for a verifier error, records it and logs it.
func (s *Server) reject(ctx context.Context, endpoint string, start time.Time, token string, err error, noToken bool) decision {
	class := verify.Class(err)
	d := decision{status: http.StatusUnauthorized, class: class, noToken: noToken, err: err}
	level := slog.LevelInfo
	switch {
	case errors.Is(err, verify.ErrUnavailable):
		d.status, level = http.StatusServiceUnavailable, slog.LevelWarn
		if class == "" {
			d.class = "keys_unavailable"
		}
	case errors.Is(err, verify.ErrRejected) && class != "":
	default:
		// The verifier promises a class in one of the two families. Anything
		// else is a fault, not a verdict: fail closed, as "could not decide".
		d.status, d.class, level = http.StatusServiceUnavailable, "keys_unavailable", slog.LevelError
	}
	var iss, kid string
	if class != "token_too_large" {
		iss, kid = peek(token)
	}
	label := s.issuers.lookup(iss).label()
	if s.metrics != nil {
		s.metrics.observe(endpoint, label, d.class, start)
	}
	if s.log.Enabled(ctx, level) && s.logRate.allow(ctx, s.log, level) {
		s.log.LogAttrs(ctx, level, "token rejected",
			slog.String("endpoint", endpoint),
			slog.String("issuer", label),
			slog.String("kid", truncate(kid, maxLogField)),
			slog.String("class", d.class),
			slog.String("detail", safeMessage(err, d.class, token)),
		)
	}
	return d
}

// peek reads the unverified iss and kid of token, for labels and logs only:
// never for a decision. It returns "" for what it cannot read.
func peek(token string) (iss, kid string) {
	if token == "" || len(token) > maxPeekBytes {
		return "", ""
	}
	h, rest, ok := strings.Cut(token, ".")
	if !ok {
		return "", ""
	}
	p, _, _ := strings.Cut(rest, ".")
	var hdr struct {
		Kid string `json:"kid"`
	}
	if b, err := base64.RawURLEncoding.DecodeString(h); err == nil {
		_ = json.Unmarshal(b, &hdr) // best effort: a label, not a verdict
	}
	var claims struct {
		Iss string `json:"iss"`
	}
	if b, err := base64.RawURLEncoding.DecodeString(p); err == nil {
		_ = json.Unmarshal(b, &claims)
	}
	return claims.Iss, hdr.Kid
}

// safeMessage returns the human message of a rejection: the verifier's error
// text (which never holds the token), bounded. As a second line of defence,
// a message that contains the token or one of its segments is replaced by the
// class word.
func safeMessage(err error, class, token string) string {
	if err == nil {
		return class
	}
	msg := err.Error()
	if leaksToken(msg, token) {
		return class
	}
	return truncate(msg, maxMessage)
}

// leaksToken reports whether msg contains token, or one of its segments long
// enough to matter.
func leaksToken(msg, token string) bool {
	if len(token) >= 8 && strings.Contains(msg, token) {
		return true
	}
	for seg := range strings.SplitSeq(token, ".") {
		if len(seg) >= 16 && strings.Contains(msg, seg) {
			return true
		}
	}
	return false
}

// truncate bounds s to at most n bytes without splitting a UTF-8 sequence.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}

// tokenSource is a validated [TokenSource].
type tokenSource struct {
	header string // canonical header name
	prefix string
	cookie string
	query  string
}

// tokenState says what a request's token sources held.
type tokenState int

const (
	tokenFound     tokenState = iota
	tokenMissing              // no source held a token
	tokenAmbiguous            // the first source present held more than one value
)

// tokenFromRequest returns the token of the first source that holds one. A
// header whose value does not start with the source's prefix (Authorization:
// Basic …) holds no token. A source present more than once is ambiguous:
// the proxy's upstream could read another value than the one verified.
func (s *Server) tokenFromRequest(r *http.Request) (string, tokenState) {
	for i := range s.sources {
		ts := &s.sources[i]
		switch {
		case ts.header != "":
			vals := r.Header[ts.header]
			if len(vals) == 0 {
				continue
			}
			if len(vals) > 1 {
				return "", tokenAmbiguous
			}
			tok, ok := cutPrefixFold(vals[0], ts.prefix)
			if !ok || tok == "" {
				continue
			}
			return tok, tokenFound
		case ts.cookie != "":
			cs := r.CookiesNamed(ts.cookie)
			if len(cs) == 0 || cs[0].Value == "" {
				continue
			}
			if len(cs) > 1 {
				return "", tokenAmbiguous
			}
			return cs[0].Value, tokenFound
		case ts.query != "":
			tok, st := queryToken(r, ts.query)
			if st == tokenMissing {
				continue
			}
			return tok, st
		}
	}
	return "", tokenMissing
}

// queryToken looks for the parameter in the request's own query (Envoy
// appends the original path and query), then in the original URI reported
// by the proxy (X-Forwarded-Uri: Traefik, Caddy; X-Original-Uri: nginx).
func queryToken(r *http.Request, name string) (string, tokenState) {
	if vals := r.URL.Query()[name]; len(vals) > 0 {
		return oneValue(vals)
	}
	for _, h := range [...]string{"X-Forwarded-Uri", "X-Original-Uri"} {
		uri := r.Header.Get(h)
		_, rawQuery, ok := strings.Cut(uri, "?")
		if !ok {
			continue
		}
		q, _ := url.ParseQuery(rawQuery) // keep what parses
		if vals := q[name]; len(vals) > 0 {
			return oneValue(vals)
		}
	}
	return "", tokenMissing
}

func oneValue(vals []string) (string, tokenState) {
	if len(vals) > 1 {
		return "", tokenAmbiguous
	}
	if vals[0] == "" {
		return "", tokenMissing
	}
	return vals[0], tokenFound
}

// bearerToken returns the token of an Authorization header value
// ("Bearer <token>", scheme compared case-insensitively), or false.
func bearerToken(authorization string) (string, bool) {
	tok, ok := cutPrefixFold(authorization, "Bearer ")
	return tok, ok && tok != ""
}

// cutPrefixFold removes prefix (compared case-insensitively) and the spaces
// after it. An empty prefix always matches.
func cutPrefixFold(v, prefix string) (string, bool) {
	if len(v) < len(prefix) || !strings.EqualFold(v[:len(prefix)], prefix) {
		return "", false
	}
	return strings.TrimLeft(v[len(prefix):], " "), true
}

// issuerInfo is what the server knows of one configured issuer.
type issuerInfo struct {
	name string // the configured issuer string: the metrics label
	keys *cache.Keys
	// prefix and suffix surround "{tenantid}" in a templated issuer.
	prefix, suffix string
	templated      bool
	headers        []claimHeader // sorted by claim
}

// claimHeader maps one extracted claim to a forward-auth response header.
type claimHeader struct {
	claim  string
	header string // canonical
}

// label returns the issuer's metrics label: its configured string, or
// "unknown" for nil.
func (is *issuerInfo) label() string {
	if is == nil {
		return unknownIssuer
	}
	return is.name
}

// issuerIndex maps a verified token's configured issuer name, or a rejected
// token's iss (for its metric label), to its configured issuer.
type issuerIndex struct {
	list      []*issuerInfo // configured order
	named     map[string]*issuerInfo
	exact     map[string]*issuerInfo
	templated []*issuerInfo
	any       *issuerInfo // the sole issuer with SkipIssuerCheck
}

func newIssuerIndex(issuers []verify.Issuer) (issuerIndex, error) {
	x := issuerIndex{named: make(map[string]*issuerInfo, len(issuers)), exact: make(map[string]*issuerInfo, len(issuers))}
	for _, vi := range issuers {
		if vi.Keys == nil {
			return x, fmt.Errorf("%w: issuer %q has no Keys", ErrInvalidOptions, vi.Issuer)
		}
		is := &issuerInfo{name: vi.Issuer, keys: vi.Keys}
		x.list = append(x.list, is)
		x.named[vi.Issuer] = is
		switch pre, suf, ok := strings.Cut(vi.Issuer, "{tenantid}"); {
		case vi.SkipIssuerCheck:
			x.any = is
		case ok:
			is.prefix, is.suffix, is.templated = pre, suf, true
			x.templated = append(x.templated, is)
		default:
			x.exact[vi.Issuer] = is
		}
	}
	return x, nil
}

// lookup returns the configured issuer that iss belongs to by its shape, or
// nil. It does not allocate. It labels rejected tokens; a verified token's
// issuer is the verifier's routing (Result.ConfiguredIssuer, byName), which
// also weighs the tid claim.
func (x *issuerIndex) lookup(iss string) *issuerInfo {
	if x.any != nil {
		return x.any
	}
	if is, ok := x.exact[iss]; ok {
		return is
	}
	for _, is := range x.templated {
		if len(iss) > len(is.prefix)+len(is.suffix) &&
			strings.HasPrefix(iss, is.prefix) && strings.HasSuffix(iss, is.suffix) &&
			!strings.Contains(iss[len(is.prefix):len(iss)-len(is.suffix)], "/") {
			return is
		}
	}
	return nil
}

// byName returns the issuer configured as name, or nil.
func (x *issuerIndex) byName(name string) *issuerInfo { return x.named[name] }

// setClaimHeaders validates the claims_to_headers configuration against the
// configured issuers and the claims the verifier extracts.
func (x *issuerIndex) setClaimHeaders(cfg map[string]map[string]string, issuers []verify.Issuer) error {
	for name, m := range cfg {
		is := x.byName(name)
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
			if other, dup := seen[h]; dup {
				return fmt.Errorf("%w: issuer %q: claims %q and %q map to the same header %q", ErrInvalidOptions, name, other, claim, h)
			}
			seen[h] = claim
			is.headers = append(is.headers, claimHeader{claim: claim, header: h})
		}
		slices.SortFunc(is.headers, func(a, b claimHeader) int { return strings.Compare(a.claim, b.claim) })
	}
	return nil
}

// eachClaimHeader calls fn for each claims_to_headers header of an allowed
// decision, in claim order, with the header's canonical name and value.
// Every configured header is reported, with an empty value when the claim
// is absent or its value is not a safe header value (a control character
// left by the verifier's sanitizing): proxies that copy the header then
// overwrite one a client forged, instead of passing it through.
func (s *Server) eachClaimHeader(d decision, fn func(name, value string)) {
	if !d.allowed() || d.issuer == nil {
		return
	}
	for _, h := range d.issuer.headers {
		v := d.res.Extracted[h.claim]
		if !httpguts.ValidHeaderFieldValue(v) || strings.ContainsAny(v, "\r\n") {
			v = ""
		}
		fn(h.header, v)
	}
}

// denial is a precomputed forward-auth denial for one class.
type denial struct {
	www  []string // WWW-Authenticate value, nil for a 503
	body []byte
}

// newDenial builds the denial of class: the RFC 6750 challenge (no error
// code when the request carried no token, §3.1) and the JSON body.
func newDenial(class string, noToken bool) denial {
	d := denial{body: []byte(`{"valid":false,"error":"` + class + `"}` + "\n")}
	switch {
	case class == "keys_unavailable":
	case noToken:
		d.www = []string{`Bearer realm="jwksverify"`}
	default:
		d.www = []string{`Bearer error="invalid_token", error_description="` + class + `"`}
	}
	return d
}

// wwwAuthenticate returns the RFC 6750 challenge of a denied decision, or
// "" for an allowed decision or a 503.
func (s *Server) wwwAuthenticate(d decision) string {
	if www := s.denialOf(d).www; len(www) > 0 && !d.allowed() {
		return www[0]
	}
	return ""
}

func (s *Server) denialOf(d decision) denial {
	if d.noToken {
		return s.noTokenDeny
	}
	if dn, ok := s.denials[d.class]; ok {
		return dn
	}
	return newDenial(d.class, false)
}

// serveAuthz is forward-auth: /v1/authz and /v1/authz/*, any method. Allow
// is exactly 200 with an empty body and the claim headers; deny is 401 with
// the RFC 6750 challenge; 503 only when keys are unavailable. It never reads
// the request body.
func (s *Server) serveAuthz(w http.ResponseWriter, r *http.Request) {
	d := s.decideRequest(r, endpointAuthz)
	if d.allowed() {
		h := w.Header()
		if d.issuer != nil && len(d.issuer.headers) > 0 {
			// One backing array for every claim header: one allocation.
			vals, i := make([]string, len(d.issuer.headers)), 0
			s.eachClaimHeader(d, func(name, value string) {
				vals[i] = value
				h[name] = vals[i : i+1 : i+1]
				i++
			})
		}
		if s.stripAuthz {
			h["X-Envoy-Auth-Headers-To-Remove"] = s.static.stripAuthz
		}
		h["Cache-Control"] = s.static.noStore
		w.WriteHeader(http.StatusOK)
		return
	}
	s.writeDenial(w, d)
}

// writeDenial writes a 401 or 503 for a token that was not allowed, with
// the challenge and the body {"valid":false,"error":CLASS}.
func (s *Server) writeDenial(w http.ResponseWriter, d decision) {
	dn := s.denialOf(d)
	h := w.Header()
	if dn.www != nil {
		h["Www-Authenticate"] = dn.www
	}
	h["Content-Type"] = s.static.json
	h["X-Content-Type-Options"] = s.static.nosniff
	h["Cache-Control"] = s.static.noStore
	w.WriteHeader(d.status)
	_, _ = w.Write(dn.body)
}
