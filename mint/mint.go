// Package mint issues jwksverify's own short-lived access tokens: after a
// request is allowed, the upstream receives a JWT that jwksverify signed
// (RFC 9068 typ at+jwt, its own iss, the policy's aud, the source token's
// sub and client_id and the claims the policy maps), never the caller's
// credential. The signing keys come from a private JWKS file that every
// replica reads (so that every replica's tokens verify under one published
// key set), checked strictly; the public part of every key is published
// ([Minter.JWKS], served at /.well-known/jwks.json).
//
// A [Minter] keeps one snapshot of its keys file and a bounded cache of
// the tokens it minted, keyed by the source token and the [Policy] and
// dropped whole with the snapshot when the file changes: a token signed by
// a key that left the file is never handed out again. Signatures are the
// standard library's (crypto/ecdsa, crypto/ed25519, crypto/rsa).
package mint

import (
	"bytes"
	"cmp"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/textproto"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"golang.org/x/net/http/httpguts"

	"github.com/jwksverify/jwksverify/internal/fileread"
	"github.com/jwksverify/jwksverify/internal/jsonscan"
	"github.com/jwksverify/jwksverify/verify"
)

// Defaults and bounds of [Options] and [PolicySpec].
const (
	// DefaultTTL is the lifetime of a minted token when neither the policy
	// nor the minter sets one.
	DefaultTTL = 5 * time.Minute
	// MinTTL and MaxTTL bound every ttl.
	MinTTL = time.Second
	MaxTTL = 24 * time.Hour
	// DefaultHeader is the request header the upstream receives the
	// token in: "Bearer <jwt>", replacing the caller's credential.
	DefaultHeader = "Authorization"
	// DefaultMaxEntries bounds the minted-token cache.
	DefaultMaxEntries = 10000
	// MaxMaxEntries bounds Options.MaxEntries.
	MaxMaxEntries = 1000000
	// TokenType is the typ header of every minted token (RFC 9068 §2.1):
	// an access token, never mistaken for the IdP's ID tokens or another
	// kind (RFC 8725 §3.11).
	TokenType = "at+jwt"
	// reuseTenths: a cached token is handed out until this share of its
	// life (numerator over 10).
	reuseTenths = 9
)

// reserved are the claims every minted token sets itself: a policy's
// claims mapping may not name one of them.
var reserved = []string{"iss", "sub", "aud", "iat", "exp", "jti", "client_id"}

// Reserved returns the claims a minted token sets itself, which a
// [PolicySpec] mapping may not name. The slice is the caller's.
func Reserved() []string { return append([]string(nil), reserved...) }

// Options configure a [Minter].
type Options struct {
	// Issuer is the iss of every minted token. Required.
	Issuer string
	// KeysFile is the path of a private JWKS: every key published, the
	// key of SigningKid signing. Every replica must read the same file.
	// Required.
	KeysFile string
	// SigningKid is the kid of the key that signs; it must be in KeysFile
	// with its private part. Required.
	SigningKid string
	// TTL is the lifetime of a minted token under a policy without its
	// own, in [MinTTL, MaxTTL]. Zero means [DefaultTTL].
	TTL time.Duration
	// Header is the request header the upstream receives the token in.
	// Zero means [DefaultHeader] (Authorization, as "Bearer <jwt>");
	// another name carries the bare JWT.
	Header string
	// MaxEntries bounds the minted-token cache. Zero means
	// [DefaultMaxEntries]; negative turns the cache off (every allowed
	// request mints).
	MaxEntries int
	// Watch is how often KeysFile is checked for a change by the
	// minter's own goroutine ([Minter.Close] stops it). Zero means it is
	// not watched: only [Minter.Reload] reads it again.
	Watch time.Duration
	// Rand is the source of the jti and of the signatures' randomness.
	// Nil means crypto/rand.
	Rand io.Reader
	// Logger receives a line per keys-file change and per refused one
	// (never key material). Nil means slog.Default().
	Logger *slog.Logger
}

