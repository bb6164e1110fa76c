package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
	"golang.org/x/net/http/httpguts"
)

// errConfig marks configuration errors: the CLI exits 2 on them.
var errConfig = errors.New("configuration error")

// Production defaults (SPEC.md "Configuration": the example values are the defaults).
const (
	defaultListen             = "127.0.0.1:8080"
	defaultShutdownTimeout    = 15 * time.Second
	defaultShutdownDelay      = 0
	defaultFetchTimeout       = 10 * time.Second
	defaultMinInterval        = time.Minute
	defaultMaxInterval        = 24 * time.Hour
	defaultTTL                = 15 * time.Minute
	defaultUnknownKidInterval = 30 * time.Second
	defaultStaleFor           = 24 * time.Hour
	defaultLeeway             = 30 * time.Second
	defaultTokenCacheEntries  = 100000
	defaultMaxTokenBytes      = 16384
	defaultMaxBodyBytes       = 65536
	defaultMaxJWKSBytes       = 1 << 20
	defaultMaxKeys            = 100
	defaultMaxBatch           = 100
	defaultLogLevel           = "info"
	defaultLogFormat          = "json"
	defaultLogRejections      = 20

	// maxConfigBytes bounds the configuration file.
	maxConfigBytes = 1 << 20
	// minSecretBytes is the shortest HMAC secret accepted: the output size of
	// SHA-256, the smallest HS* hash (RFC 7518 §3.2).
	minSecretBytes = 32
	// maxSecretBytes bounds a secret file.
	maxSecretBytes = 4096
	// minIntrospectionSecret is the shortest introspection client secret.
	minIntrospectionSecret = 16
	// minInterval is the smallest value any interval accepts (SPEC: down to 1s).
	minInterval = time.Second
	// maxShutdownDelay bounds shutdown_delay: long enough for any load
	// balancer's health check to notice, short enough not to stall a deploy.
	maxShutdownDelay = time.Minute
)

// algorithms are the JWS algorithms jwksverify verifies, with the minimum HMAC
// key size in bytes for HS* (the hash output size, RFC 7518 §3.2).
var algorithms = map[string]int{
	"HS256": 32, "HS384": 48, "HS512": 64,
	"RS256": 0, "RS384": 0, "RS512": 0,
	"PS256": 0, "PS384": 0, "PS512": 0,
	"ES256": 0, "ES384": 0, "ES512": 0,
	"EdDSA": 0,
}

// asymmetricAlgorithms lists the non-HMAC algorithms in a stable order.
var asymmetricAlgorithms = []string{
	"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA",
}

// Duration is a Go duration string in the YAML file ("30s", "1h30m"). It
// remembers whether the key was present, so that an explicit "0s" can differ
// from an absent key.
type Duration struct {
	D   time.Duration
	Set bool
}

// UnmarshalYAML reads a Go duration string.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("want a duration such as 30s, got a %s", kindName(n.Kind))
	}
	v, err := time.ParseDuration(n.Value)
	if err != nil {
		return fmt.Errorf("invalid duration %q (use Go duration strings such as 30s, 15m, 24h)", n.Value)
	}
	d.D, d.Set = v, true
	return nil
}

// MarshalYAML writes the duration back as a string (used by docs tests).
func (d Duration) MarshalYAML() (any, error) { return d.D.String(), nil }

// or returns the duration, or def when the key was absent.
func (d Duration) or(def time.Duration) time.Duration {
	if !d.Set {
		return def
	}
	return d.D
}

// fileConfig is the YAML configuration file exactly as written. Pointer and
// Duration fields distinguish "absent" (take the default) from an explicit
// zero. Defaults are applied in one place: [fileConfig.resolve].
type fileConfig struct {
	Listen          *string           `yaml:"listen"`
	GRPCListen      *string           `yaml:"grpc_listen"`
	ShutdownTimeout Duration          `yaml:"shutdown_timeout"`
	ShutdownDelay   Duration          `yaml:"shutdown_delay"`
	Issuers         []fileIssuer      `yaml:"issuers"`
	TokenCache      fileTokenCache    `yaml:"token_cache"`
	TokenSources    []fileTokenSource `yaml:"token_sources"`
	ForwardAuth     fileForwardAuth   `yaml:"forward_auth"`
	StateDir        string            `yaml:"state_dir"`
	Log             fileLog           `yaml:"log"`
	Introspection   fileIntrospection `yaml:"introspection"`
	Limits          fileLimits        `yaml:"limits"`
	Batch           fileBatch         `yaml:"batch"`
}

