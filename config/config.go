// Package config turns jwksverify's YAML configuration file into a [Plan]:
// the options each library takes, the listen addresses and the timeouts.
// Every command that reads the file (serve, serve --demo, verify --config,
// check) and every program that embeds the service (package service) reads
// it here; the file is decoded strictly (unknown keys, repeated keys and
// values of the wrong type are refused with their key path and line). An absent key leaves its field zero, for the library's own
// default; a library's rule is applied by the function it exports
// (verify.CheckAlgorithm, jwks.CheckURL, server.CheckClaimHeader, ...) or
// by its New, and this package only adds the YAML path to the error.
package config

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spiffe/go-spiffe/v2/spiffeid"

	"github.com/jwksverify/jwksverify/cache"
	"github.com/jwksverify/jwksverify/dpop"
	"github.com/jwksverify/jwksverify/internal/fileread"
	"github.com/jwksverify/jwksverify/introspect"
	"github.com/jwksverify/jwksverify/jwks"
	"github.com/jwksverify/jwksverify/mint"
	"github.com/jwksverify/jwksverify/policy"
	"github.com/jwksverify/jwksverify/policy/celexpr"
	"github.com/jwksverify/jwksverify/redisconn"
	"github.com/jwksverify/jwksverify/replay"
	"github.com/jwksverify/jwksverify/request"
	"github.com/jwksverify/jwksverify/server"
	"github.com/jwksverify/jwksverify/signals"
	"github.com/jwksverify/jwksverify/verify"
)

// The defaults that belong to the command, not to a library.
const (
	defaultListen          = "127.0.0.1:8080"
	defaultShutdownTimeout = 15 * time.Second
	defaultTokenCache      = 100000 // verify: zero turns the cache off
	maxConfigBytes         = 1 << 20
	// MaxSecretBytes bounds a secret file.
	MaxSecretBytes = 4096
)

// logLevels are the values of log.level.
var logLevels = map[string]slog.Level{"debug": slog.LevelDebug, "info": slog.LevelInfo, "warn": slog.LevelWarn, "error": slog.LevelError}

// Plan is what one configuration file asks for. A zero field means the
// default of the library that takes it. It holds secrets (HMAC keys,
// introspection client secrets): never log it.
type Plan struct {
	// Listen is the HTTP listen address; GRPCListen the gRPC one, "" = off;
	// AdminListen the admin endpoints' one (/healthz, /readyz, /v1/issuers,
	// /metrics), "" = on Listen (Server.SeparateAdmin is set when it is not).
	Listen, GRPCListen, AdminListen string
	// TLS, GRPCTLS and AdminTLS are the HTTP, gRPC and admin listeners'
	// TLS files; a zero CertFile means plaintext. AdminTLS needs
	// AdminListen.
	TLS, GRPCTLS, AdminTLS TLS
	// ShutdownTimeout bounds the drain; ShutdownDelay is how long the
	// service reports draining before it starts.
	ShutdownTimeout, ShutdownDelay time.Duration
	// HTTP are the HTTP server's timeouts, derived from the issuers' waits.
	HTTP Timeouts
	// Issuers are the configured issuers, in file order.
	Issuers []Issuer
	// Verify configures the verifier. Issuers and Logger are nil: a command
	// adds each Issuer's Verify once its keys exist, and its logger.
	Verify verify.Options
	// Server configures the server. Verifier, Logger and Version are nil
	// or empty: a command sets them.
	Server server.Options
	// Revocation is the plan of the revocation store, nil when revocation
	// is not configured: a command opens the store (revoke.OpenMemory or
	// revoke.NewRedis) and sets Server.Revocations.
	Revocation *Revocation
	// DPoP is the plan of DPoP proof checking, nil when no issuer asks for
	// DPoP: a command builds the replay store and the dpop.Checker
	// (Server.DPoP) from it.
	DPoP *DPoP
	// Mint configures the minter of the tokens minted for upstreams
	// (package mint; a command builds it with mint.New, which reads the
	// keys file); nil means the file has no mint section. The policies
	// that mint are Server.MintPolicies.
	Mint *mint.Options
	// Redis configures the one Redis client (redisconn.New) that the DPoP
	// replay store, revocation and the shared introspection cache use; nil
	// when the file has no redis section (nor dpop.redis_url). Its URL may
	// hold a password.
	Redis *redisconn.Options
	// Signals is the plan of the revocation signals (back-channel logout,
	// Shared Signals push and poll), nil when no issuer has
	// backchannel_logout or ssf: a command builds the signals.Receiver
	// (Server.Signals) and the pollers from it. It holds bearer tokens.
	Signals *Signals
	// LogLevel and LogFormat ("json" or "text") configure the process log.
	LogLevel  slog.Level
	LogFormat string
	// Hash identifies the file the plan was loaded from ([Hash] of its
	// bytes); empty for a plan not loaded from a file (the demo).
	Hash string
	// Secrets are the files other than the configuration whose content
	// the plan holds, read once by the load rather than at each use (the
	// issuers' secret_file, the ssf push and poll bearer_token_file), by
	// path, each with the [Hash] of the content read. A program that loads the configuration again when its file
	// changes must do so when one of these changes too: the plan goes on
	// verifying with the content it read (a rotated-away secret) until it
	// is loaded again. Nil when there are none.
	Secrets map[string]string
}

// readOnce records that the plan holds the content raw of the file at path
// (Plan.Secrets): raw is the file's bytes as read, whose [Hash] a watcher
// compares with [FileHash].
func (p *Plan) readOnce(path string, raw []byte) {
	if p.Secrets == nil {
		p.Secrets = map[string]string{}
	}
	p.Secrets[path] = Hash(raw)
}

// Hash returns the identity of a configuration file's content: the first
// 16 hex digits of its SHA-256. /v1/issuers and the config_info metric
// report it, and the reload watcher compares it.
func Hash(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:8])
}

// FileHash reads the file at path (bounded as Load bounds it) and returns
// its [Hash].
func FileHash(path string) (string, error) {
	data, err := ReadFile(path, maxConfigBytes)
	if err != nil {
		return "", err
	}
	return Hash(data), nil
}

// TLS is a listener's tls (grpc_tls, admin_tls) section, checked: CertFile and
// KeyFile both set or both empty; ClientAuth request or require only with a
// ClientCAFile. The command that opens the listener loads the files.
type TLS struct {
	CertFile, KeyFile, ClientCAFile string
	// ClientAuth is "none" (no client certificate asked for), "request" (a
	// certificate, when sent, must verify) or "require" (a verified
	// certificate is required at the handshake).
	ClientAuth string
}

// On reports whether the listener serves TLS.
func (t TLS) On() bool { return t.CertFile != "" }

