// Package jwks fetches one issuer's JSON Web Key Set in the background and
// publishes it, parsed once, into a [cache.Keys].
//
// A [Fetcher] reads keys from a JWKS URL, from OIDC discovery (the JWKS URL
// named by <issuer>/.well-known/openid-configuration, whose issuer must equal
// the configured one exactly), or from a local file (reloaded when it
// changes). It honours Cache-Control/Expires (clamped), revalidates with
// ETag/Last-Modified, retries with exponential backoff and jitter, keeps the
// last good set for a bounded time, persists it optionally for cold starts,
// and serves rate-limited, de-duplicated refreshes on unknown kids.
package jwks

import (
	"cmp"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"reflect"
	"slices"
	"time"

	"github.com/spiffe/go-spiffe/v2/spiffeid"
	"go.opentelemetry.io/otel/trace"

	"github.com/jwksverify/jwksverify/cache"
	"github.com/jwksverify/jwksverify/verify"
)

// Defaults applied by [New] to zero-valued options (SPEC production values).
const (
	DefaultFetchTimeout       = 10 * time.Second
	DefaultMinInterval        = time.Minute
	DefaultMaxInterval        = 24 * time.Hour
	DefaultTTL                = 15 * time.Minute
	DefaultUnknownKidInterval = 30 * time.Second
	DefaultUnknownKidWait     = 500 * time.Millisecond
	DefaultStaleFor           = 24 * time.Hour
	DefaultMaxBytes           = 1 << 20
	DefaultMaxKeys            = 100
	DefaultMaxRedirects       = 3
	DefaultFilePollInterval   = time.Second
	// MinAnyInterval is the smallest interval any option accepts.
	MinAnyInterval = time.Second
)

// Bounds of the options [New] and [Fetch] accept (zero still means the
// default).
const (
	MaxFetchTimeout = 5 * time.Minute
	MinMaxBytes     = 1024
	MaxMaxBytes     = 64 << 20
	MaxMaxKeys      = 10000
)