type fileIssuer struct {
	Issuer            string            `yaml:"issuer"`
	Discovery         bool              `yaml:"discovery"`
	JWKSURL           string            `yaml:"jwks_url"`
	JWKSFile          string            `yaml:"jwks_file"`
	SecretFile        string            `yaml:"secret_file"`
	SecretKid         string            `yaml:"secret_kid"`
	AllowInsecureHTTP bool              `yaml:"allow_insecure_http"`
	Audiences         []string          `yaml:"audiences"`
	Algorithms        []string          `yaml:"algorithms"`
	Leeway            Duration          `yaml:"leeway"`
	RequiredClaims    *[]string         `yaml:"required_claims"`
	Type              string            `yaml:"type"`
	ClaimsToHeaders   map[string]string `yaml:"claims_to_headers"`
	Refresh           fileRefresh       `yaml:"refresh"`
}

type fileRefresh struct {
	MinInterval        Duration `yaml:"min_interval"`
	MaxInterval        Duration `yaml:"max_interval"`
	DefaultTTL         Duration `yaml:"default_ttl"`
	UnknownKidInterval Duration `yaml:"unknown_kid_interval"`
	UnknownKidWait     Duration `yaml:"unknown_kid_wait"`
	StaleFor           Duration `yaml:"stale_for"`
	FetchTimeout       Duration `yaml:"fetch_timeout"`
}

type fileTokenCache struct {
	MaxEntries *int   `yaml:"max_entries"`
	MaxBytes   *int64 `yaml:"max_bytes"`
}

type fileTokenSource struct {
	Header string `yaml:"header"`
	Prefix string `yaml:"prefix"`
	Cookie string `yaml:"cookie"`
	Query  string `yaml:"query"`
}

type fileForwardAuth struct {
	StripAuthorization bool `yaml:"strip_authorization"`
}

type fileLog struct {
	Level               string `yaml:"level"`
	Format              string `yaml:"format"`
	RejectionsPerSecond *int   `yaml:"rejections_per_second"`
}

type fileIntrospection struct {
	Clients []fileIntrospectionClient `yaml:"clients"`
}

type fileIntrospectionClient struct {
	ID        string `yaml:"id"`
	SecretEnv string `yaml:"secret_env"`
}

type fileLimits struct {
	MaxTokenBytes *int   `yaml:"max_token_bytes"`
	MaxBodyBytes  *int64 `yaml:"max_body_bytes"`
	MaxJWKSBytes  *int64 `yaml:"max_jwks_bytes"`
	MaxKeys       *int   `yaml:"max_keys"`
}

type fileBatch struct {
	MaxTokens *int `yaml:"max_tokens"`
}

// config is the resolved configuration: defaults applied, validated, secrets
// read. Nothing in it is "absent".
type config struct {
	Listen          string
	GRPCListen      string // "" = off
	ShutdownTimeout time.Duration
	ShutdownDelay   time.Duration // reported not ready before the drain starts
	Issuers         []issuerConfig
	TokenCacheMax   int
	TokenCacheBytes int64 // 0 = the verifier's default
	TokenSources    []fileTokenSource
	StripAuth       bool
	StateDir        string
	LogLevel        string
	LogFormat       string
	LogRejections   int // "token rejected" lines per second; 0 = no limit
	Introspection   []introspectionClient
	MaxTokenBytes   int
	MaxBodyBytes    int64
	MaxJWKSBytes    int64
	MaxKeys         int
	MaxBatch        int
}

type issuerConfig struct {
	Issuer            string
	Discovery         bool
	JWKSURL           string
	JWKSFile          string
	SecretFile        string
	Secret            []byte // contents of SecretFile; never logged
	SecretKid         string
	AllowInsecureHTTP bool
	Audiences         []string
	Algorithms        []string // nil = the verifier's default
	Leeway            time.Duration
	RequiredClaims    []string
	Type              string
	ClaimsToHeaders   map[string]string
	FetchTimeout      time.Duration
	MinInterval       time.Duration
	MaxInterval       time.Duration
	DefaultTTL        time.Duration
	UnknownKidIntvl   time.Duration
	UnknownKidWait    time.Duration // 0 = jwks.DefaultUnknownKidWait
	StaleFor          time.Duration
}

type introspectionClient struct {
	ID, Secret string
}

