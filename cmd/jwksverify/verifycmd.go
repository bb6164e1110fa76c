package main

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/jwksverify/jwksverify/cache"
	"github.com/jwksverify/jwksverify/jwks"
	"github.com/jwksverify/jwksverify/verify"
)

// maxPEMBytes bounds a --pem file.
const maxPEMBytes = 1 << 20

// usageError is a usage or configuration error of the CLI: exit 2.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

// verifyFlags are the flags of `jwksverify verify`.
type verifyFlags struct {
	config, jwks, discovery, secretFile, pem string
	issuer                                   string
	audiences, algs                          stringList
	leeway                                   string
	now                                      string
	explain                                  bool
}

func (a *app) verify(ctx context.Context, args []string) int {
	fs := a.newFlagSet("verify")
	var f verifyFlags
	fs.StringVar(&f.config, "config", "", "verify with the issuers of a configuration `file`")
	fs.StringVar(&f.jwks, "jwks", "", "JWKS `URL or file` (a file may hold oct keys)")
	fs.StringVar(&f.discovery, "discovery", "", "OIDC `issuer` whose discovery document names the JWKS")
	fs.StringVar(&f.secretFile, "secret-file", "", "HMAC secret `file` (raw bytes, at least 32)")
	fs.StringVar(&f.pem, "pem", "", "PEM public key or certificate `file`")
	fs.StringVar(&f.issuer, "issuer", "", "required iss (not checked when absent)")
	fs.Var(&f.audiences, "audience", "accepted aud (repeatable; not checked when absent)")
	fs.Var(&f.algs, "alg", "allowed alg (repeatable; default: every algorithm the keys fit)")
	fs.StringVar(&f.leeway, "leeway", "", "clock skew tolerated on exp and nbf (default 30s; 0s for none)")
	fs.StringVar(&f.now, "now", "", "judge the time claims at this instant: RFC 3339 or Unix seconds")
	fs.BoolVar(&f.explain, "explain", false, "print every check and its outcome before the result")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return flagExit(err)
	}
	logger := newLogger(a.stderr, "warn", "text")
	code, err := a.runVerify(ctx, f, pos, logger)
	if err != nil {
		fmt.Fprintf(a.stderr, "jwksverify verify: %v\n", err)
	}
	return code
}

