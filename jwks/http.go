package jwks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/jwksverify/jwksverify/internal/asciifold"
	"github.com/jwksverify/jwksverify/internal/redact"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

const (
	userAgent     = "jwksverify"
	acceptJWKS    = "application/jwk-set+json, application/json"
	acceptJSON    = "application/json"
	wellKnownOIDC = "/.well-known/openid-configuration"
	// maxHeaderBytes bounds the response headers of a fetch.
	maxHeaderBytes = 64 << 10
	// maxCacheAge caps a max-age or Expires before clamping, so that the
	// arithmetic cannot overflow.
	maxCacheAge = 10 * 365 * 24 * time.Hour
)

// checkURL applies the transport rule to u ([CheckURL]): https; http only
// for loopback hosts (127.0.0.0/8, ::1, localhost) unless insecure; no user
// info.
func checkURL(u *url.URL, insecure bool) error {
	if u.User != nil {
		return fmt.Errorf("%w: %s: credentials in the URL are refused", ErrInsecureURL, redact.URL(u))
	}
	switch u.Scheme {
	case "https":
	case "http":
		if !insecure && !isLoopback(u.Hostname()) {
			return fmt.Errorf("%w: %s: plain http is accepted only for loopback hosts", ErrInsecureURL, redact.URL(u))
		}
	default:
		return fmt.Errorf("%w: %s: scheme must be https", ErrInsecureURL, redact.URL(u))
	}
	if u.Host == "" {
		return fmt.Errorf("%w: %s: no host", ErrInsecureURL, redact.URL(u))
	}
	return nil
}

// parseURL parses a configured or discovered URL and applies checkURL.
func parseURL(raw string, insecure bool) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: unparsable URL", ErrInsecureURL)
	}
	if err := checkURL(u, insecure); err != nil {
		return nil, err
	}
	return u, nil
}

func isLoopback(host string) bool {
	if asciifold.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// newClient returns the client a fetcher uses, and the transport it owns (nil
// when the caller gave the client). A caller's client is copied, so that the
// redirect rule can be added without changing it.
func newClient(opts Options) (*http.Client, *Transport, error) {
	var c http.Client
	var owned *Transport
	if opts.Client != nil {
		c = *opts.Client
	} else {
		// FetchTimeout is enforced by the context of each request (get), for
		// a caller's client too.
		var err error
		if owned, err = NewTransport(opts.CAFile, maxHeaderBytes); err != nil {
			return nil, nil, err
		}
		c = http.Client{Transport: owned}
	}
	inner := c.CheckRedirect
	insecure := opts.InsecureAllowHTTP
	c.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if len(via) > DefaultMaxRedirects {
			return fmt.Errorf("%w: more than %d", ErrTooManyRedirects, DefaultMaxRedirects)
		}
		if err := checkURL(req.URL, insecure); err != nil {
			return err
		}
		if !insecure && len(via) > 0 && via[0].URL.Scheme == "https" && req.URL.Scheme != "https" {
			return fmt.Errorf("%w: %s: redirect from https to http", ErrInsecureURL, redact.URL(req.URL))
		}
		if inner != nil {
			return inner(req, via)
		}
		return nil
	}
	return &c, owned, nil
}

// response is the part of an HTTP answer a fetch keeps.
type response struct {
	notModified bool
	body        []byte
	header      http.Header
	// etag is the If-None-Match the request carried, "" when none.
	etag string
	// lastModified is the If-Modified-Since the request carried, "" when
	// none.
	lastModified string
}

// get sends one bounded GET. It counts the request, sends the validators when
// given, and accepts 200 and, for a conditional request, 304. With a Tracer
// it runs in a client span of its own.
func (f *Fetcher) get(ctx context.Context, rawURL, accept, etag, lastModified string) (response, error) {
	if f.opts.Tracer == nil {
		return f.doGet(ctx, rawURL, accept, etag, lastModified)
	}
	name := "jwks.fetch"
	if accept == acceptJSON {
		name = "discovery.fetch"
	}
	ctx, span := f.opts.Tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(
		attrIssuer.String(f.opts.Issuer), attribute.String("url.full", redact.String(rawURL)),
		attribute.Bool("jwksverify.conditional", etag != "" || lastModified != "")))
	defer span.End()
	resp, err := f.doGet(ctx, rawURL, accept, etag, lastModified)
	switch {
	case err != nil:
		span.SetStatus(codes.Error, err.Error()) // URLs in it are redacted; no key material
	case resp.notModified:
		span.SetAttributes(attrOutcome.String("not_modified"))
	default:
		span.SetAttributes(attrOutcome.String("ok"), attribute.Int("jwksverify.bytes", len(resp.body)))
	}
	return resp, err
}