// withDefaults checks o and applies the defaults.
func (o Options) withDefaults() (Options, error) {
	if o.Issuer == "" {
		return o, invalidOption("Issuer", "empty; set the iss of the minted tokens")
	}
	if !httpguts.ValidHeaderFieldValue(o.Issuer) {
		return o, invalidOption("Issuer", "holds a control character")
	}
	if o.KeysFile == "" {
		return o, invalidOption("KeysFile", "empty; set the path of the private JWKS")
	}
	if o.SigningKid == "" {
		return o, invalidOption("SigningKid", "empty; set the kid of the key that signs")
	}
	if o.TTL == 0 {
		o.TTL = DefaultTTL
	}
	if err := checkTTL(o.TTL); err != nil {
		return o, &OptionError{Field: "TTL", Err: err}
	}
	if o.Header == "" {
		o.Header = DefaultHeader
	}
	if !httpguts.ValidHeaderFieldName(o.Header) {
		return o, invalidOption("Header", "%q is not a header name", o.Header)
	}
	// Header names are case-insensitive: "authorization" is Authorization,
	// which carries "Bearer <jwt>" (Header and the bearer form read it
	// canonical).
	o.Header = textproto.CanonicalMIMEHeaderKey(o.Header)
	switch {
	case o.MaxEntries == 0:
		o.MaxEntries = DefaultMaxEntries
	case o.MaxEntries > MaxMaxEntries:
		return o, invalidOption("MaxEntries", "%d is over %d", o.MaxEntries, MaxMaxEntries)
	}
	if o.Watch < 0 {
		return o, invalidOption("Watch", "%s is negative", o.Watch)
	}
	if o.Rand == nil {
		o.Rand = rand.Reader
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o, nil
}

func checkTTL(d time.Duration) error {
	if d < MinTTL || d > MaxTTL {
		return fmt.Errorf("%s is out of range [%s, %s]", d, MinTTL, MaxTTL)
	}
	return nil
}

// Minter mints tokens with the keys of one keys file. Build it with
// [New]; it is safe for concurrent use. It owns one goroutine when
// [Options.Watch] is set: [Minter.Close] stops it.
type Minter struct {
	opts   Options
	bearer bool   // Header is Authorization: "Bearer <jwt>"
	iss    []byte // the JSON string of Issuer

	cur      atomic.Pointer[state]
	reloadMu sync.Mutex // serializes reloads
	lastBad  [32]byte   // the SHA-256 of the last refused content (logged once)
	lastErr  error      // why it was refused

	hits, mints, reloads, failures atomic.Uint64
	// refusing is set while the keys file's content (or its read error)
	// is refused: the file is not the keys signing.
	refusing atomic.Bool

	stop, done chan struct{}
	closeOnce  sync.Once
}

// state is one keys file at work: its keys and the tokens minted with
// them. A change of the file replaces it whole, cache and all.
type state struct {
	keys  *keySet
	cache *tokenCache // nil: off
}

// CheckOptions reports whether o is valid without reading its keys file:
// what a configuration can tell before the file is read.
func CheckOptions(o Options) error {
	_, err := o.withDefaults()
	return err
}

// Check reports whether o and the keys file it names are valid, as [New]
// would find them, and starts nothing.
func Check(o Options) error {
	o, err := o.withDefaults()
	if err != nil {
		return err
	}
	_, err = readKeys(o)
	return err
}

// readKeys reads and checks o's keys file; an error names KeysFile.
func readKeys(o Options) (*keySet, error) {
	data, err := readFile(o.KeysFile)
	if err != nil {
		return nil, &OptionError{Field: "KeysFile", Err: fmt.Errorf("%w: %w", ErrKeysFile, err)}
	}
	ks, err := parseKeys(data, o.SigningKid)
	if err != nil {
		return nil, &OptionError{Field: "KeysFile", Err: fmt.Errorf("%s: %w", o.KeysFile, err)}
	}
	return ks, nil
}

// readFile reads path, bounded by MaxKeysFileBytes.
func readFile(path string) ([]byte, error) {
	b, _, err := fileread.Regular(path, MaxKeysFileBytes)
	return b, err
}

// New checks o, reads its keys file and returns a Minter, watching the
// file when o.Watch is set. The caller must Close it.
func New(o Options) (*Minter, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	ks, err := readKeys(o)
	if err != nil {
		return nil, err
	}
	iss, _ := json.Marshal(o.Issuer) // a string always encodes
	m := &Minter{opts: o, bearer: o.Header == DefaultHeader, iss: iss, stop: make(chan struct{}), done: make(chan struct{})}
	m.cur.Store(m.newState(ks))
	if o.Watch > 0 {
		go m.watch()
	} else {
		close(m.done)
	}
	return m, nil
}

func (m *Minter) newState(ks *keySet) *state {
	st := &state{keys: ks}
	if m.opts.MaxEntries > 0 {
		st.cache = newTokenCache(m.opts.MaxEntries)
	}
	return st
}

// Same reports whether a and b configure the same minter: a program that
// reloads its configuration keeps its Minter (its cache) when they are.
func Same(a, b Options) bool {
	return a.Issuer == b.Issuer && a.KeysFile == b.KeysFile && a.SigningKid == b.SigningKid && a.TTL == b.TTL &&
		a.Header == b.Header && a.MaxEntries == b.MaxEntries && a.Watch == b.Watch
}

// Options returns the minter's options, defaults applied.
func (m *Minter) Options() Options { return m.opts }

// Close stops the watch of the keys file and waits for it. The minter
// still mints after Close. It is safe to call more than once.
func (m *Minter) Close() error {
	m.closeOnce.Do(func() { close(m.stop) })
	<-m.done
	return nil
}

// watch reloads the keys file every opts.Watch until Close.
func (m *Minter) watch() {
	defer close(m.done)
	t := time.NewTicker(m.opts.Watch)
	defer t.Stop()
	for {
		select {
		case <-m.stop:
			return
		case <-t.C:
			_, _ = m.Reload() // logged by Reload
		}
	}
}

// Reload reads the keys file again. When its content changed and is valid,
// the new keys replace the old ones at once, with an empty cache (no token
// signed by a key that left the file is handed out again), and it returns
// true. A content that is not valid is refused: the old keys keep signing
// and Reload returns why (an error wrapping [ErrKeysFile]), logged once per
// content. It is safe for concurrent use.
func (m *Minter) Reload() (bool, error) {
	m.reloadMu.Lock()
	defer m.reloadMu.Unlock()
	data, err := readFile(m.opts.KeysFile)
	if err != nil {
		// Gone or unreadable: the keys in use keep signing; reported once
		// per error, like a refused content.
		err = fmt.Errorf("%w: %w", ErrKeysFile, err)
		m.refused(sha256Sum([]byte(err.Error())), err)
		return false, err
	}
	// The content in use, or the one refused last, is told by its sum
	// and not parsed again: parsing checks every key (a test signature by
	// each private key), which the watch would do every second.
	sum := sha256Sum(data)
	cur := m.cur.Load()
	switch {
	case sum == cur.keys.sum:
		m.refusing.Store(false) // back to the keys signing
		return false, nil
	case sum == m.lastBad && m.lastErr != nil:
		// Refused again, perhaps after another content was taken (or the
		// file held the keys signing again): the file is refused now.
		m.refusing.Store(true)
		return false, m.lastErr
	}
	ks, err := parseKeys(data, m.opts.SigningKid)
	if err != nil {
		m.refused(sum, err)
		return false, err
	}
	for _, kid := range rekeyed(cur.keys, ks) {
		// Taken all the same: the operator removed the key that was
		// under this kid (perhaps a leaked one), and keeping it would
		// sign with it.
		m.opts.Logger.Warn("mint keys file: a kid now names another key; consumers holding the published set refuse its tokens until they fetch it again", "file", m.opts.KeysFile, "kid", kid)
	}
	m.cur.Store(m.newState(ks))
	m.reloads.Add(1)
	m.refusing.Store(false)
	m.opts.Logger.Info("mint keys file reloaded", "file", m.opts.KeysFile, "keys", len(ks.keys), "signing_kid", ks.signer.kid)
	return true, nil
}

// rekeyed returns the kids that name another key (another public key, or
// another alg) in next than in cur. A consumer that cached the published
// set does not fetch it again for a kid it knows (an unknown kid triggers
// a refresh, a known one does not): it refuses the tokens the new key signs
// until its cache expires, and a new key needs a new kid (docs/OPERATIONS.md,
// "Rotating the minting keys").
func rekeyed(cur, next *keySet) []string {
	var kids []string
	for _, n := range next.keys {
		for _, c := range cur.keys {
			if c.kid == n.kid && (c.alg != n.alg || c.pub.Thumbprint != n.pub.Thumbprint) {
				kids = append(kids, n.kid)
			}
		}
	}
	return kids
}

// refused counts and logs a keys file that could not be taken, once per
// sum (its content, or its read error). Called with reloadMu held.
func (m *Minter) refused(sum [32]byte, err error) {
	m.refusing.Store(true)
	if sum == m.lastBad {
		return
	}
	m.lastBad, m.lastErr = sum, err
	m.failures.Add(1)
	m.opts.Logger.Error("mint keys file refused; the previous keys keep signing", "file", m.opts.KeysFile, "err", err)
}

// JWKS returns the public JWKS document of the current keys file (kty,
// crv, x, y, n, e, kid, alg, use of every key; never a private member),
// with a final newline. The slice is shared: do not modify it.
func (m *Minter) JWKS() []byte { return m.cur.Load().keys.jwks }

// Kids returns the kids of the current keys file, in file order, and the
// signing one.
func (m *Minter) Kids() (kids []string, signing string) {
	ks := m.cur.Load().keys
	for _, k := range ks.keys {
		kids = append(kids, k.kid)
	}
	return kids, ks.signer.kid
}

// Header returns the canonical request header the upstream receives the
// token in ([Options.Header]).
func (m *Minter) Header() string { return m.opts.Header }

// Issuer returns the iss of the minted tokens.
func (m *Minter) Issuer() string { return m.opts.Issuer }

// Stats are a minter's counters since New.
type Stats struct {
	// Hits counts tokens handed out again from the cache; Mints the tokens
	// signed.
	Hits, Mints uint64
	// Reloads counts keys-file changes taken; ReloadFailures the refused
	// contents (each counted once).
	Reloads, ReloadFailures uint64
	// Refusing reports that the keys file's content now is refused (or
	// cannot be read): the previous keys keep signing, and a restart would
	// not start with the file.
	Refusing bool
	// Entries is the number of cached tokens now.
	Entries int
}

// Stats returns the minter's counters. It is safe for concurrent use.
func (m *Minter) Stats() Stats {
	s := Stats{Hits: m.hits.Load(), Mints: m.mints.Load(), Reloads: m.reloads.Load(), ReloadFailures: m.failures.Load(), Refusing: m.refusing.Load()}
	if c := m.cur.Load().cache; c != nil {
		s.Entries = c.len()
	}
	return s
}

// PolicySpec is what a policy asks of the tokens minted under it.
type PolicySpec struct {
	// Audience is the aud of the minted tokens: the upstream they are for.
	// Required.
	Audience string
	// Claims maps a claim of the minted token to the source token's claim
	// whose value it takes (left out when the source has none). It may not
	// name a [Reserved] claim, but for "sub": "sub", which says what every
	// minted token does. Nil means none.
	Claims map[string]string
	// TTL is the lifetime of the minted tokens, in [MinTTL, MaxTTL]. Zero
	// means the minter's.
	TTL time.Duration
}

// Policy is a checked [PolicySpec]. It is immutable and safe for
// concurrent use; the minted-token cache tells policies apart by pointer.
type Policy struct {
	aud    []byte // JSON string
	claims []mapping
	ttl    time.Duration
	// names are the source claims a mint reads, in one pass: sub,
	// client_id, azp, then each mapping's source.
	names []string
}

// mapping is one claims entry: the minted claim's JSON name and the
// source claim.
type mapping struct {
	name   []byte // JSON string, with its colon
	source string
}

// Copies returns how many source claims a token minted under p copies
// (its claims mappings): with sub, client_id and azp, what a minted token
// can grow by beyond its fixed claims, each copy at most the source
// token's size (a proxy reading the answer sizes its buffer by it).
func (p *Policy) Copies() int { return len(p.claims) }

// NewPolicy checks s and returns its Policy.
func NewPolicy(s PolicySpec) (*Policy, error) {
	if s.Audience == "" {
		return nil, invalidOption("Audience", "empty; set the aud of the minted tokens (the upstream they are for)")
	}
	if s.TTL != 0 {
		if err := checkTTL(s.TTL); err != nil {
			return nil, &OptionError{Field: "TTL", Err: err}
		}
	}
	aud, _ := json.Marshal(s.Audience)
	p := &Policy{aud: aud, ttl: s.TTL, names: []string{"sub", "client_id", "azp"}}
	names := make([]string, 0, len(s.Claims))
	for name := range s.Claims {
		names = append(names, name)
	}
	sort.Strings(names)
	// The minted claims' names, each distinct from every other ignoring
	// case (as the verifier refuses a claims set): encoding/json, and
	// every Go program that decodes claims into a struct, matches names
	// ignoring case, the last one winning, so "Sub" beside "sub" would
	// be that program's subject.
	var seen jsonscan.Names
	for _, r := range reserved {
		seen.Add(r)
	}
	for _, name := range names {
		src := s.Claims[name]
		field := "Claims[" + name + "]"
		switch {
		case name == "" || src == "":
			return nil, invalidOption(field, "an empty claim name")
		case name == "sub" && src == "sub":
			// What every minted token does anyway (SPEC's own example
			// writes it): accepted, and nothing more.
			continue
		case isReserved(name):
			return nil, invalidOption(field, "%q is set by every minted token itself (%v): a mapping may not name it", name, reserved)
		case !utf8.ValidString(name):
			return nil, invalidOption(field, "the claim name is not UTF-8")
		case !seen.Add(name):
			return nil, invalidOption(field, "%q equals a claim every minted token sets (%v) or another mapped claim ignoring case: a program that matches names ignoring case would read one for the other", name, reserved)
		}
		n, _ := json.Marshal(name)
		p.claims = append(p.claims, mapping{name: append(n, ':'), source: src})
		p.names = append(p.names, src)
	}
	return p, nil
}

func isReserved(name string) bool {
	for _, r := range reserved {
		if r == name {
			return true
		}
	}
	return false
}

// Token is a minted token.
type Token struct {
	// JWT is the compact JWS.
	JWT string
	// Value is the header value the upstream receives: "Bearer <jwt>" for
	// Authorization, the JWT for another header. It is shared: do not
	// modify it.
	Value []string
	// Kid is the kid of the key that signed it; ExpiresAt its exp.
	Kid       string
	ExpiresAt time.Time
}

// Mint returns the token for the source token (its text, and its verified
// result src) under p at now: a cached one minted for the same token,
// source claims (an opaque token's answer may change), policy and keys
// while it is within 90 % of its life, else a new one. The
// new token has the header {"alg","kid","typ":"at+jwt"} and exactly the
// claims iss, sub (the source's, when present), aud (p's), iat (now), exp
// (now + ttl, never after the source's exp), jti (random), client_id (the
// source's client_id, else its azp, when present), and p's mapped claims
// present in the source. An error (ErrSign) is a fault: the caller must not
// let the request through without the token. A cache hit does not
// allocate. It is safe for concurrent use.
func (m *Minter) Mint(token string, src *verify.Result, p *Policy, now time.Time) (Token, error) {
	st := m.cur.Load()
	if st.cache != nil {
		if t, ok := st.cache.get(token, src.Claims, p, now); ok {
			m.hits.Add(1)
			return t, nil
		}
	}
	t, reuseUntil, err := m.mint(st.keys.signer, src, p, now)
	if err != nil {
		return Token{}, err
	}
	m.mints.Add(1)
	if st.cache != nil && reuseUntil > now.UnixNano() {
		st.cache.put(token, src.Claims, p, t, reuseUntil, now)
	}
	return t, nil
}

// mint signs a new token and returns it with the instant (Unix ns) until
// which it may be handed out again.
func (m *Minter) mint(k *signingKey, src *verify.Result, p *Policy, now time.Time) (Token, int64, error) {
	// One pass over the source's claims (verify's scanner: no decoding,
	// the values as they were signed).
	var buf [8]string
	var vals []string
	if len(p.names) > len(buf) {
		vals = make([]string, len(p.names))
	} else {
		vals = buf[:len(p.names)]
	}
	src.ClaimValues(p.names, vals)
	for i, v := range vals {
		if jsonscan.LoneSurrogate(v) {
			vals[i] = jsonscan.AsRead(v)
		}
	}
	ttl := p.ttl
	if ttl == 0 {
		ttl = m.opts.TTL
	}
	iat := now.Unix()
	exp := now.Add(ttl).Unix()
	if !src.ExpiresAt.IsZero() && src.ExpiresAt.Unix() < exp {
		exp = src.ExpiresAt.Unix() // never beyond the source token's life
	}
	var jti [16]byte
	if _, err := io.ReadFull(m.opts.Rand, jti[:]); err != nil {
		return Token{}, 0, fmt.Errorf("%w: jti: %w", ErrSign, err)
	}
	b := make([]byte, 0, 256+len(src.Claims))
	b = append(b, `{"iss":`...)
	b = append(b, m.iss...)
	if sub := notNull(vals[0]); sub != "" {
		b = append(append(b, `,"sub":`...), sub...)
	}
	b = append(append(b, `,"aud":`...), p.aud...)
	b = strconv.AppendInt(append(b, `,"iat":`...), iat, 10)
	b = strconv.AppendInt(append(b, `,"exp":`...), exp, 10)
	b = append(b, `,"jti":"`...)
	b = base64.RawURLEncoding.AppendEncode(b, jti[:])
	b = append(b, '"')
	// client_id, else azp; null is absent, as revocation reads it (a
	// null client_id must not hide the azp that names the client).
	if cid := cmp.Or(notNull(vals[1]), notNull(vals[2])); cid != "" {
		b = append(append(b, `,"client_id":`...), cid...)
	}
	for i, c := range p.claims {
		if v := vals[3+i]; v != "" {
			b = append(append(append(b, ','), c.name...), v...)
		}
	}
	b = append(b, '}')
	jwt, err := k.compact(m.opts.Rand, k.header, b)
	if err != nil {
		return Token{}, 0, err
	}
	value := jwt
	if m.bearer {
		value = "Bearer " + jwt
	}
	t := Token{JWT: jwt, Value: []string{value}, Kid: k.kid, ExpiresAt: time.Unix(exp, 0)}
	life := exp*int64(time.Second) - now.UnixNano()
	return t, now.UnixNano() + life/10*reuseTenths, nil
}

// compact returns the compact JWS of the base64url header and the claims
// (JSON), signed by k.
func (k *signingKey) compact(rnd io.Reader, header string, claims []byte) (string, error) {
	enc := base64.RawURLEncoding
	in := make([]byte, 0, len(header)+1+enc.EncodedLen(len(claims))+1+enc.EncodedLen(512))
	in = append(in, header...)
	in = append(in, '.')
	in = enc.AppendEncode(in, claims)
	sig, err := k.sign(rnd, in)
	if err != nil {
		return "", err
	}
	in = append(in, '.')
	in = enc.AppendEncode(in, sig)
	return string(in), nil
}

// Sign returns a compact JWS of claims (a JSON object) signed by the
// signing key, with the header {"alg","kid","typ":typ}: the RFC 9701
// introspection answer (typ token-introspection+jwt). It does not look at
// claims beyond checking that it is a JSON object.
func (m *Minter) Sign(typ string, claims []byte) (string, error) {
	if !json.Valid(claims) || len(bytes.TrimSpace(claims)) == 0 || bytes.TrimSpace(claims)[0] != '{' {
		return "", fmt.Errorf("%w: the claims are not a JSON object", ErrSign)
	}
	k := m.cur.Load().keys.signer
	h, _ := json.Marshal(struct {
		Alg string `json:"alg"`
		Kid string `json:"kid"`
		Typ string `json:"typ"`
	}{k.alg, k.kid, typ})
	return k.compact(m.opts.Rand, base64.RawURLEncoding.EncodeToString(h), claims)
}

// notNull returns the raw JSON value v, or "" when it is null.
func notNull(v string) string {
	if v == "null" {
		return ""
	}
	return v
}