// Options configure a [Fetcher]. At most one of URL, Discovery and File is
// the source; with none, StaticKeys are the whole set.
type Options struct {
	// Issuer is the issuer identifier. Required with Discovery; used in
	// logs, status and the state file name otherwise.
	Issuer string
	// URL is the JWKS URL. https, or http for loopback hosts only unless
	// InsecureAllowHTTP.
	URL string
	// Discovery fetches the JWKS URL from the issuer's OIDC discovery document.
	Discovery bool
	// DiscoveryURL, with Discovery, is where the discovery document is
	// fetched from, when it is not under the issuer (a Kubernetes API
	// server's in-cluster address). The document's issuer must still equal
	// Issuer exactly. Empty means <Issuer>/.well-known/openid-configuration.
	DiscoveryURL string
	// CAFile is a PEM file of the root certificates that discovery and JWKS
	// fetches trust (a private CA, a cluster CA), instead of the system's.
	// It is read by New; it cannot be combined with Client. Empty means the
	// system roots.
	CAFile string
	// BearerTokenFile, if set, is a file whose content (trimmed of white
	// space) is sent as "Authorization: Bearer" with every discovery and
	// JWKS request. It is read again for every fetch, so a rotated token
	// (a projected Kubernetes service-account token) is used on the next
	// fetch; it is never logged. An unreadable or empty file fails the fetch
	// (the last good set keeps serving). Empty means no Authorization.
	BearerTokenFile string
	// TrustDomain, if set, makes the source a SPIFFE trust bundle of that
	// trust domain (a name such as "example.org"): it is parsed with
	// go-spiffe, its jwt-svid keys are published with use "jwt-svid" (its
	// x509-svid entries are not keys for tokens), and its
	// spiffe_refresh_hint, clamped to [MinInterval, MaxInterval], is the
	// refresh interval instead of the response's caching headers. A bundle
	// that go-spiffe refuses fails the fetch whole. Empty means a JWKS.
	TrustDomain string
	// File is a local JWKS file, reloaded when it changes. Keys from a file
	// are Local: oct (HMAC) keys are accepted from it.
	File string
	// FilePollInterval is how often File is checked for a change (its size,
	// modification time or identity). Zero means 1s.
	FilePollInterval time.Duration
	// StaticKeys are keys from local configuration (an HMAC secret, a PEM
	// key), merged into every set the fetcher publishes: the static keys
	// first, then the source's. Nil means none. New refuses a nil key, an
	// HMAC secret shorter than its algorithm needs (verify.CheckHMACKey), and
	// two static keys with the same non-empty kid. A key of the source whose kid
	// a static key holds is left out of the set and reported as skipped: the
	// operator's configuration wins over what a source publishes.
	//
	// With no URL, Discovery or File, the fetcher publishes the static keys
	// alone (never stale), is ready at once, fetches nothing and starts no
	// goroutine. With a source, the static keys alone are published at start
	// (unless StateDir holds a set), so they verify while the source is
	// still unreachable; once the source's first set is published, the
	// merged set shares the source set's staleness. A fetch that yields no
	// usable key of its own fails with [ErrNoKeys] even when static keys are
	// configured: the last good set stays. The keys are shared, not copied;
	// a [cache.Key] is immutable.
	StaticKeys []*cache.Key

	// Keys receives the parsed sets. Nil means New allocates one; get it with
	// [Fetcher.Keys].
	Keys *cache.Keys
	// Client sends the requests. Nil means a client with FetchTimeout, at most
	// DefaultMaxRedirects redirects (each re-checked against the http rule),
	// and TLS verified. A caller's client is copied, not modified: the copy
	// gets the same redirect rule (before the client's own CheckRedirect),
	// and FetchTimeout bounds each request through its context.
	Client *http.Client

	// FetchTimeout bounds one fetch: [MinAnyInterval, MaxFetchTimeout].
	// Zero means 10s.
	FetchTimeout time.Duration
	// MinInterval and MaxInterval clamp the refresh interval taken from
	// Cache-Control/Expires. Zero means 1m and 24h.
	MinInterval, MaxInterval time.Duration
	// DefaultTTL is the refresh interval when the response has no caching
	// headers. Zero means 15m.
	DefaultTTL time.Duration
	// UnknownKidInterval is the least time between two refreshes triggered by
	// unknown kids. Zero means 30s.
	UnknownKidInterval time.Duration
	// UnknownKidWait is the longest a request waits for an unknown-kid
	// refresh, counted from the moment that refresh started: a request that
	// joins it waits only the remainder, one arriving later does not wait,
	// and past the wait [Fetcher.RefreshUnknownKid] returns
	// [ErrRefreshPending] while the refresh goes on in the background. Zero
	// means 500ms; more than FetchTimeout is refused.
	UnknownKidWait time.Duration
	// StaleFor is how long the last good set keeps serving after the last
	// successful fetch. Zero means 24h.
	StaleFor time.Duration

	// MaxBytes bounds a JWKS or discovery body: [MinMaxBytes, MaxMaxBytes].
	// Zero means 1 MiB.
	MaxBytes int64
	// MaxKeys bounds the keys read from one JWKS. A fetched JWKS with more
	// keys is refused whole ([ErrTooLarge]; the last good set stays); a
	// file's keys beyond it are skipped and reported. [1, MaxMaxKeys]; zero
	// means 100.
	MaxKeys int

	// StateDir, if set, is where the last good JWKS is persisted and loaded
	// from at start. Empty means no persistence. After each successful fetch
	// (a 304 included) the document, its validators and the fetch time are
	// written atomically (mode 0600) to <StateDir>/<16 hex digits of
	// sha256(Issuer, or the source)>.json; New creates the directory (0700).
	// At start a file of the same issuer and source is published with its
	// fetch time, so StaleFor bounds it across restarts. With Discovery the
	// file also keeps the jwks_uri and introspection_endpoint discovered,
	// used at start while the document cannot be had. Not used with File.
	StateDir string

	// Previous, if not nil, is the fetcher this one replaces (a
	// configuration reload that changed this issuer's options). When it
	// read the same source (URL or discovery) for the same Issuer, New
	// starts from its last good set — the document, its validators and its
	// fetch time, as from a StateDir file, so usable for StaleFor from that
	// fetch time, and, with discovery from the same DiscoveryURL, the
	// jwks_uri (when InsecureAllowHTTP still allows it) and
	// introspection_endpoint it discovered — instead of from
	// nothing: a changed option does not drop the keys while the source is
	// down. Previous is only read, at New, and not kept; its owner still
	// closes it. Nil means none.
	Previous *Fetcher

	// InsecureAllowHTTP accepts plain http:// URLs for non-loopback hosts.
	// It MUST NOT be used outside a trusted network: keys fetched over plain
	// HTTP can be replaced by anyone on the path.
	InsecureAllowHTTP bool

	// Now returns the current time. Nil means time.Now. Refreshes and
	// retries are scheduled by Now and waited on time's timers: tests step
	// them with testing/synctest.
	Now func() time.Time
	// Jitter returns a random float in [0, 1). Nil means math/rand/v2.
	Jitter func() float64
	// Logger receives fetch outcomes and skipped keys (never key material).
	// Nil means slog.Default().
	Logger *slog.Logger
	// Tracer, if not nil, records a span per HTTP request to the source
	// ("jwks.fetch" for a JWKS, "discovery.fetch" for the discovery
	// document: the URL without credentials or query, the status, the
	// outcome), and a "jwks.refresh_unknown_kid" span for each
	// [Fetcher.RefreshUnknownKid] wait, a child of the caller's span; the
	// fetch that an unknown kid starts is a child of that wait's span. Nil
	// means no spans.
	Tracer trace.Tracer
}