// DPoP is the plan of DPoP proof checking.
type DPoP struct {
	// Checker configures the dpop.Checker; Replay is nil: a command sets it.
	Checker dpop.Options
	// ReplayStore is "memory" or "redis" (over the client of Plan.Redis,
	// then never nil).
	ReplayStore string
	// MemoryMaxEntries bounds the memory store (replay.NewMemory).
	MemoryMaxEntries int
}

// Revocation is the plan of the revocation store.
type Revocation struct {
	// Store is "memory" (StateDir) or "redis" (RedisURL).
	Store string
	// Retention is how long an entry lives; MaxStaleness how old a redis
	// copy may be before it fails closed.
	Retention, MaxStaleness time.Duration
	// StateDir is the memory store's directory. The redis store uses the
	// plan's Redis section.
	StateDir string
}

// The bounds and defaults of the revocation section.
const (
	DefaultRetention    = 24 * time.Hour
	DefaultMaxStaleness = 30 * time.Second
	minRetention        = time.Minute
	maxRetention        = 400 * 24 * time.Hour
	minMaxStaleness     = time.Second
	maxMaxStaleness     = time.Hour
)

// Issuer is the plan of one configured issuer.
type Issuer struct {
	// JWKS configures its key source, the secret_file key in StaticKeys.
	// Logger is nil: a command sets it.
	JWKS jwks.Options
	// Verify is its policy. Keys, Refresher and Introspector are nil: a
	// command sets them.
	Verify verify.Issuer
	// Introspection configures the issuer's RFC 7662 client; nil means
	// opaque tokens are not introspected there. Logger is nil, and so is
	// Endpoint when URL is empty: a command sets it to the fetcher's
	// discovered introspection_endpoint.
	Introspection *introspect.Options
}

// Local reports whether the issuer's keys come from local configuration
// only (a file or a secret): reading them is a configuration matter, not a
// fetch that may fail.
func (is Issuer) Local() bool { return is.JWKS.URL == "" && !is.JWKS.Discovery }

// Overrides are the values given by flag; nil means not given. Flags win
// over the environment (JWKSVERIFY_LISTEN, JWKSVERIFY_GRPC_LISTEN,
// JWKSVERIFY_LOG_LEVEL), the environment over the file.
type Overrides struct {
	Listen, GRPCListen, LogLevel *string
	// NoServerSecrets skips the introspection clients' secrets: `verify
	// --config` checks tokens and never serves /introspect.
	NoServerSecrets bool
}

// errConfig prefixes every error of Load.
var errConfig = errors.New("configuration error")

// Load reads the file at path (relative paths in it are resolved against its
// directory) and returns its plan. env looks up the environment. Every error
// names the file and the field.
func Load(path string, ov Overrides, env func(string) (string, bool)) (*Plan, error) {
	data, err := ReadFile(path, maxConfigBytes)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errConfig, err)
	}
	p, err := Parse(data, filepath.Dir(path), ov, env)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", errConfig, path, err)
	}
	p.Hash = Hash(data)
	return p, nil
}

// Parse returns the plan of a configuration document whose relative paths
// are relative to dir.
func Parse(data []byte, dir string, ov Overrides, env func(string) (string, bool)) (*Plan, error) {
	f, err := decode(data)
	if err != nil {
		return nil, err
	}
	abs := func(p *string) {
		if *p != "" && !filepath.IsAbs(*p) {
			*p = filepath.Join(dir, *p)
		}
	}
	abs(&f.StateDir)
	if f.Mint != nil {
		abs(&f.Mint.KeysFile)
	}
	for _, p := range []*string{&f.Redis.PasswordFile, &f.Redis.Sentinel.PasswordFile, &f.Redis.TLS.CAFile, &f.Redis.TLS.CertFile, &f.Redis.TLS.KeyFile} {
		abs(p)
	}
	for _, t := range []*fileTLS{&f.TLS, &f.GRPCTLS, &f.AdminTLS} {
		abs(&t.CertFile)
		abs(&t.KeyFile)
		abs(&t.ClientCAFile)
	}
	for i := range f.Issuers {
		fi := &f.Issuers[i]
		abs(&fi.JWKSFile)
		abs(&fi.SecretFile)
		abs(&fi.CAFile)
		abs(&fi.FetchBearerTokenFile)
		if fi.Introspection != nil {
			abs(&fi.Introspection.ClientSecretFile)
			abs(&fi.Introspection.Cache.KeyFile)
		}
		if fi.SPIFFE != nil {
			abs(&fi.SPIFFE.BundleFile)
		}
		if s := fi.SSF; s != nil && s.Push != nil {
			abs(&s.Push.BearerTokenFile)
		}
		if s := fi.SSF; s != nil && s.Poll != nil {
			abs(&s.Poll.BearerTokenFile)
		}
	}
	return f.plan(ov, env)
}

// override sets *v from the environment, then from the flag (nil: not
// given), and returns field for errors, saying where a value came from.
func override(v *string, field string, flag *string, flagName, envName string, env func(string) (string, bool)) string {
	s, ok := env(envName)
	switch {
	case flag != nil:
		s = *flag
	case !ok:
		return field
	}
	*v = s
	return field + " (from " + flagName + " or " + envName + ")"
}

func (f *file) plan(ov Overrides, env func(string) (string, bool)) (*Plan, error) {
	p := &Plan{}
	if err := f.planProcess(p, ov, env); err != nil {
		return nil, err
	}
	waits, err := f.planIssuers(p)
	if err != nil {
		return nil, err
	}
	p.HTTP = httpTimeouts(waits)
	if r := f.Log.RejectionsPerSecond; r != nil && *r < 0 {
		return nil, fmt.Errorf("log.rejections_per_second: %d is negative; 0 means no limit", *r)
	}
	if err := f.planVerify(p, env); err != nil {
		return nil, err
	}
	p.Server.StripAuthorization = f.ForwardAuth.StripAuthorization
	p.Server.APIAuth = f.APIAuth.Required
	if p.Server.Proxy, err = request.ParseProxy(f.ForwardAuth.Proxy); err != nil {
		return nil, fmt.Errorf("forward_auth.proxy: %w", err)
	}
	p.Server.MaxBodyBytes = int64(deref(f.Limits.MaxBodyBytes))
	p.Server.MaxBatch = int(deref(f.Batch.MaxTokens))
	if r := f.Log.RejectionsPerSecond; r != nil {
		p.Server.RejectionLogRate = cmp.Or(*r, -1) // server: zero is the default, negative no limit
	}
	if err := f.planRedis(p, env); err != nil {
		return nil, err
	}
	if err := f.planSenders(p); err != nil {
		return nil, err
	}
	for i, is := range p.Issuers {
		if is.Introspection != nil && is.Introspection.SharedCache && p.Redis == nil {
			return nil, fmt.Errorf("issuers[%d].introspection.cache.shared: true, and there is no redis section; set redis.url (or redis.sentinel, redis.cluster)", i)
		}
	}
	if p.Redis != nil {
		// A request waits at most once for Redis (a DPoP proof's SET or
		// a shared cache's answer: each bounded by redis.timeout).
		p.HTTP = httpTimeouts(append(waits, p.Redis.LongestWait()))
	}
	if f.TokenSources != nil && len(f.TokenSources) == 0 {
		return nil, errors.New("token_sources: empty list; remove the key for the default (Authorization: Bearer)")
	}
	p.Server.TokenSources = f.TokenSources
	if err := f.planPolicies(p); err != nil {
		return nil, err
	}
	if err := f.planRevocation(p); err != nil {
		return nil, err
	}
	if err := f.planSignals(p); err != nil {
		return nil, err
	}
	if err := f.planMint(p); err != nil {
		return nil, err
	}
	if err := f.planClients(p, ov, env); err != nil {
		return nil, err
	}
	return p, nil
}