// overrides are the values given by flag or environment; "" = not given.
// Flags win over the environment, the environment over the file.
type overrides struct {
	Listen, GRPCListen, LogLevel string
	// set records which were given (so that an explicit empty grpc-listen
	// can turn gRPC off).
	ListenSet, GRPCListenSet, LogLevelSet bool
	// NoServerSecrets skips reading the introspection clients' secrets from
	// the environment: `verify --config` checks tokens against the issuers
	// and never serves /introspect.
	NoServerSecrets bool
}

// envOverrides reads JWKSVERIFY_LISTEN, JWKSVERIFY_GRPC_LISTEN and
// JWKSVERIFY_LOG_LEVEL through lookup, and lets flag values (when set) win.
func envOverrides(lookup func(string) (string, bool), flags overrides) overrides {
	o := overrides{}
	if v, ok := lookup("JWKSVERIFY_LISTEN"); ok {
		o.Listen, o.ListenSet = v, true
	}
	if v, ok := lookup("JWKSVERIFY_GRPC_LISTEN"); ok {
		o.GRPCListen, o.GRPCListenSet = v, true
	}
	if v, ok := lookup("JWKSVERIFY_LOG_LEVEL"); ok {
		o.LogLevel, o.LogLevelSet = v, true
	}
	if flags.ListenSet {
		o.Listen, o.ListenSet = flags.Listen, true
	}
	if flags.GRPCListenSet {
		o.GRPCListen, o.GRPCListenSet = flags.GRPCListen, true
	}
	if flags.LogLevelSet {
		o.LogLevel, o.LogLevelSet = flags.LogLevel, true
	}
	return o
}

// loadConfigFile reads, parses and validates the configuration file at path.
// Every error wraps errConfig and names the file and the offending field.
func loadConfigFile(path string, ov overrides, lookupEnv func(string) (string, bool)) (*config, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errConfig, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxConfigBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", errConfig, path, err)
	}
	if len(data) > maxConfigBytes {
		return nil, fmt.Errorf("%w: %s: larger than %d bytes", errConfig, path, maxConfigBytes)
	}
	fc, err := parseConfig(data)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", errConfig, path, err)
	}
	fc.relativeTo(filepath.Dir(path))
	cfg, err := fc.resolve(ov, lookupEnv)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", errConfig, path, err)
	}
	return cfg, nil
}

// relativeTo resolves the relative file paths of the configuration
// (jwks_file, secret_file, state_dir) against dir, the directory of the
// configuration file.
func (fc *fileConfig) relativeTo(dir string) {
	abs := func(p string) string {
		if p == "" || filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(dir, p)
	}
	fc.StateDir = abs(fc.StateDir)
	for i := range fc.Issuers {
		fc.Issuers[i].JWKSFile = abs(fc.Issuers[i].JWKSFile)
		fc.Issuers[i].SecretFile = abs(fc.Issuers[i].SecretFile)
	}
}

// parseConfig decodes one YAML document. Unknown keys and values of the wrong
// type are reported with their field path (issuers[0].refresh.min_intervall).
func parseConfig(data []byte) (*fileConfig, error) {
	var root yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&root); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("empty configuration")
		}
		return nil, err
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, errors.New("more than one YAML document")
	}
	doc := &root
	if doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 {
		doc = doc.Content[0]
	}
	if doc.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("line %d: the configuration must be a mapping of keys", doc.Line)
	}
	if err := checkNode(doc, reflect.TypeFor[fileConfig](), ""); err != nil {
		return nil, err
	}
	// The path check above reports the first problem by name; the strict
	// decode is the backstop that refuses anything it let through.
	var fc fileConfig
	strict := yaml.NewDecoder(bytes.NewReader(data))
	strict.KnownFields(true)
	if err := strict.Decode(&fc); err != nil {
		return nil, err
	}
	return &fc, nil
}

func kindName(k yaml.Kind) string {
	switch k {
	case yaml.MappingNode:
		return "mapping"
	case yaml.SequenceNode:
		return "list"
	case yaml.ScalarNode:
		return "scalar"
	case yaml.AliasNode:
		return "alias"
	}
	return "document"
}

var durationType = reflect.TypeFor[Duration]()