// Span attributes of the fetcher's spans.
const (
	attrIssuer  = attribute.Key("jwksverify.issuer")
	attrOutcome = attribute.Key("jwksverify.outcome")
)

// doGet is get without the span.
func (f *Fetcher) doGet(ctx context.Context, rawURL, accept, etag, lastModified string) (response, error) {
	ctx, cancel := context.WithTimeout(ctx, f.opts.FetchTimeout)
	defer cancel()
	shown := redact.String(rawURL)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return response{}, fmt.Errorf("%w: %s: %w", ErrInsecureURL, shown, err)
	}
	req.Header.Set("Accept", accept)
	req.Header.Set("User-Agent", userAgent)
	if etag != "" {
		req.Header.Set("If-None-Match", etag)
	}
	if lastModified != "" {
		req.Header.Set("If-Modified-Since", lastModified)
	}
	if f.opts.BearerTokenFile != "" {
		// Read for every fetch: a rotated token is used on the next one.
		tok, err := ReadBearerToken(f.opts.BearerTokenFile)
		if err != nil {
			return response{}, fmt.Errorf("jwks: GET %s: %w", shown, err)
		}
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	f.stats.Fetches.Add(1)
	resp, err := f.client.Do(req)
	if err != nil {
		// *url.Error repeats the full URL; keep only its cause.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return response{}, fmt.Errorf("jwks: GET %s: %w", shown, err)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusOK:
	case resp.StatusCode == http.StatusNotModified && (etag != "" || lastModified != ""):
		return response{notModified: true, header: resp.Header, etag: etag, lastModified: lastModified}, nil
	default:
		err := fmt.Errorf("%w: GET %s: %d", ErrStatus, shown, resp.StatusCode)
		if d, ok := RetryAfter(resp.Header, f.opts.Now()); ok {
			err = &retryAfterError{err: err, after: d}
		}
		return response{}, err
	}
	body, err := readBounded(resp.Body, resp.ContentLength, f.opts.MaxBytes)
	if err != nil {
		return response{}, fmt.Errorf("jwks: GET %s: %w", shown, err)
	}
	return response{body: body, header: resp.Header}, nil
}

// retryAfterError is a failed fetch whose answer asked, with Retry-After
// (a 429 or 503 of an IdP shedding load), not to be asked again before
// after.
type retryAfterError struct {
	err   error
	after time.Duration
}

func (e *retryAfterError) Error() string { return e.err.Error() }
func (e *retryAfterError) Unwrap() error { return e.err }

// RetryAfter reads a Retry-After header (RFC 9110 §10.2.3): delay-seconds
// or an HTTP-date, as a delay from now, capped at the longest a fetched
// answer's caching headers are honoured. ok is false when there is none,
// or it does not parse. The introspection client reads it too.
func RetryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		return capAge(max(secs, 0)), true
	}
	if at, err := http.ParseTime(v); err == nil {
		return min(max(at.Sub(now), 0), maxCacheAge), true
	}
	return 0, false
}

// readBounded reads r whole, refusing more than limit bytes. size is the
// announced length, or -1.
func readBounded(r io.Reader, size, limit int64) ([]byte, error) {
	if size > limit {
		return nil, fmt.Errorf("%w: %d bytes (limit %d)", ErrTooLarge, size, limit)
	}
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%w: more than %d bytes", ErrTooLarge, limit)
	}
	return b, nil
}

// discover reads the issuer's OIDC discovery document and returns its
// jwks_uri, after checking that its issuer is exactly the configured one.
func (f *Fetcher) discover(ctx context.Context) (string, error) {
	u := f.opts.DiscoveryURL
	if u == "" {
		u = strings.TrimSuffix(f.opts.Issuer, "/") + wellKnownOIDC
	}
	resp, err := f.get(ctx, u, acceptJSON, "", "")
	if err != nil {
		return "", fmt.Errorf("discovery: %w", err)
	}
	doc, err := parseDiscovery(resp.body, f.opts.Issuer, f.opts.InsecureAllowHTTP)
	if err != nil {
		return "", err
	}
	f.introspection.Store(&doc.introspectionEndpoint)
	return doc.jwksURI, nil
}