// planProcess plans what belongs to the process, not to a library: the
// listeners and their TLS, the drain and the log.
func (f *file) planProcess(p *Plan, ov Overrides, env func(string) (string, bool)) error {
	p.Listen = cmp.Or(deref(f.Listen), defaultListen)
	p.GRPCListen = deref(f.GRPCListen)
	p.ShutdownTimeout = orDuration(f.ShutdownTimeout, defaultShutdownTimeout)
	p.ShutdownDelay = orDuration(f.ShutdownDelay, 0)
	p.LogFormat = cmp.Or(f.Log.Format, "json")
	level := cmp.Or(f.Log.Level, "info")
	levelField := override(&level, "log.level", ov.LogLevel, "--log-level", "JWKSVERIFY_LOG_LEVEL", env)
	if err := f.planListeners(p, ov, env); err != nil {
		return err
	}
	var err error
	if p.TLS, err = f.TLS.plan("tls"); err != nil {
		return err
	}
	if p.GRPCTLS, err = f.GRPCTLS.plan("grpc_tls"); err != nil {
		return err
	}
	if p.AdminTLS, err = f.AdminTLS.plan("admin_tls"); err != nil {
		return err
	}
	if p.AdminTLS.On() && p.AdminListen == "" {
		// Without admin_listen the admin endpoints are on listen, under tls.
		return errors.New("admin_tls: set without admin_listen; the admin endpoints are then on listen, under tls")
	}
	if err := between("shutdown_timeout", p.ShutdownTimeout, time.Second, 10*time.Minute); err != nil {
		return err
	}
	if err := between("shutdown_delay", p.ShutdownDelay, 0, time.Minute); err != nil {
		return err
	}
	var ok bool
	if p.LogLevel, ok = logLevels[level]; !ok {
		return fmt.Errorf("%s: %q is not one of debug, info, warn, error", levelField, level)
	}
	if p.LogFormat != "json" && p.LogFormat != "text" {
		return fmt.Errorf("log.format: %q is not one of json, text", p.LogFormat)
	}
	return nil
}

// planListeners plans listen, grpc_listen and admin_listen: each a
// host:port, none the same as another.
func (f *file) planListeners(p *Plan, ov Overrides, env func(string) (string, bool)) error {
	listenField := override(&p.Listen, "listen", ov.Listen, "--listen", "JWKSVERIFY_LISTEN", env)
	grpcField := override(&p.GRPCListen, "grpc_listen", ov.GRPCListen, "--grpc-listen", "JWKSVERIFY_GRPC_LISTEN", env)
	if err := checkListen(p.Listen); err != nil {
		return fmt.Errorf("%s: %w", listenField, err)
	}
	if p.GRPCListen != "" {
		if err := checkListen(p.GRPCListen); err != nil {
			return fmt.Errorf("%s: %w", grpcField, err)
		}
		if _, port, _ := net.SplitHostPort(p.GRPCListen); p.GRPCListen == p.Listen && port != "0" {
			return fmt.Errorf("%s: %q is also the HTTP listen address", grpcField, p.GRPCListen)
		}
	}
	if p.AdminListen = deref(f.AdminListen); p.AdminListen != "" {
		if err := checkListen(p.AdminListen); err != nil {
			return fmt.Errorf("admin_listen: %w", err)
		}
		if _, port, _ := net.SplitHostPort(p.AdminListen); port != "0" && (p.AdminListen == p.Listen || p.AdminListen == p.GRPCListen) {
			return fmt.Errorf("admin_listen: %q is also the HTTP or gRPC listen address", p.AdminListen)
		}
		p.Server.SeparateAdmin = true
	}
	return nil
}

// planIssuers plans every issuer and its claims_to_headers, and returns
// the longest wait a token of each may cost a request.
func (f *file) planIssuers(p *Plan) ([]time.Duration, error) {
	if len(f.Issuers) == 0 {
		return nil, errors.New("issuers: at least one issuer is required")
	}
	var waits []time.Duration
	spelled := make(map[string]int, len(f.Issuers))
	for i := range f.Issuers {
		fi := &f.Issuers[i]
		is, err := fi.plan(fmt.Sprintf("issuers[%d]", i), f)
		if err != nil {
			return nil, err
		}
		if j, ok := spelled[issuerSpelling(fi.Issuer)]; ok && f.Issuers[j].Issuer != fi.Issuer {
			return nil, fmt.Errorf("issuers[%d].issuer: %q is issuers[%d].issuer %q in another spelling (a trailing '/', the case of the scheme or host, a default port): "+
				"jwksverify matches iss exactly, but an application reading the forwarded token may not, and would take one issuer's tokens for the other's; "+
				"configure one issuer, spelled as the IdP writes iss", i, fi.Issuer, j, f.Issuers[j].Issuer)
		} else if !ok {
			spelled[issuerSpelling(fi.Issuer)] = i
		}
		p.Issuers = append(p.Issuers, is)
		if fi.SecretFile != "" && len(is.JWKS.StaticKeys) == 1 {
			if secret, ok := is.JWKS.StaticKeys[0].Public.([]byte); ok {
				p.readOnce(fi.SecretFile, secret) // the file's bytes, as read
			}
		}
		waits = append(waits, longestWait(is))
		if len(fi.ClaimsToHeaders) > 0 {
			if p.Server.ClaimsToHeaders == nil {
				p.Server.ClaimsToHeaders = map[string]map[string]string{}
			}
			p.Server.ClaimsToHeaders[fi.Issuer] = fi.ClaimsToHeaders
		}
	}
	return waits, nil
}