// checkNode walks n against the Go type t, reporting unknown keys and values
// that do not decode, with their path.
func checkNode(n *yaml.Node, t reflect.Type, path string) error {
	if n.Kind == yaml.AliasNode {
		return fmt.Errorf("%s: line %d: YAML aliases are not supported", orRoot(path), n.Line)
	}
	for t.Kind() == reflect.Pointer && t != durationType {
		t = t.Elem()
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return nil // an explicit null leaves the default
	}
	switch {
	case t == durationType:
		var d Duration
		if err := d.UnmarshalYAML(n); err != nil {
			return fmt.Errorf("%s: line %d: %w", path, n.Line, err)
		}
		return nil
	case t.Kind() == reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return fmt.Errorf("%s: line %d: want a mapping, got a %s", orRoot(path), n.Line, kindName(n.Kind))
		}
		fields := map[string]reflect.Type{}
		for i := range t.NumField() {
			f := t.Field(i)
			if name := yamlName(f); name != "" {
				fields[name] = f.Type
			}
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			p := join(path, k.Value)
			ft, ok := fields[k.Value]
			if !ok {
				return fmt.Errorf("%s: line %d: unknown key %q", p, k.Line, k.Value)
			}
			if err := checkNode(v, ft, p); err != nil {
				return err
			}
		}
		return nil
	case t.Kind() == reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			return fmt.Errorf("%s: line %d: want a list, got a %s", path, n.Line, kindName(n.Kind))
		}
		for i, c := range n.Content {
			if err := checkNode(c, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
		return nil
	case t.Kind() == reflect.Map:
		if n.Kind != yaml.MappingNode {
			return fmt.Errorf("%s: line %d: want a mapping, got a %s", path, n.Line, kindName(n.Kind))
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if err := checkNode(v, t.Elem(), join(path, k.Value)); err != nil {
				return err
			}
		}
		return nil
	default:
		if n.Kind != yaml.ScalarNode {
			return fmt.Errorf("%s: line %d: want a %s, got a %s", path, n.Line, scalarName(t), kindName(n.Kind))
		}
		if err := n.Decode(reflect.New(t).Interface()); err != nil {
			return fmt.Errorf("%s: line %d: want a %s, got %q", path, n.Line, scalarName(t), n.Value)
		}
		return nil
	}
}

func scalarName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Bool:
		return "boolean (true or false)"
	case reflect.Int, reflect.Int64:
		return "whole number"
	}
	return "string"
}