// Same reports whether a and b configure the same fetcher, so that a
// process reloading its configuration may keep the fetcher of a (its key
// set, schedule and counters: no refetch) for b: every field equal, the
// static keys of equal material, Keys, Client, Now, Jitter,
// Logger and Tracer by identity (a func-valued field set in either is
// never the same); Previous, which matters only at New, is not compared.
func Same(a, b Options) bool {
	if len(a.StaticKeys) != len(b.StaticKeys) {
		return false
	}
	for i, k := range a.StaticKeys {
		if !k.Equal(b.StaticKeys[i]) {
			return false
		}
	}
	if a.Keys != b.Keys || a.Client != b.Client || a.Logger != b.Logger || a.Tracer != b.Tracer {
		return false
	}
	if a.Now != nil || b.Now != nil || a.Jitter != nil || b.Jitter != nil {
		return false
	}
	a.StaticKeys, a.Keys, a.Client, a.Logger, a.Tracer, a.Previous = nil, nil, nil, nil, nil, nil
	b.StaticKeys, b.Keys, b.Client, b.Logger, b.Tracer, b.Previous = nil, nil, nil, nil, nil, nil
	return reflect.DeepEqual(a, b)
}

// CheckOptions reports whether [New] and [Fetch] accept opts (an error
// wrapping [ErrInvalidOptions] if not), without building or starting
// anything and without I/O: what `jwksverify check` asks of each issuer.
func CheckOptions(opts Options) error {
	_, err := opts.withDefaults()
	return err
}

// checkSource validates o's key source: one of URL, Discovery and File,
// or StaticKeys (HMAC secrets long enough, kids distinct), and the URLs,
// CA file and trust domain that go with it. It returns o with its
// StaticKeys cloned.
func (o Options) checkSource() (Options, error) {
	invalid := func(field, format string, args ...any) (Options, error) {
		return Options{}, invalidOption(field, format, args...)
	}
	sources := 0
	for _, set := range []bool{o.URL != "", o.Discovery, o.File != ""} {
		if set {
			sources++
		}
	}
	switch {
	case sources > 1:
		return invalid("", "at most one of URL, Discovery and File may be set")
	case sources == 0 && len(o.StaticKeys) == 0:
		return invalid("", "one of URL, Discovery, File or StaticKeys must be set")
	}
	kids := make(map[string]bool, len(o.StaticKeys))
	for i, k := range o.StaticKeys {
		switch {
		case k == nil:
			return invalid("", "StaticKeys[%d] is nil", i)
		case verify.CheckHMACKey(k) != nil:
			return invalid(fmt.Sprintf("StaticKeys[%d]", i), "%v", verify.CheckHMACKey(k))
		case k.Kid != "" && kids[k.Kid]:
			return invalid(fmt.Sprintf("StaticKeys[%d]", i), "kid %q is held by another static key", clip(k.Kid))
		}
		kids[k.Kid] = true
	}
	o.StaticKeys = slices.Clone(o.StaticKeys)
	if o.DiscoveryURL != "" {
		if !o.Discovery {
			return invalid("DiscoveryURL", "set without Discovery")
		}
		if _, err := parseURL(o.DiscoveryURL, o.InsecureAllowHTTP); err != nil {
			return invalid("DiscoveryURL", "%w", err)
		}
	}
	if o.CAFile != "" && o.Client != nil {
		return invalid("", "CAFile cannot be combined with Client (configure the client's TLS instead)")
	}
	if o.TrustDomain != "" {
		if _, err := spiffeid.TrustDomainFromString(o.TrustDomain); err != nil {
			return invalid("TrustDomain", "%w", err)
		}
		if o.Discovery {
			return invalid("", "TrustDomain needs URL or File, not Discovery")
		}
	}
	if o.URL != "" {
		if _, err := parseURL(o.URL, o.InsecureAllowHTTP); err != nil {
			return invalid("URL", "%w", err)
		}
	}
	if o.Discovery {
		if o.Issuer == "" {
			return invalid("", "Discovery needs Issuer")
		}
		if _, err := parseURL(o.Issuer, o.InsecureAllowHTTP); err != nil {
			return invalid("Issuer", "%w", err)
		}
	}
	return o, nil
}