// issuerSpelling is the one form of an issuer URL's spellings that a
// reader comparing URLs takes for one issuer: the scheme and host in lower
// case, the scheme's default port left out, a trailing '/' dropped (as
// discovery drops it). The path, query and fragment keep their case. A
// name without "scheme://" is its own form.
func issuerSpelling(iss string) string {
	i := strings.Index(iss, "://")
	if i <= 0 {
		return iss
	}
	scheme, rest := strings.ToLower(iss[:i]), iss[i+3:]
	host, tail := rest, ""
	if j := strings.IndexAny(rest, "/?#"); j >= 0 {
		host, tail = rest[:j], rest[j:]
	}
	host = strings.ToLower(host)
	switch {
	case scheme == "https" && strings.HasSuffix(host, ":443"):
		host = strings.TrimSuffix(host, ":443")
	case scheme == "http" && strings.HasSuffix(host, ":80"):
		host = strings.TrimSuffix(host, ":80")
	}
	return scheme + "://" + host + strings.TrimSuffix(tail, "/")
}

// planRevocation plans the revocation section, the issuers' max_lifetime
// (default: the retention when revocation is configured; never above it),
// and the claims the verifier indexes for the revocation stage.
func (f *file) planRevocation(p *Plan) error {
	r := f.Revocation
	retention := time.Duration(0)
	if r != nil {
		rp := &Revocation{
			Store:        cmp.Or(r.Store, "memory"),
			Retention:    orDuration(r.Retention, DefaultRetention),
			MaxStaleness: orDuration(r.MaxStaleness, DefaultMaxStaleness),
			StateDir:     f.StateDir,
		}
		if err := between("revocation.retention", rp.Retention, minRetention, maxRetention); err != nil {
			return err
		}
		switch rp.Store {
		case "memory":
			if rp.StateDir == "" {
				return errors.New("revocation.store: memory writes every entry to state_dir before it is acknowledged; set state_dir")
			}
			if r.MaxStaleness != nil {
				return errors.New("revocation.max_staleness: applies to store: redis only (a memory store is never stale)")
			}
			rp.MaxStaleness = 0
		case "redis":
			if p.Redis == nil {
				return errors.New("revocation.store: redis needs the redis section (redis.url, redis.sentinel or redis.cluster)")
			}
			if err := between("revocation.max_staleness", rp.MaxStaleness, minMaxStaleness, maxMaxStaleness); err != nil {
				return err
			}
		default:
			return fmt.Errorf("revocation.store: %q is not one of memory, redis", r.Store)
		}
		p.Revocation, retention = rp, rp.Retention
		for _, c := range server.RevocationClaims() {
			if !slices.Contains(p.Verify.IndexClaims, c) {
				p.Verify.IndexClaims = append(p.Verify.IndexClaims, c)
			}
		}
	}
	for i, fi := range f.Issuers {
		field := fmt.Sprintf("issuers[%d].max_lifetime", i)
		ml := retention
		if fi.MaxLifetime != nil {
			ml = time.Duration(*fi.MaxLifetime)
			if ml <= 0 {
				return fmt.Errorf("%s: %s is not positive; remove the key for no bound", field, ml)
			}
			if retention > 0 && ml > retention {
				return fmt.Errorf("%s: %s is above revocation.retention %s: a token would outlive the entries that name it", field, ml, retention)
			}
		}
		p.Issuers[i].Verify.MaxLifetime = ml
	}
	return nil
}

// planVerify plans the verifier's options (crypto, limits, token_cache)
// and has verify check them with the issuers'.
func (f *file) planVerify(p *Plan, env func(string) (string, bool)) error {
	p.Verify = verify.Options{
		StandardCrypto: f.Crypto.StandardLibrary,
		CrossCheckRate: f.Crypto.CrossCheckRate, // verify refuses what is out of its bounds
		MaxTokenBytes:  int(deref(f.Limits.MaxTokenBytes)),
		TokenCache:     verify.TokenCacheOptions{MaxEntries: defaultTokenCache, MaxBytes: int64(deref(f.TokenCache.MaxBytes))},
	}
	if v, ok := env("JWKSVERIFY_STANDARD_CRYPTO"); ok {
		on, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("crypto.standard_library (from JWKSVERIFY_STANDARD_CRYPTO): %q is not a boolean such as 1 or 0", v)
		}
		p.Verify.StandardCrypto = p.Verify.StandardCrypto || on
	}
	if f.TokenCache.MaxEntries != nil {
		p.Verify.TokenCache.MaxEntries = *f.TokenCache.MaxEntries
	}
	check := p.Verify
	keys := map[string]string{"MaxTokenBytes": "limits.max_token_bytes", "TokenCache.MaxEntries": "token_cache.max_entries",
		"TokenCache.MaxBytes": "token_cache.max_bytes", "CrossCheckRate": "crypto.cross_check_rate"}
	for i, is := range p.Issuers {
		check.Issuers = append(check.Issuers, is.Verify)
		keys[fmt.Sprintf("Issuers[%d].Leeway", i)] = fmt.Sprintf("issuers[%d].leeway", i)
		keys[fmt.Sprintf("Issuers[%d].Audiences", i)] = fmt.Sprintf("issuers[%d].audiences", i)
	}
	if err := verify.CheckOptions(check); err != nil {
		return optionError("", err, keys)
	}
	return nil
}

// planClients plans the introspection clients (their secrets from the
// environment, unless ov.NoServerSecrets) and has server check its
// options.
func (f *file) planClients(p *Plan, ov Overrides, env func(string) (string, bool)) error {
	var clients []server.IntrospectionClient // what server.CheckOptions judges
	for i, cl := range f.Introspection.Clients {
		path := fmt.Sprintf("introspection.clients[%d]", i)
		if cl.SecretEnv == "" {
			return fmt.Errorf("%s.secret_env: empty; name the environment variable holding the client's secret", path)
		}
		if ov.NoServerSecrets {
			// The ids are still checked, with a stand-in secret that is
			// never kept in the plan.
			clients = append(clients, server.IntrospectionClient{ID: cl.ID, Secret: strings.Repeat("x", server.MinClientSecretBytes) + strconv.Itoa(i)})
			continue
		}
		secret, ok := env(cl.SecretEnv)
		if !ok || secret == "" {
			return fmt.Errorf("%s.secret_env: environment variable %s is not set", path, cl.SecretEnv)
		}
		clients = append(clients, server.IntrospectionClient{ID: cl.ID, Secret: secret})
	}
	checked := p.Server
	checked.IntrospectionClients = clients
	if !ov.NoServerSecrets {
		p.Server.IntrospectionClients = clients
	}
	if err := server.CheckOptions(checked, p.Verify.MaxTokenBytes); err != nil {
		return optionError("", err, map[string]string{
			"MaxBodyBytes": "limits.max_body_bytes", "MaxBatch": "batch.max_tokens",
			"RejectionLogRate": "log.rejections_per_second", "TokenSources": "token_sources",
			"IntrospectionClients": "introspection.clients", "ClientCert.Header": "mtls.client_cert_header",
			"ClientCert.XFCC": "mtls.xfcc",
		})
	}
	if p.Server.APIAuth && len(f.Introspection.Clients) == 0 && p.TLS.ClientCAFile == "" {
		return errors.New("api_auth.required: no caller could authenticate; configure introspection.clients or tls.client_ca_file")
	}
	return nil
}

