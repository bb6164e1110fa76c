package jwks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/MicahParks/jwkset"
	"github.com/golang-jwt/jwt/v5"

	"github.com/jwksverify/jwksverify/cache"
	"github.com/jwksverify/jwksverify/verify"
)

// Keyfunc hands a [Fetcher]'s keys to github.com/golang-jwt/jwt/v5. It
// implements keyfunc.Keyfunc of github.com/MicahParks/keyfunc/v3, so code
// written for keyfunc keeps its jwt.Parse(token, k.Keyfunc) calls and gets
// the fetcher's background refresh, bounded staleness and rate-limited,
// de-duplicated unknown-kid refresh. Get one with [Fetcher.Keyfunc].
//
// It applies the verifier's key rules ([verify.KeyFits]) before it returns a
// key: the token's alg must fit the key's kty and curve and the JWK's alg,
// use and key_ops (no HS256 with an RSA public key), symmetric keys come only
// from local configuration (a remote set never holds one), and a set past
// its staleness (Options.StaleFor) or not yet fetched gives no key at all.
// Its errors wrap the verify sentinels ([verify.ErrAlgNotAllowed],
// [verify.ErrUnknownKid], [verify.ErrMalformed], [verify.ErrKeysUnavailable]),
// so errors.Is and [verify.Class] read golang-jwt's error as they read the
// verifier's. Everything else is still golang-jwt's to check, as with
// keyfunc: pass jwt.WithValidMethods (the allowlist), jwt.WithIssuer,
// jwt.WithAudience and jwt.WithExpirationRequired to jwt.Parse. A token with
// a crit header is refused ([verify.ErrUnsupportedCrit]), as the verifier
// does. The non-standard per-key "issuer" member (Microsoft Entra) is applied
// to the token's iss ([verify.ErrWrongIssuer]); a {tenantid} key issuer needs
// the tid claim, which only jwt.MapClaims exposes: with other claims types
// such a key verifies nothing (it fails closed).
//
// A Keyfunc reads the fetcher's current snapshot on every call and holds no
// key store of its own; it is safe for concurrent use and lives as long as
// its fetcher (after [Fetcher.Close] or [Fetcher.Retire] it serves the last
// set until that goes stale, and unknown kids get no refresh). The zero value is not usable.
type Keyfunc struct {
	f *Fetcher
	// view is the jwkset form of the last set [Keyfunc.Storage] read,
	// rebuilt when the fetcher publishes another.
	view atomic.Pointer[storageView]
}

// Keyfunc returns a [Keyfunc] backed by f. It is cheap: call it once and keep
// the result (its Storage view is cached per Keyfunc).
func (f *Fetcher) Keyfunc() *Keyfunc { return &Keyfunc{f: f} }

// Keyfunc is a jwt.Keyfunc: it returns the key for token, or an error. A
// token with a kid gets that key; an unknown kid triggers the fetcher's
// unknown-kid refresh ([Fetcher.RefreshUnknownKid]), which this call waits
// for at most as long as the fetcher bounds it. A token without kid gets a
// jwt.VerificationKeySet of the keys that fit its alg, at most
// [verify.DefaultMaxKidless] of them, which golang-jwt tries in turn.
func (k *Keyfunc) Keyfunc(token *jwt.Token) (any, error) {
	return k.KeyfuncCtx(context.Background())(token)
}

// KeyfuncCtx returns [Keyfunc.Keyfunc] with ctx bounding the wait for an
// unknown-kid refresh (the refresh itself runs under the fetcher's lifetime
// and goes on when ctx ends). Use it as jwt.Parse(s, k.KeyfuncCtx(r.Context())).
func (k *Keyfunc) KeyfuncCtx(ctx context.Context) jwt.Keyfunc {
	return func(token *jwt.Token) (any, error) { return k.key(ctx, token) }
}