// runVerify returns the exit status, and an error to print on stderr for
// usage errors.
func (a *app) runVerify(ctx context.Context, f verifyFlags, pos []string, logger *slog.Logger) (int, error) {
	if len(pos) != 1 {
		return exitUsage, errors.New("want exactly one TOKEN argument (or - to read it from standard input)")
	}
	n := 0
	for _, s := range []string{f.config, f.jwks, f.discovery, f.secretFile, f.pem} {
		if s != "" {
			n++
		}
	}
	if n != 1 {
		return exitUsage, errors.New("want exactly one of --config, --jwks, --discovery, --secret-file, --pem")
	}
	var leeway time.Duration
	leewaySet := f.leeway != ""
	if leewaySet {
		d, err := time.ParseDuration(f.leeway)
		if err != nil || d < 0 || d > 10*time.Minute {
			return exitUsage, fmt.Errorf("--leeway %q: want a duration in [0s, 10m] such as 30s", f.leeway)
		}
		leeway = d
	}
	for _, alg := range f.algs {
		if strings.EqualFold(alg, "none") {
			return exitUsage, errors.New(`--alg none: "none" is never accepted`)
		}
		if _, ok := algorithms[alg]; !ok {
			return exitUsage, fmt.Errorf("--alg %q: unknown algorithm (known: %s)", alg, strings.Join(knownAlgorithms(), ", "))
		}
	}
	for _, aud := range f.audiences {
		if aud == "" {
			return exitUsage, errors.New("--audience: empty")
		}
	}
	var now func() time.Time
	if f.now != "" {
		t, err := parseNow(f.now)
		if err != nil {
			return exitUsage, err
		}
		now = func() time.Time { return t }
	}

	maxToken := defaultMaxTokenBytes
	var cfg *config
	if f.config != "" {
		c, err := loadConfigFile(f.config, overrides{NoServerSecrets: true}, a.lookupEnv)
		if err != nil {
			return exitUsage, err
		}
		cfg, maxToken = c, c.MaxTokenBytes
	}
	token, err := a.readToken(pos[0], maxToken)
	if err != nil {
		var tooLarge errTokenTooLarge
		if errors.As(err, &tooLarge) {
			return a.writeVerdict(nil, "", fmt.Errorf("%w: %w", verify.ErrTokenTooLarge, err)), nil
		}
		return exitUsage, err
	}

	var issuers []verify.Issuer
	if cfg != nil {
		issuers, err = a.configIssuers(ctx, cfg, f, peekIssuer(token), leeway, leewaySet, logger)
	} else {
		var is verify.Issuer
		is, err = a.flagIssuer(ctx, f, token, logger)
		if err == nil {
			is.Issuer = f.issuer
			is.SkipIssuerCheck = f.issuer == ""
			is.Audiences = f.audiences
			if len(f.algs) > 0 {
				is.Algorithms = f.algs
			}
			if leewaySet {
				is.Leeway = leewayOption(leeway)
			}
			issuers = []verify.Issuer{is}
		}
	}
	if err != nil {
		var ue usageError
		if errors.As(err, &ue) {
			return exitUsage, err
		}
		// The keys could not be fetched: no verdict is possible.
		return a.writeVerdict(nil, token, fmt.Errorf("%w: %w", verify.ErrKeysUnavailable, err)), nil
	}
	v, err := verify.New(verify.Options{Issuers: issuers, MaxTokenBytes: maxToken, Now: now})
	if err != nil {
		return exitUsage, err
	}
	if f.explain {
		steps, res, err := v.Explain(ctx, token)
		a.writeSteps(steps)
		return a.writeVerdict(res, token, err), nil
	}
	res, err := v.Verify(ctx, token)
	return a.writeVerdict(res, token, err), nil
}

// parseNow reads --now: RFC 3339 or Unix seconds.
func parseNow(s string) (time.Time, error) {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return time.Unix(n, 0), nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("--now %q: want RFC 3339 (2025-01-02T15:04:05Z) or Unix seconds", s)
	}
	return t, nil
}

type errTokenTooLarge struct{ limit int }

func (e errTokenTooLarge) Error() string {
	return fmt.Sprintf("the token on standard input is larger than %d bytes", e.limit)
}

// readToken returns arg, or for "-" the token read from stdin (bounded,
// surrounding white space removed).
func (a *app) readToken(arg string, limit int) (string, error) {
	if arg != "-" {
		return arg, nil
	}
	// Room for surrounding white space (a trailing newline, CRLF).
	b, err := io.ReadAll(io.LimitReader(a.stdin, int64(limit)+1024))
	if err != nil {
		return "", fmt.Errorf("reading the token from standard input: %w", err)
	}
	tok := string(bytes.TrimSpace(b))
	if len(tok) > limit {
		return "", errTokenTooLarge{limit}
	}
	if tok == "" {
		return "", errors.New("no token on standard input")
	}
	return tok, nil
}