// plan checks a tls, grpc_tls or admin_tls section; path is its key.
func (t fileTLS) plan(path string) (TLS, error) {
	ca := cmp.Or(t.ClientAuth, "none")
	if !slices.Contains([]string{"none", "request", "require"}, ca) {
		return TLS{}, fmt.Errorf("%s.client_auth: %q is not one of none, request, require", path, t.ClientAuth)
	}
	out := TLS{CertFile: t.CertFile, KeyFile: t.KeyFile, ClientCAFile: t.ClientCAFile, ClientAuth: ca}
	switch {
	case (t.CertFile == "") != (t.KeyFile == ""):
		return TLS{}, fmt.Errorf("%s: cert_file and key_file go together", path)
	// client_auth: none written out is the default (CONFIG.md's example
	// writes it); asking for client certificates needs TLS.
	case t.CertFile == "" && (t.ClientCAFile != "" || ca != "none"):
		return TLS{}, fmt.Errorf("%s: client_ca_file and client_auth need cert_file and key_file", path)
	case ca != "none" && t.ClientCAFile == "":
		return TLS{}, fmt.Errorf("%s.client_auth: %s needs client_ca_file to verify client certificates against", path, ca)
	case ca == "none" && t.ClientCAFile != "":
		return TLS{}, fmt.Errorf("%s.client_ca_file: set with client_auth none; set client_auth to request or require", path)
	}
	return out, nil
}

// planPolicies compiles policies, routes and default_policy (package policy
// names the field of every error), adds each policy's claims_to_headers
// claims to the claims its issuers extract, and plans resource_metadata.
func (f *file) planPolicies(p *Plan) error {
	if len(f.Policies) == 0 && len(f.Routes) == 0 && f.DefaultPolicy == "" {
		return f.planResourceMetadata(p)
	}
	if len(f.Routes) > 0 && p.Server.Proxy == request.None {
		return errors.New("routes: routes choose a policy by the original request: set forward_auth.proxy (one of " + strings.Join(request.Proxies(), ", ") + ")")
	}
	opts := policy.Options{DefaultPolicy: f.DefaultPolicy, Compiler: &celexpr.Compiler{}}
	for _, is := range p.Issuers {
		opts.Issuers = append(opts.Issuers, is.Verify.Issuer)
	}
	for _, fp := range f.Policies {
		sp := policy.Spec{Name: fp.Name, Issuers: fp.Issuers, Scopes: policy.Scopes{All: fp.Scopes.All, Any: fp.Scopes.Any},
			Expression: fp.Expression, AllowAnonymous: fp.AllowAnonymous, ClaimsToHeaders: fp.ClaimsToHeaders}
		for _, c := range fp.Claims {
			var equals any
			if c.Equals != nil {
				equals = c.Equals[0]
			}
			sp.Claims = append(sp.Claims, policy.Claim{Claim: c.Claim, AnyOf: matcherValues(c.AnyOf), Equals: equals})
		}
		opts.Policies = append(opts.Policies, sp)
	}
	for _, fr := range f.Routes {
		opts.Routes = append(opts.Routes, policy.Route{Methods: fr.Methods, Host: fr.Host, Path: fr.Path, Policy: fr.Policy})
	}
	set, err := policy.New(opts)
	if err != nil {
		// policy names the field of every error; its package prefix goes,
		// its sentinel stays.
		return &keyError{msg: strings.TrimPrefix(err.Error(), policy.ErrInvalid.Error()+": "), err: err}
	}
	for i, fp := range f.Policies {
		for claim, header := range fp.ClaimsToHeaders {
			if err := server.CheckClaimHeader(header); err != nil {
				return fmt.Errorf("policies[%d] (%s).claims_to_headers: claim %q: %w", i, fp.Name, claim, err)
			}
			for j := range p.Issuers {
				v := &p.Issuers[j].Verify
				if (len(fp.Issuers) == 0 || slices.Contains(fp.Issuers, v.Issuer)) && !slices.Contains(v.ExtractClaims, claim) {
					v.ExtractClaims = append(v.ExtractClaims, claim)
					slices.Sort(v.ExtractClaims)
				}
			}
		}
	}
	p.Server.Policies = set
	p.Verify.IndexClaims = set.ClaimNames()
	return f.planResourceMetadata(p)
}

// planResourceMetadata plans resource_metadata (server checks the URLs).
func (f *file) planResourceMetadata(p *Plan) error {
	rm := f.ResourceMeta
	if rm == nil {
		return nil
	}
	if rm.Resource == "" {
		return errors.New("resource_metadata.resource: empty; set the protected resource's URL (RFC 9728)")
	}
	p.Server.ResourceMetadata = &server.ResourceMetadata{Resource: rm.Resource, URL: rm.URL,
		AuthorizationServers: rm.AuthorizationServers, ScopesSupported: rm.ScopesSupported}
	return nil
}

