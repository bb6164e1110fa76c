package jwks

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/spiffe/go-spiffe/v2/bundle/spiffebundle"
	"github.com/spiffe/go-spiffe/v2/spiffeid"

	"github.com/jwksverify/jwksverify/cache"
)

// UseJWTSVID is the [cache.Key] Use of a key from a SPIFFE trust bundle's
// jwt-svid entries. The verifier accepts such a key only for the trust
// domain whose bundle it came from.
const UseJWTSVID = "jwt-svid"

// document is a parsed JWKS or SPIFFE bundle.
type document struct {
	keys    []*cache.Key
	skipped []cache.Skipped
	extra   int           // keys beyond MaxKeys (JWKS only)
	hint    time.Duration // the bundle's spiffe_refresh_hint; 0 when absent
}

// parseDoc parses a fetched or read document as the options say: a JWKS
// (per-key tolerant, [Parse]) or, with TrustDomain, a SPIFFE bundle.
func (f *Fetcher) parseDoc(data []byte, local bool, prev *cache.Set) (document, error) {
	if f.opts.TrustDomain != "" {
		return parseBundle(data, f.opts.TrustDomain, f.opts.MaxKeys, prev)
	}
	keys, skipped, extra, err := parse(data, ParseOptions{Local: local, MaxKeys: f.opts.MaxKeys, Previous: prev, static: f.staticKid})
	return document{keys: keys, skipped: skipped, extra: extra}, err
}

// parseBundle reads a SPIFFE trust bundle of trust domain td with go-spiffe
// (untrusted input, bounded in depth and keys): its jwt-svid authorities
// become keys with Use [UseJWTSVID], in kid order; an authority that
// cache.NewKey refuses (RSA under 2048 bits, an unsupported curve) is
// skipped and reported. A bundle go-spiffe refuses is [ErrMalformed].
func parseBundle(data []byte, td string, maxKeys int, prev *cache.Set) (document, error) {
	if err := checkDepth(data, maxJSONDepth); err != nil {
		return document{}, err
	}
	domain, err := spiffeid.TrustDomainFromString(td)
	if err != nil {
		return document{}, fmt.Errorf("%w: trust domain: %w", ErrInvalidOptions, err)
	}
	if where, name, dup := bundleCollision(data); dup {
		return document{}, fmt.Errorf("%w: SPIFFE bundle: %s member %q appears twice (names compared ignoring case)", ErrMalformed, where, clip(name))
	}
	b, err := spiffebundle.Parse(domain, data)
	if err != nil {
		return document{}, fmt.Errorf("%w: SPIFFE bundle: %w", ErrMalformed, err)
	}
	auth := b.JWTAuthorities()
	if maxKeys <= 0 {
		maxKeys = DefaultMaxKeys
	}
	if len(auth) > maxKeys {
		return document{}, fmt.Errorf("%w: %d jwt-svid keys (limit %d)", ErrTooLarge, len(auth), maxKeys)
	}
	kids := make([]string, 0, len(auth))
	for kid := range auth {
		kids = append(kids, kid)
	}
	slices.Sort(kids)
	var doc document
	for i, kid := range kids {
		k, err := cache.NewKey(auth[kid], cache.KeyMeta{Kid: kid, Use: UseJWTSVID})
		if err != nil {
			doc.skipped = append(doc.skipped, cache.Skipped{Index: i, Kid: clip(kid), Reason: clip(err.Error())})
			continue
		}
		doc.keys = append(doc.keys, reuse(prev, k))
	}
	if h, ok := b.RefreshHint(); ok && h > 0 {
		doc.hint = h
	}
	return doc, nil
}

// bundleCollision reports a member name that repeats, compared ignoring
// case, in the bundle or in one of its keys, and where ("bundle", "key"):
// go-spiffe (encoding/json into go-jose's structs) reads the last of
// "use": "x509-svid" and "USE": "jwt-svid", or of "kid" and "KID", where
// a reader matching names exactly reads the first, so the bundle is
// refused whole, as [Parse] skips such a key of a JWKS. A document that
// does not decode is left to go-spiffe to refuse.
func bundleCollision(data []byte) (where, name string, dup bool) {
	if name, dup := collidingMember(data); dup {
		return "bundle", name, true
	}
	var doc struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if json.Unmarshal(data, &doc) != nil {
		return "", "", false
	}
	for _, raw := range doc.Keys {
		if name, dup := collidingMember(raw); dup {
			return "key", name, true
		}
	}
	return "", "", false
}