func yamlName(f reflect.StructField) string {
	tag := f.Tag.Get("yaml")
	name, _, _ := strings.Cut(tag, ",")
	if name == "-" {
		return ""
	}
	return name
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func orRoot(path string) string {
	if path == "" {
		return "(top level)"
	}
	return path
}

// resolve applies the defaults and the overrides, validates every field, and
// reads the secrets (secret files, introspection secrets from the
// environment through lookupEnv). It is the one place defaults are applied.
func (fc *fileConfig) resolve(ov overrides, lookupEnv func(string) (string, bool)) (*config, error) {
	c := &config{
		Listen:          defaultListen,
		ShutdownTimeout: fc.ShutdownTimeout.or(defaultShutdownTimeout),
		ShutdownDelay:   fc.ShutdownDelay.or(defaultShutdownDelay),
		TokenCacheMax:   derefOr(fc.TokenCache.MaxEntries, defaultTokenCacheEntries),
		TokenCacheBytes: derefOr(fc.TokenCache.MaxBytes, 0),
		StripAuth:       fc.ForwardAuth.StripAuthorization,
		StateDir:        fc.StateDir,
		LogLevel:        orDefault(fc.Log.Level, defaultLogLevel),
		LogFormat:       orDefault(fc.Log.Format, defaultLogFormat),
		LogRejections:   defaultLogRejections,
		MaxTokenBytes:   derefOr(fc.Limits.MaxTokenBytes, defaultMaxTokenBytes),
		MaxBodyBytes:    derefOr(fc.Limits.MaxBodyBytes, defaultMaxBodyBytes),
		MaxJWKSBytes:    derefOr(fc.Limits.MaxJWKSBytes, defaultMaxJWKSBytes),
		MaxKeys:         derefOr(fc.Limits.MaxKeys, defaultMaxKeys),
		MaxBatch:        derefOr(fc.Batch.MaxTokens, defaultMaxBatch),
	}
	if fc.Listen != nil && *fc.Listen != "" {
		c.Listen = *fc.Listen
	}
	if fc.GRPCListen != nil {
		c.GRPCListen = *fc.GRPCListen
	}
	listenField, grpcField, levelField := "listen", "grpc_listen", "log.level"
	if ov.ListenSet {
		c.Listen, listenField = ov.Listen, "listen (from --listen or JWKSVERIFY_LISTEN)"
	}
	if ov.GRPCListenSet {
		c.GRPCListen, grpcField = ov.GRPCListen, "grpc_listen (from --grpc-listen or JWKSVERIFY_GRPC_LISTEN)"
	}
	if ov.LogLevelSet {
		c.LogLevel, levelField = ov.LogLevel, "log.level (from --log-level or JWKSVERIFY_LOG_LEVEL)"
	}

	if err := checkListen(c.Listen); err != nil {
		return nil, fmt.Errorf("%s: %w", listenField, err)
	}
	if c.GRPCListen != "" {
		if err := checkListen(c.GRPCListen); err != nil {
			return nil, fmt.Errorf("%s: %w", grpcField, err)
		}
		if _, port, _ := net.SplitHostPort(c.GRPCListen); c.GRPCListen == c.Listen && port != "0" {
			return nil, fmt.Errorf("%s: %q is also the HTTP listen address", grpcField, c.GRPCListen)
		}
	}
	if err := between(c.ShutdownTimeout, time.Second, 10*time.Minute); err != nil {
		return nil, fmt.Errorf("shutdown_timeout: %w", err)
	}
	if err := between(c.ShutdownDelay, 0, maxShutdownDelay); err != nil {
		return nil, fmt.Errorf("shutdown_delay: %w", err)
	}
	if len(fc.Issuers) == 0 {
		return nil, errors.New("issuers: at least one issuer is required")
	}
	seen := map[string]int{}
	for i := range fc.Issuers {
		fi := &fc.Issuers[i]
		p := fmt.Sprintf("issuers[%d]", i)
		if j, dup := seen[fi.Issuer]; dup && fi.Issuer != "" {
			return nil, fmt.Errorf("%s.issuer: %q is already configured by issuers[%d]", p, fi.Issuer, j)
		}
		seen[fi.Issuer] = i
		ic, err := resolveIssuer(fi, p)
		if err != nil {
			return nil, err
		}
		c.Issuers = append(c.Issuers, ic)
	}

	if c.TokenCacheMax < 0 || c.TokenCacheMax > 10_000_000 {
		return nil, fmt.Errorf("token_cache.max_entries: %d is out of range [0, 10000000] (0 turns the cache off)", c.TokenCacheMax)
	}
	if c.TokenCacheBytes < 0 {
		return nil, fmt.Errorf("token_cache.max_bytes: %d is negative", c.TokenCacheBytes)
	}

	if fc.TokenSources == nil {
		c.TokenSources = []fileTokenSource{{Header: "Authorization", Prefix: "Bearer "}}
	} else {
		if len(fc.TokenSources) == 0 {
			return nil, errors.New("token_sources: empty list; remove the key for the default (Authorization: Bearer)")
		}
		for i, s := range fc.TokenSources {
			if err := checkTokenSource(s); err != nil {
				return nil, fmt.Errorf("token_sources[%d]: %w", i, err)
			}
		}
		c.TokenSources = fc.TokenSources
	}

	if c.StateDir != "" {
		// Created (0700) by the fetchers when missing; what exists must be
		// a directory.
		st, err := os.Stat(c.StateDir)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return nil, fmt.Errorf("state_dir: %w", err)
		case !st.IsDir():
			return nil, fmt.Errorf("state_dir: %s is not a directory", c.StateDir)
		}
	}

	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		return nil, fmt.Errorf("%s: %q is not one of debug, info, warn, error", levelField, c.LogLevel)
	}
	switch c.LogFormat {
	case "json", "text":
	default:
		return nil, fmt.Errorf("log.format: %q is not one of json, text", c.LogFormat)
	}
	if r := fc.Log.RejectionsPerSecond; r != nil {
		if *r < 0 || *r > 100000 {
			return nil, fmt.Errorf("log.rejections_per_second: %d is out of bounds [0, 100000] (0 = no limit)", *r)
		}
		c.LogRejections = *r
	}

	ids := map[string]bool{}
	for i, cl := range fc.Introspection.Clients {
		p := fmt.Sprintf("introspection.clients[%d]", i)
		if cl.ID == "" {
			return nil, fmt.Errorf("%s.id: empty", p)
		}
		if strings.ContainsAny(cl.ID, ":\r\n") {
			return nil, fmt.Errorf("%s.id: %q must not contain ':' (HTTP Basic) or line breaks", p, cl.ID)
		}
		if ids[cl.ID] {
			return nil, fmt.Errorf("%s.id: %q is listed twice", p, cl.ID)
		}
		ids[cl.ID] = true
		if cl.SecretEnv == "" {
			return nil, fmt.Errorf("%s.secret_env: empty; name the environment variable holding the client's secret", p)
		}
		if ov.NoServerSecrets {
			continue
		}
		secret, ok := lookupEnv(cl.SecretEnv)
		if !ok || secret == "" {
			return nil, fmt.Errorf("%s.secret_env: environment variable %s is not set", p, cl.SecretEnv)
		}
		if len(secret) < minIntrospectionSecret {
			return nil, fmt.Errorf("%s.secret_env: the secret in %s is shorter than %d bytes", p, cl.SecretEnv, minIntrospectionSecret)
		}
		c.Introspection = append(c.Introspection, introspectionClient{ID: cl.ID, Secret: secret})
	}

	if c.MaxTokenBytes < 64 || c.MaxTokenBytes > 1<<20 {
		return nil, fmt.Errorf("limits.max_token_bytes: %d is out of range [64, 1048576]", c.MaxTokenBytes)
	}
	if c.MaxBodyBytes < int64(c.MaxTokenBytes) || c.MaxBodyBytes > 64<<20 {
		return nil, fmt.Errorf("limits.max_body_bytes: %d is out of range [max_token_bytes (%d), 67108864]", c.MaxBodyBytes, c.MaxTokenBytes)
	}
	if c.MaxJWKSBytes < 1024 || c.MaxJWKSBytes > 64<<20 {
		return nil, fmt.Errorf("limits.max_jwks_bytes: %d is out of range [1024, 67108864]", c.MaxJWKSBytes)
	}
	if c.MaxKeys < 1 || c.MaxKeys > 10000 {
		return nil, fmt.Errorf("limits.max_keys: %d is out of range [1, 10000]", c.MaxKeys)
	}
	if c.MaxBatch < 1 || c.MaxBatch > 10000 {
		return nil, fmt.Errorf("batch.max_tokens: %d is out of range [1, 10000]", c.MaxBatch)
	}
	return c, nil
}