// withDefaults validates o and fills its zero values.
func (o Options) withDefaults() (Options, error) {
	invalid := func(field, format string, args ...any) (Options, error) {
		return Options{}, invalidOption(field, format, args...)
	}
	o, err := o.checkSource()
	if err != nil {
		return Options{}, err
	}
	durations := []struct {
		name  string
		p     *time.Duration
		def   time.Duration
		floor time.Duration
	}{
		{"FetchTimeout", &o.FetchTimeout, DefaultFetchTimeout, MinAnyInterval},
		{"MinInterval", &o.MinInterval, DefaultMinInterval, MinAnyInterval},
		{"MaxInterval", &o.MaxInterval, DefaultMaxInterval, MinAnyInterval},
		{"DefaultTTL", &o.DefaultTTL, DefaultTTL, MinAnyInterval},
		{"UnknownKidInterval", &o.UnknownKidInterval, DefaultUnknownKidInterval, MinAnyInterval},
		{"StaleFor", &o.StaleFor, DefaultStaleFor, MinAnyInterval},
		{"FilePollInterval", &o.FilePollInterval, DefaultFilePollInterval, MinAnyInterval},
	}
	for _, d := range durations {
		switch {
		case *d.p == 0:
			*d.p = d.def
		case *d.p < d.floor:
			return invalid(d.name, "%v is below the minimum of %v", *d.p, d.floor)
		}
	}
	if o.FetchTimeout > MaxFetchTimeout {
		return invalid("FetchTimeout", "%v is above the maximum of %v", o.FetchTimeout, MaxFetchTimeout)
	}
	switch {
	case o.UnknownKidWait < 0:
		return invalid("UnknownKidWait", "%v is negative", o.UnknownKidWait)
	case o.UnknownKidWait == 0:
		o.UnknownKidWait = DefaultUnknownKidWait // below MinAnyInterval: never above FetchTimeout
	case o.UnknownKidWait > o.FetchTimeout:
		return invalid("UnknownKidWait", "%v exceeds FetchTimeout %v", o.UnknownKidWait, o.FetchTimeout)
	}
	if o.MinInterval > o.MaxInterval {
		return invalid("MinInterval", "%v exceeds MaxInterval %v", o.MinInterval, o.MaxInterval)
	}
	o.MaxBytes, o.MaxKeys = cmp.Or(o.MaxBytes, DefaultMaxBytes), cmp.Or(o.MaxKeys, DefaultMaxKeys)
	switch {
	case o.MaxBytes < MinMaxBytes || o.MaxBytes > MaxMaxBytes:
		return invalid("MaxBytes", "%d is out of range [%d, %d]", o.MaxBytes, MinMaxBytes, MaxMaxBytes)
	case o.MaxKeys < 1 || o.MaxKeys > MaxMaxKeys:
		return invalid("MaxKeys", "%d is out of range [1, %d]", o.MaxKeys, MaxMaxKeys)
	}
	if o.Keys == nil {
		o.Keys = new(cache.Keys)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Jitter == nil {
		o.Jitter = rand.Float64
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o, nil
}