// flagIssuer builds the one issuer of --jwks, --discovery, --secret-file
// or --pem. Local sources that fail are usage errors; a remote fetch that
// fails is returned as is (no keys: a 503-class outcome).
func (a *app) flagIssuer(ctx context.Context, f verifyFlags, token string, logger *slog.Logger) (verify.Issuer, error) {
	keys := &cache.Keys{}
	switch {
	case f.jwks != "" && isURL(f.jwks):
		set, err := fetchOnce(ctx, jwks.Options{Issuer: f.issuer, URL: f.jwks, Logger: logger})
		if err != nil {
			return verify.Issuer{}, err
		}
		keys.Store(set)
		return verify.Issuer{Keys: keys}, nil
	case f.discovery != "":
		set, err := fetchOnce(ctx, jwks.Options{Issuer: f.discovery, Discovery: true, Logger: logger})
		if err != nil {
			return verify.Issuer{}, err
		}
		keys.Store(set)
		return verify.Issuer{Keys: keys}, nil
	case f.jwks != "":
		set, err := readJWKSFile(f.jwks, defaultMaxJWKSBytes, defaultMaxKeys)
		if err != nil {
			return verify.Issuer{}, usageError{fmt.Errorf("--jwks %s: %w", f.jwks, err)}
		}
		keys.Store(set)
		return verify.Issuer{Keys: keys, AllowHMAC: true}, nil
	case f.secretFile != "":
		secret, err := readSecret(f.secretFile)
		if err != nil {
			return verify.Issuer{}, usageError{fmt.Errorf("--secret-file: %w", err)}
		}
		k, err := cache.NewKey(secret, cache.KeyMeta{Kid: peekKid(token), Local: true})
		if err != nil {
			return verify.Issuer{}, usageError{fmt.Errorf("--secret-file: %w", err)}
		}
		keys.Store(cache.NewSet([]*cache.Key{k}, nil, time.Now(), time.Time{}))
		// Only the HS* algorithms the secret is long enough for (RFC 7518 §3.2).
		var algs []string
		for _, alg := range []string{"HS256", "HS384", "HS512"} {
			if len(secret) >= algorithms[alg] {
				algs = append(algs, alg)
			}
		}
		for _, alg := range f.algs {
			if minKey := algorithms[alg]; strings.HasPrefix(alg, "HS") && len(secret) < minKey {
				return verify.Issuer{}, usagef("--alg %s needs a secret of at least %d bytes (RFC 7518 §3.2); %s holds %d", alg, minKey, f.secretFile, len(secret))
			}
		}
		return verify.Issuer{Keys: keys, AllowHMAC: true, Algorithms: algs}, nil
	default: // --pem
		pub, err := readPEMPublicKey(f.pem)
		if err != nil {
			return verify.Issuer{}, usageError{fmt.Errorf("--pem %s: %w", f.pem, err)}
		}
		k, err := cache.NewKey(pub, cache.KeyMeta{Kid: peekKid(token), Local: true})
		if err != nil {
			return verify.Issuer{}, usageError{fmt.Errorf("--pem %s: %w", f.pem, err)}
		}
		keys.Store(cache.NewSet([]*cache.Key{k}, nil, time.Now(), time.Time{}))
		return verify.Issuer{Keys: keys}, nil
	}
}

// configIssuers builds the issuers of a configuration file for one
// verification: every source read once (remote ones concurrently). An issuer
// whose keys cannot be fetched is kept without keys (keys_unavailable if the
// token routes to it). --issuer keeps only that issuer; --audience, --alg
// and --leeway replace each issuer's own.
//
// Only the keys of the issuers the token may route to are read: those equal
// to its (unverified) iss, and templates; all of them when it has no iss.
// The verifier routes the token again; this only saves fetches.
func (a *app) configIssuers(ctx context.Context, cfg *config, f verifyFlags, tokenIss string, leeway time.Duration, leewaySet bool, logger *slog.Logger) ([]verify.Issuer, error) {
	ics := cfg.Issuers
	if f.issuer != "" {
		ics = nil
		for _, ic := range cfg.Issuers {
			if ic.Issuer == f.issuer {
				ics = append(ics, ic)
			}
		}
		if len(ics) == 0 {
			return nil, usagef("--issuer %q is not configured in %s", f.issuer, f.config)
		}
	}
	out := make([]verify.Issuer, len(ics))
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for i, ic := range ics {
		is := verify.Issuer{
			Issuer:         ic.Issuer,
			Keys:           &cache.Keys{},
			Audiences:      ic.Audiences,
			Algorithms:     ic.Algorithms,
			AllowHMAC:      ic.Secret != nil || ic.JWKSFile != "",
			Leeway:         leewayOption(ic.Leeway),
			RequiredClaims: ic.RequiredClaims,
			Type:           ic.Type,
			ExtractClaims:  sortedKeys(ic.ClaimsToHeaders),
		}
		if len(f.audiences) > 0 {
			is.Audiences = f.audiences
		}
		if len(f.algs) > 0 {
			is.Algorithms = f.algs
		}
		if leewaySet {
			is.Leeway = leewayOption(leeway)
		}
		out[i] = is
		if tokenIss != "" && ic.Issuer != tokenIss && !strings.Contains(ic.Issuer, "{tenantid}") {
			continue
		}
		wg.Go(func() {
			set, err := configSet(ctx, cfg, ic, logger)
			if err != nil {
				var ue usageError
				if errors.As(err, &ue) {
					mu.Lock()
					if firstErr == nil {
						firstErr = fmt.Errorf("issuers[%s]: %w", ic.Issuer, err)
					}
					mu.Unlock()
					return
				}
				logger.Warn("no keys for issuer", "issuer", ic.Issuer, "err", err)
				return
			}
			is.Keys.Store(set)
		})
	}
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	return out, nil
}