// planSenders plans the sender constraints: each issuer's modes, the
// client certificate source, and the DPoP checker when an issuer asks for
// DPoP. The DPoP section is validated whether used or not.
func (f *file) planSenders(p *Plan) error {
	d := f.DPoP
	if d.Algorithms != nil && len(d.Algorithms) == 0 {
		return errors.New("dpop.algorithms: empty list; remove the key for the default")
	}
	plan := &DPoP{
		Checker:          dpop.Options{Algorithms: d.Algorithms, MaxAge: orDuration(d.MaxAge, dpop.DefaultMaxAge)},
		ReplayStore:      cmp.Or(d.ReplayStore, "memory"),
		MemoryMaxEntries: int(deref(d.ReplayMaxEntries)),
	}
	if err := dpop.CheckOptions(plan.Checker); err != nil {
		return optionError("dpop", err, map[string]string{"Algorithms": "dpop.algorithms", "MaxAge": "dpop.max_age"})
	}
	if err := replay.CheckMaxEntries(plan.MemoryMaxEntries); err != nil {
		return optionError("dpop", err, map[string]string{"MaxEntries": "dpop.replay_max_entries"})
	}
	switch plan.ReplayStore {
	case "memory":
		for _, k := range []struct {
			field string
			set   bool
		}{{"dpop.redis_url", d.RedisURL != ""}, {"dpop.redis_timeout", d.RedisTimeout != nil}, {"dpop.redis_pool_size", d.RedisPoolSize != nil}} {
			if k.set {
				return fmt.Errorf("%s: set, and dpop.replay_store is memory; set replay_store: redis", k.field)
			}
		}
	case "redis":
		if p.Redis == nil {
			return errors.New("dpop.replay_store: redis, and there is no redis section; set redis.url (or redis.sentinel, redis.cluster)")
		}
	default:
		return fmt.Errorf("dpop.replay_store: %q is not one of memory, redis", d.ReplayStore)
	}
	p.Server.ClientCert = server.ClientCertSource{Header: f.MTLS.ClientCertHeader, XFCC: f.MTLS.XFCC}
	for i, fi := range f.Issuers {
		var sc server.SenderConstraint
		var err error
		path := fmt.Sprintf("issuers[%d].sender_constraint", i)
		if sc.DPoP, err = server.ParseConstraintMode(fi.SenderConstraint.DPoP); err != nil {
			return fmt.Errorf("%s.dpop: %w", path, err)
		}
		if sc.MTLS, err = server.ParseConstraintMode(fi.SenderConstraint.MTLS); err != nil {
			return fmt.Errorf("%s.mtls: %w", path, err)
		}
		if sc == (server.SenderConstraint{}) {
			continue
		}
		if p.Server.SenderConstraints == nil {
			p.Server.SenderConstraints = map[string]server.SenderConstraint{}
		}
		p.Server.SenderConstraints[fi.Issuer] = sc
		if sc.DPoP != server.ConstraintOff {
			p.DPoP = plan
		}
	}
	return nil
}

// plan builds one issuer; path is its place in the file (issuers[0]).
func (fi *fileIssuer) plan(path string, f *file) (Issuer, error) {
	td, err := fi.planSPIFFE(path)
	if err != nil {
		return Issuer{}, err
	}
	if err := fi.checkSource(path); err != nil {
		return Issuer{}, err
	}
	r := fi.Refresh
	is := Issuer{
		JWKS: jwks.Options{
			Issuer: fi.Issuer, URL: fi.JWKSURL, Discovery: fi.Discovery, File: fi.JWKSFile,
			FetchTimeout: orDuration(r.FetchTimeout, 0), MinInterval: orDuration(r.MinInterval, 0),
			MaxInterval: orDuration(r.MaxInterval, 0), DefaultTTL: orDuration(r.DefaultTTL, 0),
			UnknownKidInterval: orDuration(r.UnknownKidInterval, 0), UnknownKidWait: orDuration(r.UnknownKidWait, 0),
			StaleFor: orDuration(r.StaleFor, 0),
			MaxBytes: int64(deref(f.Limits.MaxJWKSBytes)), MaxKeys: int(deref(f.Limits.MaxKeys)),
			StateDir: f.StateDir, InsecureAllowHTTP: fi.AllowInsecureHTTP,
			CAFile: fi.CAFile, BearerTokenFile: fi.FetchBearerTokenFile, DiscoveryURL: fi.DiscoveryURL,
			TrustDomain: td,
		},
		Verify: verify.Issuer{
			Issuer: fi.Issuer, Type: fi.Type, AllowHMAC: (fi.JWKSFile != "" || fi.SecretFile != "") && td == "",
			TrustDomain: td,
		},
	}
	if in := fi.Introspection; in != nil {
		if is.Introspection, err = fi.introspection(path+".introspection", in); err != nil {
			return Issuer{}, err
		}
	}
	if err := fi.planKeys(path, &is); err != nil {
		return Issuer{}, err
	}
	if err := fi.planClaims(path, &is); err != nil {
		return Issuer{}, err
	}
	if err := fi.planIDToken(path, &is); err != nil {
		return Issuer{}, err
	}
	if err := jwks.CheckOptions(is.JWKS); err != nil {
		r := path + ".refresh."
		return Issuer{}, optionError(path, err, map[string]string{
			"URL": path + ".jwks_url", "Issuer": path + ".issuer", "DiscoveryURL": path + ".discovery_url",
			"FetchTimeout": r + "fetch_timeout", "MinInterval": r + "min_interval", "MaxInterval": r + "max_interval",
			"DefaultTTL": r + "default_ttl", "UnknownKidInterval": r + "unknown_kid_interval",
			"UnknownKidWait": r + "unknown_kid_wait", "StaleFor": r + "stale_for",
			"MaxBytes": "limits.max_jwks_bytes", "MaxKeys": "limits.max_keys",
		})
	}
	return is, nil
}

// planSPIFFE plans a SPIFFE trust domain: its bundle is the key source,
// its name (spiffe://<td>) the issuer's unless issuer is set. It returns
// the trust domain's name, "" when the issuer is not one.
func (fi *fileIssuer) planSPIFFE(path string) (string, error) {
	sp := fi.SPIFFE
	if sp == nil {
		return "", nil
	}
	d, err := spiffeid.TrustDomainFromString(sp.TrustDomain)
	if err != nil {
		return "", fmt.Errorf("%s.spiffe.trust_domain: %w", path, err)
	}
	if (sp.BundleURL == "") == (sp.BundleFile == "") {
		return "", fmt.Errorf("%s.spiffe: exactly one of bundle_url and bundle_file is required", path)
	}
	if fi.Discovery || fi.JWKSURL != "" || fi.JWKSFile != "" || fi.SecretFile != "" || fi.Introspection != nil {
		return "", fmt.Errorf("%s.spiffe: the bundle is the key source; remove discovery, jwks_url, jwks_file, secret_file and introspection", path)
	}
	if len(fi.Audiences) == 0 {
		return "", fmt.Errorf("%s.audiences: required for a SPIFFE trust domain (a JWT-SVID must carry aud)", path)
	}
	if fi.Issuer == "" {
		fi.Issuer = d.IDString()
	}
	fi.JWKSURL, fi.JWKSFile = sp.BundleURL, sp.BundleFile
	return d.Name(), nil
}