func resolveIssuer(fi *fileIssuer, p string) (issuerConfig, error) {
	r := fi.Refresh
	ic := issuerConfig{
		Issuer:            fi.Issuer,
		Discovery:         fi.Discovery,
		JWKSURL:           fi.JWKSURL,
		JWKSFile:          fi.JWKSFile,
		SecretFile:        fi.SecretFile,
		SecretKid:         fi.SecretKid,
		AllowInsecureHTTP: fi.AllowInsecureHTTP,
		Audiences:         fi.Audiences,
		Type:              fi.Type,
		ClaimsToHeaders:   fi.ClaimsToHeaders,
		Leeway:            fi.Leeway.or(defaultLeeway),
		RequiredClaims:    []string{"exp"},
		FetchTimeout:      r.FetchTimeout.or(defaultFetchTimeout),
		MinInterval:       r.MinInterval.or(defaultMinInterval),
		MaxInterval:       r.MaxInterval.or(defaultMaxInterval),
		DefaultTTL:        r.DefaultTTL.or(defaultTTL),
		UnknownKidIntvl:   r.UnknownKidInterval.or(defaultUnknownKidInterval),
		UnknownKidWait:    r.UnknownKidWait.D,
		StaleFor:          r.StaleFor.or(defaultStaleFor),
	}
	if fi.RequiredClaims != nil {
		ic.RequiredClaims = *fi.RequiredClaims
		if ic.RequiredClaims == nil {
			ic.RequiredClaims = []string{}
		}
	}
	if strings.TrimSpace(ic.Issuer) == "" {
		return ic, fmt.Errorf("%s.issuer: empty; set the exact iss value of the tokens", p)
	}
	if ic.Issuer != strings.TrimSpace(ic.Issuer) {
		return ic, fmt.Errorf("%s.issuer: %q has leading or trailing spaces (iss is matched exactly)", p, ic.Issuer)
	}

	// The key source: one of discovery, jwks_url, jwks_file, secret_file;
	// secret_file may also come with jwks_file (both local).
	var sources []string
	if ic.Discovery {
		sources = append(sources, "discovery")
	}
	if ic.JWKSURL != "" {
		sources = append(sources, "jwks_url")
	}
	if ic.JWKSFile != "" {
		sources = append(sources, "jwks_file")
	}
	if ic.SecretFile != "" {
		sources = append(sources, "secret_file")
	}
	switch {
	case len(sources) == 1:
	case len(sources) == 2 && ic.JWKSFile != "" && ic.SecretFile != "":
	case len(sources) == 0:
		return ic, fmt.Errorf("%s: exactly one of discovery, jwks_url, jwks_file, secret_file is required (secret_file may also go with jwks_file); none is set", p)
	default:
		return ic, fmt.Errorf("%s: exactly one of discovery, jwks_url, jwks_file, secret_file is required (secret_file may also go with jwks_file); got %s", p, strings.Join(sources, " and "))
	}
	if ic.Discovery {
		if strings.Contains(ic.Issuer, "{tenantid}") {
			return ic, fmt.Errorf("%s.discovery: the issuer %q is a template; give its JWKS with jwks_url", p, ic.Issuer)
		}
		if err := checkRemoteURL(ic.Issuer, ic.AllowInsecureHTTP); err != nil {
			return ic, fmt.Errorf("%s.issuer: with discovery: %w", p, err)
		}
	}
	if ic.JWKSURL != "" {
		if err := checkRemoteURL(ic.JWKSURL, ic.AllowInsecureHTTP); err != nil {
			return ic, fmt.Errorf("%s.jwks_url: %w", p, err)
		}
	}
	if ic.SecretFile != "" {
		secret, err := readSecret(ic.SecretFile)
		if err != nil {
			return ic, fmt.Errorf("%s.secret_file: %w", p, err)
		}
		ic.Secret = secret
	} else if ic.SecretKid != "" {
		return ic, fmt.Errorf("%s.secret_kid: set without secret_file", p)
	}

	for i, a := range ic.Audiences {
		if a == "" {
			return ic, fmt.Errorf("%s.audiences[%d]: empty audience", p, i)
		}
	}
	if fi.Audiences != nil && len(fi.Audiences) == 0 {
		ic.Audiences = nil // an empty list, like an absent one, means no aud check
	}

	local := ic.JWKSFile != "" || ic.SecretFile != ""
	if fi.Algorithms != nil {
		if len(fi.Algorithms) == 0 {
			return ic, fmt.Errorf("%s.algorithms: empty list; remove the key for the default", p)
		}
		for i, a := range fi.Algorithms {
			q := fmt.Sprintf("%s.algorithms[%d]", p, i)
			if strings.EqualFold(a, "none") {
				return ic, fmt.Errorf("%s: %q is never accepted (RFC 8725 §3.1)", q, a)
			}
			minKey, ok := algorithms[a]
			if !ok {
				return ic, fmt.Errorf("%s: unknown algorithm %q (known: %s)", q, a, strings.Join(knownAlgorithms(), ", "))
			}
			if strings.HasPrefix(a, "HS") {
				if !local {
					return ic, fmt.Errorf("%s: %s needs a local key (secret_file or jwks_file); remote key sets never provide HMAC keys", q, a)
				}
				if ic.Secret != nil && len(ic.Secret) < minKey {
					return ic, fmt.Errorf("%s: %s needs a secret of at least %d bytes (RFC 7518 §3.2); secret_file holds %d", q, a, minKey, len(ic.Secret))
				}
			}
		}
		ic.Algorithms = slices.Clone(fi.Algorithms)
	} else if ic.Secret != nil {
		// Default allowlist with a secret: the HS* the secret is long enough
		// for, and the asymmetric algorithms when a JWKS file is also given.
		for _, a := range []string{"HS256", "HS384", "HS512"} {
			if len(ic.Secret) >= algorithms[a] {
				ic.Algorithms = append(ic.Algorithms, a)
			}
		}
		if ic.JWKSFile != "" {
			ic.Algorithms = append(ic.Algorithms, asymmetricAlgorithms...)
		}
	}

	if fi.Leeway.Set {
		if err := between(ic.Leeway, 0, 10*time.Minute); err != nil {
			return ic, fmt.Errorf("%s.leeway: %w", p, err)
		}
	}
	for i, rc := range ic.RequiredClaims {
		if rc == "" {
			return ic, fmt.Errorf("%s.required_claims[%d]: empty claim name", p, i)
		}
	}
	headers := map[string]string{}
	for _, claim := range sortedKeys(ic.ClaimsToHeaders) {
		h := ic.ClaimsToHeaders[claim]
		q := fmt.Sprintf("%s.claims_to_headers.%s", p, claim)
		if claim == "" {
			return ic, fmt.Errorf("%s.claims_to_headers: empty claim name", p)
		}
		if !httpguts.ValidHeaderFieldName(h) {
			return ic, fmt.Errorf("%s: %q is not a valid HTTP header name", q, h)
		}
		if reservedHeader(h) {
			return ic, fmt.Errorf("%s: %q is a header the proxy must not take from an auth response", q, h)
		}
		canon := strings.ToLower(h)
		if other, dup := headers[canon]; dup {
			return ic, fmt.Errorf("%s: header %q is also set from claim %q", q, h, other)
		}
		headers[canon] = claim
	}

	durations := []struct {
		name string
		d    time.Duration
	}{
		{"fetch_timeout", ic.FetchTimeout}, {"min_interval", ic.MinInterval}, {"max_interval", ic.MaxInterval},
		{"default_ttl", ic.DefaultTTL}, {"unknown_kid_interval", ic.UnknownKidIntvl}, {"stale_for", ic.StaleFor},
	}
	for _, d := range durations {
		if d.d < minInterval {
			return ic, fmt.Errorf("%s.refresh.%s: %s is below the minimum of 1s", p, d.name, d.d)
		}
	}
	if ic.FetchTimeout > 5*time.Minute {
		return ic, fmt.Errorf("%s.refresh.fetch_timeout: %s is above the maximum of 5m", p, ic.FetchTimeout)
	}
	if ic.UnknownKidWait < 0 || ic.UnknownKidWait > ic.FetchTimeout {
		return ic, fmt.Errorf("%s.refresh.unknown_kid_wait: %s is not between 0 and fetch_timeout (%s)", p, ic.UnknownKidWait, ic.FetchTimeout)
	}
	if ic.MinInterval > ic.MaxInterval {
		return ic, fmt.Errorf("%s.refresh: min_interval (%s) is greater than max_interval (%s)", p, ic.MinInterval, ic.MaxInterval)
	}
	return ic, nil
}