func (k *Keyfunc) key(ctx context.Context, token *jwt.Token) (any, error) {
	if token == nil {
		return nil, fmt.Errorf("jwks: %w: no token", verify.ErrMalformed)
	}
	alg, ok := token.Header["alg"].(string)
	if !ok {
		return nil, fmt.Errorf("jwks: %w: header alg is missing or not a string", verify.ErrMalformed)
	}
	if _, present := token.Header["crit"]; present {
		// As the verifier: no crit extension is understood (RFC 7515 §4.1.11).
		return nil, fmt.Errorf("jwks: %w: no crit extension is understood", verify.ErrUnsupportedCrit)
	}
	var kid string
	if v, present := token.Header["kid"]; present {
		if kid, ok = v.(string); !ok {
			return nil, fmt.Errorf("jwks: %w: header kid is not a string", verify.ErrMalformed)
		}
	}
	set, err := k.usable()
	if err != nil {
		return nil, err
	}
	iss, tid := tokenIssuer(token)
	if kid == "" {
		// As the verifier: keys without kid are candidates, the keys that fit
		// alg, in set order, bounded.
		var ks jwt.VerificationKeySet
		for _, key := range set.Keys() {
			if len(ks.Keys) == verify.DefaultMaxKidless {
				break
			}
			if verify.KeyFits(key, alg) == nil && verify.KeyIssuerFits(key, iss, tid) == nil {
				ks.Keys = append(ks.Keys, key.Public)
			}
		}
		if len(ks.Keys) == 0 {
			return nil, fmt.Errorf("jwks: %w: token has no kid and no key fits %q", verify.ErrAlgNotAllowed, alg)
		}
		return ks, nil
	}
	key, ok := set.Lookup(kid)
	if !ok {
		// RefreshUnknownKid spends the fetcher's budget, remembers absent
		// kids and shares the flight; it never waits for a budget.
		rerr := k.f.RefreshUnknownKid(ctx, kid)
		if set, err = k.usable(); err != nil {
			return nil, err
		}
		if key, ok = set.Lookup(kid); !ok {
			if rerr != nil && !errors.Is(rerr, verify.ErrKidAbsent) {
				return nil, fmt.Errorf("jwks: %w: kid %q (%w: %w)", verify.ErrUnknownKid, kid, verify.ErrKidNotRefreshed, rerr)
			}
			if rerr != nil {
				return nil, fmt.Errorf("jwks: %w: kid %q (%w)", verify.ErrUnknownKid, kid, rerr)
			}
			return nil, fmt.Errorf("jwks: %w: kid %q (not found after a refresh)", verify.ErrUnknownKid, kid)
		}
	}
	if err := verify.KeyFits(key, alg); err != nil {
		return nil, fmt.Errorf("jwks: %w", err)
	}
	if err := verify.KeyIssuerFits(key, iss, tid); err != nil {
		return nil, fmt.Errorf("jwks: %w", err)
	}
	return key.Public, nil
}

// tokenIssuer reads the token's iss and, from map claims, its tid. A claims
// type without tid gives "", which no {tenantid} key issuer matches: such a
// key then verifies nothing (fails closed).
func tokenIssuer(token *jwt.Token) (iss, tid string) {
	if token.Claims == nil {
		return "", ""
	}
	iss, _ = token.Claims.GetIssuer()
	if m, ok := token.Claims.(jwt.MapClaims); ok {
		tid, _ = m["tid"].(string)
	}
	return iss, tid
}

// usable returns the fetcher's current set, or an error wrapping
// [verify.ErrKeysUnavailable] when there is none or it is past its staleness.
func (k *Keyfunc) usable() (*cache.Set, error) {
	set := k.f.Keys().Load()
	if !set.Usable(k.f.opts.Now()) {
		return nil, fmt.Errorf("jwks: %w: no usable key set for %s", verify.ErrKeysUnavailable, k.f.source)
	}
	return set, nil
}

// VerificationKeySet returns every key of the current set that fits at least
// one of golang-jwt's registered algorithms, for code that builds its own
// jwt.Keyfunc. It has no token, so no alg to fit: prefer [Keyfunc.Keyfunc].
// Local symmetric keys are included, as they are to the verifier; keys bound
// to an issuer by a per-key "issuer" member are left out (there is no token
// to match it against). With no token, the kid and a JWK's alg pin do not
// narrow the set either, as with keyfunc's own VerificationKeySet. It never
// fetches; ctx is unused. It fails as Keyfunc does on an unusable set.
func (k *Keyfunc) VerificationKeySet(ctx context.Context) (jwt.VerificationKeySet, error) {
	set, err := k.usable()
	if err != nil {
		return jwt.VerificationKeySet{}, err
	}
	algs := jwt.GetAlgorithms()
	var ks jwt.VerificationKeySet
	for _, key := range set.Keys() {
		if key.Issuer == "" && slices.ContainsFunc(algs, func(alg string) bool { return verify.KeyFits(key, alg) == nil }) {
			ks.Keys = append(ks.Keys, key.Public)
		}
	}
	return ks, nil
}

// Storage returns a read-only jwkset.Storage view of the fetcher's current
// set: the Fetcher is the one key store, and a second, writable one would
// drift from what it publishes. Reads (KeyRead, KeyReadAll, JSON…, Marshal…)
// answer from the set published at the time of the call and never fetch (an
// unknown kid is jwkset.ErrKeyNotFound; only [Keyfunc.Keyfunc] refreshes);
// they fail, wrapping [verify.ErrKeysUnavailable], when the set is unusable.
// The view holds the public keys only: local symmetric secrets are left out,
// so no JSON form ever carries one. Writes (KeyWrite, KeyDelete,
// KeyReplaceAll) fail with an error wrapping errors.ErrUnsupported; keys
// from local configuration belong in the fetcher's options instead.
func (k *Keyfunc) Storage() jwkset.Storage { return storage{k} }