// checkSource checks the issuer string and that the key source is one of
// discovery, jwks_url, jwks_file, secret_file; secret_file may also come
// with jwks_file (both local).
func (fi *fileIssuer) checkSource(path string) error {
	if strings.TrimSpace(fi.Issuer) == "" {
		return fmt.Errorf("%s.issuer: empty; set the exact iss value of the tokens", path)
	}
	if fi.Issuer != strings.TrimSpace(fi.Issuer) {
		return fmt.Errorf("%s.issuer: %q has leading or trailing spaces (iss is matched exactly)", path, fi.Issuer)
	}
	var sources []string
	for _, s := range []struct {
		name string
		set  bool
	}{{"discovery", fi.Discovery}, {"jwks_url", fi.JWKSURL != ""}, {"jwks_file", fi.JWKSFile != ""}, {"secret_file", fi.SecretFile != ""}} {
		if s.set {
			sources = append(sources, s.name)
		}
	}
	if len(sources) != 1 && (len(sources) != 2 || fi.JWKSFile == "" || fi.SecretFile == "") {
		got := "none is set"
		if len(sources) > 0 {
			got = "got " + strings.Join(sources, " and ")
		}
		return fmt.Errorf("%s: exactly one of discovery, jwks_url, jwks_file, secret_file is required (secret_file may also go with jwks_file); %s", path, got)
	}
	if fi.Discovery && strings.Contains(fi.Issuer, "{tenantid}") {
		return fmt.Errorf("%s.discovery: the issuer %q is a template; give its JWKS with jwks_url", path, fi.Issuer)
	}
	return nil
}

// planKeys plans the secret_file key and the algorithms, each allowed by
// verify and, for HMAC, by the secret's length.
func (fi *fileIssuer) planKeys(path string, is *Issuer) error {
	var secret *cache.Key
	var secretAlgs []string
	if fi.SecretFile != "" {
		var err error
		if secret, secretAlgs, err = SecretKey(fi.SecretFile, fi.SecretKid); err != nil {
			return fmt.Errorf("%s.secret_file: %w", path, err)
		}
		is.JWKS.StaticKeys = []*cache.Key{secret}
	} else if fi.SecretKid != "" {
		return fmt.Errorf("%s.secret_kid: set without secret_file", path)
	}
	if fi.Algorithms != nil && len(fi.Algorithms) == 0 {
		return fmt.Errorf("%s.algorithms: empty list; remove the key for the default", path)
	}
	for i, a := range fi.Algorithms {
		q := fmt.Sprintf("%s.algorithms[%d]", path, i)
		if err := verify.CheckAlgorithm(a); err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
		if verify.MinHMACBytes(a) > 0 && !is.Verify.AllowHMAC {
			return fmt.Errorf("%s: %s needs a local key (secret_file or jwks_file); remote key sets never provide HMAC keys", q, a)
		}
		if err := CheckSecretAlgorithm(a, secret); err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
	}
	is.Verify.Algorithms = fi.Algorithms
	if fi.Algorithms == nil && fi.JWKSFile == "" && secret != nil {
		is.Verify.Algorithms = secretAlgs
	}
	return nil
}

// planIDToken plans id_token: the client IDs (at least one, none empty)
// and the azp mode (verify.CheckAZPMode).
func (fi *fileIssuer) planIDToken(path string, is *Issuer) error {
	it := fi.IDToken
	if it == nil {
		return nil
	}
	if len(it.ClientIDs) == 0 {
		return fmt.Errorf("%s.id_token.client_ids: at least one client ID is required (remove id_token to refuse ID tokens)", path)
	}
	for i, c := range it.ClientIDs {
		if strings.TrimSpace(c) == "" || c != strings.TrimSpace(c) {
			return fmt.Errorf("%s.id_token.client_ids[%d]: %q is empty or has leading or trailing spaces (aud is matched exactly)", path, i, c)
		}
	}
	if err := verify.CheckAZPMode(verify.AZPMode(it.AZP)); err != nil {
		return fmt.Errorf("%s.id_token.azp: %w", path, err)
	}
	is.Verify.IDToken = verify.IDTokenPolicy{ClientIDs: it.ClientIDs, AZP: verify.AZPMode(it.AZP)}
	return nil
}

// planClaims plans the claim checks: audiences, leeway, required_claims,
// and the claims claims_to_headers extracts.
func (fi *fileIssuer) planClaims(path string, is *Issuer) error {
	if len(fi.Audiences) > 0 { // an empty list, like an absent one, means no aud check
		is.Verify.Audiences = fi.Audiences
	}
	if fi.Leeway != nil {
		d := time.Duration(*fi.Leeway)
		if d < 0 {
			return fmt.Errorf("%s.leeway: %s is negative; 0s means none", path, d)
		}
		is.Verify.Leeway = cmp.Or(d, -1) // verify: zero is the default, negative none; verify checks the maximum
	}
	if fi.RequiredClaims != nil {
		is.Verify.RequiredClaims = append([]string{}, *fi.RequiredClaims...) // [] requires nothing
	}
	for claim, h := range fi.ClaimsToHeaders {
		if err := server.CheckClaimHeader(h); err != nil {
			return fmt.Errorf("%s.claims_to_headers.%s: %w", path, claim, err)
		}
		is.Verify.ExtractClaims = append(is.Verify.ExtractClaims, claim)
	}
	slices.Sort(is.Verify.ExtractClaims)
	return nil
}

// introspection builds the issuer's introspection client options.
func (fi *fileIssuer) introspection(path string, in *fileIssuerIntrospection) (*introspect.Options, error) {
	if in.URL == "" && !fi.Discovery {
		return nil, fmt.Errorf("%s.url: empty and discovery is off; set url, or discovery: true for the discovered introspection_endpoint", path)
	}
	if in.ClientSecretFile != "" {
		if _, err := os.Stat(in.ClientSecretFile); err != nil {
			return nil, fmt.Errorf("%s.client_secret_file: %w", path, err)
		}
	}
	c := in.Cache
	o := &introspect.Options{
		Issuer: fi.Issuer, URL: in.URL, ClientID: in.ClientID, ClientSecretFile: in.ClientSecretFile,
		CAFile: fi.CAFile, InsecureAllowHTTP: fi.AllowInsecureHTTP,
		MaxTTL: orDuration(c.MaxTTL, 0), NegativeTTL: orDuration(c.NegativeTTL, 0), StaleFor: orDuration(c.StaleFor, 0),
		MaxEntries:    int(deref(c.MaxEntries)),
		MaxConcurrent: int(deref(in.MaxConcurrent)), MaxWait: orDuration(in.MaxWait, 0),
		SharedCache: c.Shared, SharedKeyFile: c.KeyFile,
	}
	if c.KeyFile != "" {
		if _, err := os.Stat(c.KeyFile); err != nil {
			return nil, fmt.Errorf("%s.cache.key_file: %w", path, err)
		}
	}
	check := *o
	if check.URL == "" {
		check.Endpoint = func() string { return "" } // the command's: the fetcher's discovered endpoint
	}
	if err := introspect.CheckOptions(check); err != nil {
		return nil, optionError(path, err, map[string]string{
			"URL": path + ".url", "MaxTTL": path + ".cache.max_ttl", "NegativeTTL": path + ".cache.negative_ttl",
			"StaleFor": path + ".cache.stale_for", "MaxEntries": path + ".cache.max_entries",
			"MaxConcurrent": path + ".max_concurrent", "MaxWait": path + ".max_wait",
			"ClientID": path + ".client_id", "ClientSecretFile": path + ".client_secret_file",
			"SharedKeyFile": path + ".cache.key_file",
		})
	}
	return o, nil
}