// IntrospectionEndpoint returns the introspection_endpoint (RFC 8414) of
// the last discovery document read, "" when discovery is off, has not
// succeeded yet, or the document names none (or one that breaks the URL
// rule). It does not block.
func (f *Fetcher) IntrospectionEndpoint() string {
	if p := f.introspection.Load(); p != nil {
		return *p
	}
	return ""
}

// discovery is what a discovery document names.
type discovery struct {
	jwksURI               string
	introspectionEndpoint string // "" when absent or refused by the URL rule
}

// parseDiscovery reads an OIDC discovery document (untrusted input): it must
// be a JSON object whose "issuer" equals issuer exactly (RFC 8414 §3.3, OIDC
// Discovery §4) and whose "jwks_uri" passes the URL rule. It returns the
// jwks_uri and the introspection_endpoint when that passes the rule too.
func parseDiscovery(body []byte, issuer string, insecure bool) (discovery, error) {
	if err := checkDepth(body, maxJSONDepth); err != nil {
		return discovery{}, fmt.Errorf("discovery: %w", err)
	}
	// A map, not a struct: encoding/json matches struct fields
	// case-insensitively, and the members must be matched exactly.
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(body, &doc); err != nil || doc == nil {
		return discovery{}, fmt.Errorf("discovery: %w: not a JSON object", ErrMalformed)
	}
	got, ok := stringMember(doc, "issuer")
	if _, present := doc["issuer"]; !ok || !present {
		return discovery{}, fmt.Errorf("discovery: %w: no issuer string", ErrMalformed)
	}
	if got != issuer {
		return discovery{}, fmt.Errorf("%w: document says %q, configured %q", ErrIssuerMismatch, clip(got), issuer)
	}
	jwksURI, ok := stringMember(doc, "jwks_uri")
	if !ok || jwksURI == "" {
		return discovery{}, fmt.Errorf("discovery: %w: no jwks_uri string", ErrMalformed)
	}
	if _, err := parseURL(jwksURI, insecure); err != nil {
		return discovery{}, fmt.Errorf("discovery: jwks_uri: %w", err)
	}
	d := discovery{jwksURI: jwksURI}
	if ie, ok := stringMember(doc, "introspection_endpoint"); ok && ie != "" {
		if _, err := parseURL(ie, insecure); err == nil {
			d.introspectionEndpoint = ie
		}
	}
	return d, nil
}

// cacheLifetime returns the freshness lifetime a response grants: max-age
// (less Age), else Expires − Date (or − now). no-store and no-cache grant
// none. ok is false when the response says nothing about caching.
func cacheLifetime(h http.Header, now time.Time) (d time.Duration, ok bool) {
	maxAge, haveMaxAge := time.Duration(0), false
	for _, line := range h.Values("Cache-Control") {
		for _, dir := range strings.Split(line, ",") {
			name, val, _ := strings.Cut(strings.TrimSpace(dir), "=")
			switch strings.ToLower(strings.TrimSpace(name)) {
			case "no-store", "no-cache":
				return 0, true
			case "max-age":
				if secs, err := strconv.ParseInt(strings.Trim(strings.TrimSpace(val), `"`), 10, 64); err == nil && secs >= 0 {
					maxAge, haveMaxAge = capAge(secs), true
				}
			}
		}
	}
	if haveMaxAge {
		if age, err := strconv.ParseInt(strings.TrimSpace(h.Get("Age")), 10, 64); err == nil && age > 0 {
			maxAge -= capAge(age)
		}
		return max(maxAge, 0), true
	}
	if e := h.Get("Expires"); e != "" {
		exp, err := http.ParseTime(e)
		if err != nil {
			return 0, true // an invalid Expires means "already expired" (RFC 9111 §5.3)
		}
		base := now
		if date, err := http.ParseTime(h.Get("Date")); err == nil {
			base = date
		}
		return min(max(exp.Sub(base), 0), maxCacheAge), true
	}
	return 0, false
}

func capAge(secs int64) time.Duration {
	if secs > int64(maxCacheAge/time.Second) {
		return maxCacheAge
	}
	return time.Duration(secs) * time.Second
}