// configSet reads one configured issuer's keys once.
func configSet(ctx context.Context, cfg *config, ic issuerConfig, logger *slog.Logger) (*cache.Set, error) {
	var keys []*cache.Key
	var skipped []cache.Skipped
	if ic.Secret != nil {
		k, err := cache.NewKey(ic.Secret, cache.KeyMeta{Kid: ic.SecretKid, Local: true})
		if err != nil {
			return nil, usageError{fmt.Errorf("secret_file: %w", err)}
		}
		keys = append(keys, k)
	}
	switch {
	case ic.JWKSFile != "":
		set, err := readJWKSFile(ic.JWKSFile, cfg.MaxJWKSBytes, cfg.MaxKeys)
		if err != nil {
			return nil, usageError{fmt.Errorf("jwks_file: %w", err)}
		}
		keys, skipped = append(keys, set.Keys()...), set.Skipped()
	case ic.Discovery || ic.JWKSURL != "":
		set, err := fetchOnce(ctx, jwks.Options{
			Issuer:            ic.Issuer,
			URL:               ic.JWKSURL,
			Discovery:         ic.Discovery,
			FetchTimeout:      ic.FetchTimeout,
			MaxBytes:          cfg.MaxJWKSBytes,
			MaxKeys:           cfg.MaxKeys,
			InsecureAllowHTTP: ic.AllowInsecureHTTP,
			Logger:            logger,
		})
		if err != nil {
			return nil, err
		}
		keys, skipped = set.Keys(), set.Skipped()
	}
	return cache.NewSet(keys, skipped, time.Now(), time.Time{}), nil
}

// fetchOnce fetches a remote key set once and returns it without a
// staleness bound, so that --now may lie anywhere.
func fetchOnce(ctx context.Context, opts jwks.Options) (*cache.Set, error) {
	set, err := jwks.Fetch(ctx, opts)
	if err != nil {
		return nil, err
	}
	return cache.NewSet(set.Keys(), set.Skipped(), set.FetchedAt, time.Time{}), nil
}

// readJWKSFile reads a local JWKS (its oct keys accepted), bounded.
func readJWKSFile(path string, maxBytes int64, maxKeys int) (*cache.Set, error) {
	data, err := readBounded(path, maxBytes)
	if err != nil {
		return nil, err
	}
	keys, skipped, err := jwks.Parse(data, jwks.ParseOptions{Local: true, MaxKeys: maxKeys})
	if err != nil {
		return nil, err
	}
	return cache.NewSet(keys, skipped, time.Now(), time.Time{}), nil
}

func readBounded(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("larger than %d bytes", limit)
	}
	return b, nil
}