// readSecret reads an HMAC secret file: raw bytes, at least 32 (RFC 7518
// §3.2: an HMAC key must be at least as long as the hash output).
func readSecret(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxSecretBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxSecretBytes {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, maxSecretBytes)
	}
	if len(b) < minSecretBytes {
		return nil, fmt.Errorf("%s holds %d bytes; an HMAC secret must be at least %d bytes (RFC 7518 §3.2: at least the hash size), refusing it", path, len(b), minSecretBytes)
	}
	return b, nil
}

func knownAlgorithms() []string {
	out := []string{"HS256", "HS384", "HS512"}
	return append(out, asymmetricAlgorithms...)
}

// reservedHeader reports headers that a forward-auth response must not set
// from a claim: hop-by-hop, framing and routing headers.
func reservedHeader(h string) bool {
	switch strings.ToLower(h) {
	case "connection", "content-length", "content-type", "host", "keep-alive", "proxy-connection",
		"te", "trailer", "transfer-encoding", "upgrade", "www-authenticate", "set-cookie",
		"x-envoy-auth-headers-to-remove":
		return true
	}
	return false
}

func checkTokenSource(s fileTokenSource) error {
	n := 0
	for _, v := range []string{s.Header, s.Cookie, s.Query} {
		if v != "" {
			n++
		}
	}
	if n != 1 {
		return errors.New("exactly one of header, cookie, query is required")
	}
	if s.Prefix != "" && s.Header == "" {
		return errors.New("prefix goes only with header")
	}
	if s.Header != "" && !httpguts.ValidHeaderFieldName(s.Header) {
		return fmt.Errorf("header: %q is not a valid HTTP header name", s.Header)
	}
	return nil
}