// SecretKey reads the HMAC secret file at path (its raw bytes, at least the
// shortest HMAC key, verify.MinHMACBytes of HS256, and at most
// MaxSecretBytes) as a local signing key named kid. It returns the key with
// the HMAC algorithms the secret is long enough for, in verify's order: the
// allowlist of an issuer whose only key it is.
func SecretKey(path, kid string) (*cache.Key, []string, error) {
	secret, err := readRegular(path, MaxSecretBytes)
	if err != nil {
		return nil, nil, err
	}
	if min := verify.MinHMACBytes("HS256"); len(secret) < min {
		return nil, nil, fmt.Errorf("%s holds %d bytes; an HMAC secret must be at least %d bytes (RFC 7518 §3.2: at least the hash size), refusing it", path, len(secret), min)
	}
	k, err := cache.NewKey(secret, cache.KeyMeta{Kid: kid, Local: true, Use: "sig"})
	if err != nil {
		return nil, nil, err
	}
	if err := verify.CheckHMACKey(k); err != nil { // a public key put where the secret was meant to go
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	var algs []string
	for _, a := range verify.Algorithms() {
		if min := verify.MinHMACBytes(a); min > 0 && len(secret) >= min {
			algs = append(algs, a)
		}
	}
	return k, algs, nil
}

// CheckSecretAlgorithm reports whether the HMAC secret k (nil: none) is long
// enough for alg (verify.MinHMACBytes).
func CheckSecretAlgorithm(alg string, k *cache.Key) error {
	if min := verify.MinHMACBytes(alg); k != nil && k.Size/8 < min {
		return fmt.Errorf("%s needs a secret of at least %d bytes (RFC 7518 §3.2); the secret holds %d", alg, min, k.Size/8)
	}
	return nil
}

// ReadFile reads the file at path, refusing one larger than limit bytes:
// the configuration, or a command's input, which may be a named pipe
// (--config <(…)); one without a writer, as at a reload, reads as empty
// rather than blocking. A secret or key file must be a regular file (readRegular).
func ReadFile(path string, limit int64) ([]byte, error) {
	return fileread.Any(path, limit)
}

// readRegular reads the regular file at path, refusing one larger than
// limit bytes, and anything that is not a regular file (a named pipe,
// whose open would block a load or a reload until a writer comes).
func readRegular(path string, limit int64) ([]byte, error) {
	b, _, err := fileread.Regular(path, limit)
	return b, err
}

// checkListen accepts host:port with a port written in plain decimal (0 =
// any free port). net.Listen also reads 08080 and +8080 as 8080: the
// listeners are told apart by their text, and proxy-config refuses any
// other spelling.
func checkListen(addr string) error {
	if addr == "" {
		return errors.New("empty address; want host:port such as 127.0.0.1:8080")
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%q is not host:port: %w", addr, err)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 || strconv.Itoa(n) != port {
		return fmt.Errorf("%q: port %q is not a number in [0, 65535] written in decimal", addr, port)
	}
	if strings.ContainsAny(host, " /") {
		return fmt.Errorf("%q: bad host %q", addr, host)
	}
	return nil
}

func between(field string, d, lo, hi time.Duration) error {
	if d < lo || d > hi {
		return fmt.Errorf("%s: %s is out of range [%s, %s]", field, d, lo, hi)
	}
	return nil
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// optionError names the YAML key of err, a library's refusal (its
// OptionError) of options planned from the section at path: keys maps the
// option's field to its key, and a field "Name[i]" of keys' "Name" keeps
// its index. A refusal of no field of keys is kept whole, after path. The
// error matches err's sentinel (jwks.ErrInvalidOptions, ...) with
// errors.Is.
func optionError(path string, err error, keys map[string]string) error {
	field, reason, ok := optionField(err)
	if !ok {
		return fmt.Errorf("%s: %w", cmp.Or(path, "configuration"), err)
	}
	if key, ok := keys[field]; ok {
		return &keyError{key: key, msg: reason.Error(), err: err}
	}
	if name, index, ok := strings.Cut(field, "["); ok && keys[name] != "" {
		return &keyError{key: keys[name] + "[" + index, msg: reason.Error(), err: err}
	}
	msg := reason.Error()
	if field != "" {
		msg = field + ": " + msg
	}
	return &keyError{key: cmp.Or(path, "configuration"), msg: msg, err: err}
}

// optionField returns the field and the reason of a library's OptionError.
func optionField(err error) (field string, reason error, ok bool) {
	var (
		je *jwks.OptionError
		ve *verify.OptionError
		ie *introspect.OptionError
		de *dpop.OptionError
		re *replay.OptionError
		ce *redisconn.OptionError
		se *server.OptionError
		ge *signals.OptionError
		me *mint.OptionError
	)
	switch {
	case errors.As(err, &je):
		return je.Field, je.Err, true
	case errors.As(err, &ve):
		return ve.Field, ve.Err, true
	case errors.As(err, &ie):
		return ie.Field, ie.Err, true
	case errors.As(err, &de):
		return de.Field, de.Err, true
	case errors.As(err, &re):
		return re.Field, re.Err, true
	case errors.As(err, &ce):
		return ce.Field, ce.Err, true
	case errors.As(err, &se):
		return se.Field, se.Err, true
	case errors.As(err, &ge):
		return ge.Field, ge.Err, true
	case errors.As(err, &me):
		return me.Field, me.Err, true
	}
	return "", nil, false
}

// keyError is an error of the file named by its key: its message is the
// key and msg, and it matches err (the library's refusal, with its
// sentinel) with errors.Is and errors.As.
type keyError struct {
	key, msg string
	err      error
}

func (e *keyError) Error() string {
	if e.key == "" {
		return e.msg
	}
	return e.key + ": " + e.msg
}

func (e *keyError) Unwrap() error { return e.err }

func orDuration[D duration | span](d *D, def time.Duration) time.Duration {
	if d == nil {
		return def
	}
	return time.Duration(*d)
}