// readPEMPublicKey reads the first public key of a PEM file: PUBLIC KEY
// (PKIX), RSA PUBLIC KEY (PKCS #1) or CERTIFICATE (its subject key).
func readPEMPublicKey(path string) (any, error) {
	data, err := readBounded(path, maxPEMBytes)
	if err != nil {
		return nil, err
	}
	for {
		var blk *pem.Block
		blk, data = pem.Decode(data)
		if blk == nil {
			return nil, errors.New("no PEM public key or certificate found")
		}
		switch blk.Type {
		case "PUBLIC KEY":
			return x509.ParsePKIXPublicKey(blk.Bytes)
		case "RSA PUBLIC KEY":
			return x509.ParsePKCS1PublicKey(blk.Bytes)
		case "CERTIFICATE":
			cert, err := x509.ParseCertificate(blk.Bytes)
			if err != nil {
				return nil, err
			}
			return cert.PublicKey, nil
		case "PRIVATE KEY", "RSA PRIVATE KEY", "EC PRIVATE KEY", "ENCRYPTED PRIVATE KEY":
			return nil, fmt.Errorf("holds a %s; give the public key (openssl pkey -pubout) instead", blk.Type)
		}
	}
}

// peekKid returns the kid of token's header, without verifying anything:
// it only names the one key given by --pem or --secret-file after the
// token's kid, so that the verifier selects it. "" when there is none.
func peekKid(token string) string {
	var h struct {
		Kid string `json:"kid"`
	}
	peekSegment(token, 0, &h)
	return h.Kid
}

// peekIssuer returns the iss claim of token, without verifying anything:
// it only chooses which configured issuers' keys the CLI reads.
func peekIssuer(token string) string {
	var c struct {
		Iss string `json:"iss"`
	}
	peekSegment(token, 1, &c)
	return c.Iss
}

// peekSegment decodes the JSON of segment i of token into v, leaving v
// untouched when it cannot.
func peekSegment(token string, i int, v any) {
	segs := strings.SplitN(token, ".", 3)
	if len(segs) < 2 || len(segs[i]) > 2*defaultMaxTokenBytes {
		return
	}
	b, err := base64.RawURLEncoding.DecodeString(segs[i])
	if err != nil {
		return
	}
	_ = json.Unmarshal(b, v)
}

func isURL(s string) bool {
	return strings.HasPrefix(s, "https://") || strings.HasPrefix(s, "http://")
}

// validBody is the result of a valid token: the body of /v1/verify.
type validBody struct {
	Valid  bool            `json:"valid"`
	Issuer string          `json:"issuer"`
	Kid    string          `json:"kid"`
	Alg    string          `json:"alg"`
	Header json.RawMessage `json:"header"`
	Claims json.RawMessage `json:"claims"`
}

// invalidBody is the result of a rejected token (or no usable keys).
type invalidBody struct {
	Valid   bool   `json:"valid"`
	Error   string `json:"error"`
	Message string `json:"message"`
}

// writeVerdict prints the result as JSON and returns the exit status. The
// message never holds the token, even if an error were to quote it.
func (a *app) writeVerdict(res *verify.Result, token string, err error) int {
	enc := json.NewEncoder(a.stdout)
	enc.SetEscapeHTML(false)
	if err == nil && res != nil {
		_ = enc.Encode(validBody{Valid: true, Issuer: res.Issuer, Kid: res.Kid, Alg: res.Alg, Header: res.Header, Claims: res.Claims})
		return exitOK
	}
	if err == nil {
		err = verify.ErrMalformed
	}
	class := verify.Class(err)
	if class == "" {
		class = "malformed"
	}
	msg := err.Error()
	if token != "" && strings.Contains(msg, token) {
		msg = strings.ReplaceAll(msg, token, "[token]")
	}
	_ = enc.Encode(invalidBody{Error: class, Message: msg})
	return exitFailure
}

// writeSteps prints the checks of --explain as a table.
func (a *app) writeSteps(steps []verify.Step) {
	tw := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "#\tCHECK\tRESULT\tDETAIL")
	for i, s := range steps {
		r := "ok"
		if !s.OK {
			r = "FAIL"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", i+1, s.Check, r, oneLine(s.Detail))
	}
	_ = tw.Flush()
	fmt.Fprintln(a.stdout)
}

// oneLine keeps a detail on one table row.
func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\n' || r == '\r' || r == '\t' {
			return ' '
		}
		return r
	}, s)
}