// storageView is the jwkset form of one published set.
type storageView struct {
	set *cache.Set
	mem *jwkset.MemoryJWKSet
}

// snapshot returns the jwkset form of the current usable set, built once per
// published set.
func (k *Keyfunc) snapshot() (*jwkset.MemoryJWKSet, error) {
	set, err := k.usable()
	if err != nil {
		return nil, err
	}
	if v := k.view.Load(); v != nil && v.set == set {
		return v.mem, nil
	}
	mem := jwkset.NewMemoryStorage()
	for _, key := range set.Keys() {
		if key.Kty == "oct" {
			continue
		}
		ops := make([]jwkset.KEYOPS, len(key.KeyOps))
		for i, op := range key.KeyOps {
			ops[i] = jwkset.KEYOPS(op)
		}
		jwk, err := jwkset.NewJWKFromKey(key.Public, jwkset.JWKOptions{Metadata: jwkset.JWKMetadataOptions{
			ALG: jwkset.ALG(key.Alg), KID: key.Kid, USE: jwkset.USE(key.Use), KEYOPS: ops,
		}})
		if err != nil {
			// Not for a key that jwks parsed: every key of a set came through
			// jwkset or NewKey's checks. Refuse rather than show a partial set.
			return nil, fmt.Errorf("jwks: storage view of kid %q: %w", key.Kid, err)
		}
		if err := mem.KeyWrite(context.Background(), jwk); err != nil {
			return nil, fmt.Errorf("jwks: storage view of kid %q: %w", key.Kid, err)
		}
	}
	k.view.Store(&storageView{set: set, mem: mem})
	return mem, nil
}

// storage is the read-only jwkset.Storage of [Keyfunc.Storage].
type storage struct{ k *Keyfunc }

func errReadOnly(op string) error {
	return fmt.Errorf("jwks: %s: %w: the Keyfunc's storage is a read-only view of the fetcher's key set", op, errors.ErrUnsupported)
}

func (s storage) KeyDelete(context.Context, string) (bool, error) {
	return false, errReadOnly("KeyDelete")
}

func (s storage) KeyReplaceAll(context.Context, []jwkset.JWK) error {
	return errReadOnly("KeyReplaceAll")
}

func (s storage) KeyWrite(context.Context, jwkset.JWK) error { return errReadOnly("KeyWrite") }

// read runs fn on the jwkset form of the current usable set.
func read[T any](s storage, fn func(*jwkset.MemoryJWKSet) (T, error)) (T, error) {
	mem, err := s.k.snapshot()
	if err != nil {
		var zero T
		return zero, err
	}
	return fn(mem)
}

func (s storage) KeyRead(ctx context.Context, kid string) (jwkset.JWK, error) {
	return read(s, func(m *jwkset.MemoryJWKSet) (jwkset.JWK, error) { return m.KeyRead(ctx, kid) })
}

func (s storage) KeyReadAll(ctx context.Context) ([]jwkset.JWK, error) {
	return read(s, func(m *jwkset.MemoryJWKSet) ([]jwkset.JWK, error) { return m.KeyReadAll(ctx) })
}

func (s storage) JSON(ctx context.Context) (json.RawMessage, error) {
	return read(s, func(m *jwkset.MemoryJWKSet) (json.RawMessage, error) { return m.JSON(ctx) })
}

func (s storage) JSONPublic(ctx context.Context) (json.RawMessage, error) {
	return read(s, func(m *jwkset.MemoryJWKSet) (json.RawMessage, error) { return m.JSONPublic(ctx) })
}

func (s storage) JSONPrivate(ctx context.Context) (json.RawMessage, error) {
	return read(s, func(m *jwkset.MemoryJWKSet) (json.RawMessage, error) { return m.JSONPrivate(ctx) })
}

func (s storage) JSONWithOptions(ctx context.Context, mo jwkset.JWKMarshalOptions, vo jwkset.JWKValidateOptions) (json.RawMessage, error) {
	return read(s, func(m *jwkset.MemoryJWKSet) (json.RawMessage, error) { return m.JSONWithOptions(ctx, mo, vo) })
}

func (s storage) Marshal(ctx context.Context) (jwkset.JWKSMarshal, error) {
	return read(s, func(m *jwkset.MemoryJWKSet) (jwkset.JWKSMarshal, error) { return m.Marshal(ctx) })
}

func (s storage) MarshalWithOptions(ctx context.Context, mo jwkset.JWKMarshalOptions, vo jwkset.JWKValidateOptions) (jwkset.JWKSMarshal, error) {
	return read(s, func(m *jwkset.MemoryJWKSet) (jwkset.JWKSMarshal, error) { return m.MarshalWithOptions(ctx, mo, vo) })
}