// checkListen accepts host:port with a numeric port (0 = any free port).
func checkListen(addr string) error {
	if addr == "" {
		return errors.New("empty address; want host:port such as 127.0.0.1:8080")
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%q is not host:port: %w", addr, err)
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("%q: port %q is not a number in [0, 65535]", addr, port)
	}
	if strings.ContainsAny(host, " /") {
		return fmt.Errorf("%q: bad host %q", addr, host)
	}
	return nil
}

// checkRemoteURL refuses what the fetcher would refuse, at start with the
// field's name: a URL that is not https, or http to a non-loopback host
// without allow_insecure_http.
func checkRemoteURL(raw string, allowHTTP bool) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("not a URL: %w", err)
	}
	if u.Host == "" {
		return fmt.Errorf("%q has no host", raw)
	}
	if u.User != nil {
		return fmt.Errorf("%q must not carry credentials", u.Redacted())
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		if allowHTTP || isLoopback(u.Hostname()) {
			return nil
		}
		return fmt.Errorf("plain http is accepted only for loopback hosts; %q is not (set allow_insecure_http: true to accept it, never on an untrusted network)", u.Hostname())
	}
	return fmt.Errorf("%q: scheme %q is not https", raw, u.Scheme)
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.IsLoopback()
}

func between(d, lo, hi time.Duration) error {
	if d < lo || d > hi {
		return fmt.Errorf("%s is out of range [%s, %s]", d, lo, hi)
	}
	return nil
}

func derefOr[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
